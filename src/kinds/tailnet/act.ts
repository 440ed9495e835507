/**
 * The Tailnet's only Headscale write: `PUT /api/v1/policy` of the rendered policy (decide.ts guards
 * when). A failed write of one policy is retried with backoff (30 s doubling to 10 min) rather than
 * on every resync: the backoff lives in memory per connection and policy hash, so a restart simply
 * retries at once. The Event for an overwritten drift is best effort. Before the PUT the sync re-plans on a
 * fresh read of the live policy (rereadPolicy, supersededWrite; docs/architecture.md "Policy writes from
 * several replicas"), so two replicas do not PUT the same render twice nor an older render over a newer one.
 */
import { type ConditionInput, cond } from "../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../conditions/reasons.js";
import { asHeadscaleError } from "../../headscale/capabilities.js";
import type { HeadscaleView } from "../../headscale/view.js";
import type { K8sObject } from "../../k8s/objects.js";
import { prettyPolicyText } from "../../policy/render.js";
import type { EventRecorder } from "../types.js";
import type { PendingFailure, PolicyWrite, TailnetDecision, WriteOutcome } from "./decide.js";

const BACKOFF_FIRST_MS = 30_000;
const BACKOFF_MAX_MS = 10 * 60_000;

interface FailureMemo {
  failures: number;
  retryAt: number;
  condition: ConditionInput;
}

const failuresByView = new WeakMap<HeadscaleView, Map<string, FailureMemo>>();
const memoKey = (tailnet: string, hash: string) => `${tailnet}\u0000${hash}`;

function memoOf(view: HeadscaleView): Map<string, FailureMemo> {
  let memo = failuresByView.get(view);
  if (!memo) {
    memo = new Map();
    failuresByView.set(view, memo);
  }
  return memo;
}

/** A failed write of this policy whose backoff has not elapsed yet (decide repeats its condition). */
export function pendingFailure(view: HeadscaleView, tailnet: string, hash: string): PendingFailure | undefined {
  const m = memoOf(view).get(memoKey(tailnet, hash));
  return m ? { condition: m.condition, retryAt: new Date(m.retryAt) } : undefined;
}

/** Remembers a failed write; the next attempt of the same policy waits 30 s · 2^(failures-1), at most 10 min. */
export function recordFailure(
  view: HeadscaleView,
  tailnet: string,
  hash: string,
  condition: ConditionInput,
  now: Date,
): number {
  const memo = memoOf(view);
  const key = memoKey(tailnet, hash);
  // Another hash of the same Tailnet no longer matters: only the current render is retried.
  for (const k of memo.keys()) if (k.startsWith(`${tailnet}\u0000`) && k !== key) memo.delete(k);
  const failures = (memo.get(key)?.failures ?? 0) + 1;
  const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** (failures - 1));
  memo.set(key, { failures, retryAt: now.getTime() + delay, condition });
  return Math.ceil(delay / 1000);
}

export function clearFailures(view: HeadscaleView, tailnet: string): void {
  const memo = memoOf(view);
  for (const k of memo.keys()) if (k.startsWith(`${tailnet}\u0000`)) memo.delete(k);
}

/**
 * PUT /api/v1/policy; the cached live policy is dropped afterwards so the next sync sees what is there. A
 * failed PUT is followed by one fresh GET: 0.29 may already serve the refused text from memory, or may have
 * stored it before failing (hscontrol/grpcv1.go SetPolicy), so decide.ts reports what the read-back shows
 * instead of assuming the previous policy stays. File mode is answered before anything changes: no read.
 */
export async function writePolicy(view: HeadscaleView, write: PolicyWrite): Promise<WriteOutcome> {
  try {
    await view.client.policy.put(prettyPolicyText(write.policy));
    view.invalidate("policy");
    return { ok: true };
  } catch (caught) {
    const error = asHeadscaleError(caught, "PUT /api/v1/policy");
    view.invalidate("policy");
    if (error.classification === "policyFileMode") return { ok: false, error };
    return { ok: false, error, readback: await view.policy() };
  }
}

/** How soon a sync whose planned write was superseded (the live policy moved meanwhile) plans again. */
export const SUPERSEDED_RESYNC_SECONDS = 5;

/**
 * The live policy read fresh (the view's cache dropped first) right before a PUT. Two replicas share no
 * memory and Headscale v1 has no compare-and-swap, so the write is guarded by what Headscale holds now: the
 * caller re-plans with this read and writes only if the live policy is still the one it planned against.
 */
export async function rereadPolicy(view: HeadscaleView) {
  view.invalidate("policy");
  return view.policy();
}

/**
 * The write planned against `base` is not sent: the live policy moved to `now` (another replica wrote a newer
 * render, or an administrator edited it) between the observation and the write. The next sync plans again
 * from what is live then.
 */
export function supersededWrite(decision: TailnetDecision, base: string | null, now: string | null): TailnetDecision {
  const { write: _dropped, ...rest } = decision;
  const name = (h: string | null) => (h === null ? "no policy" : h);
  const applied = cond(
    C.PolicyApplied,
    "Unknown",
    R.ApplyFailed,
    `not written: the live policy changed from ${name(base)} to ${name(now)} while this sync was planning (another operator replica or an administrator wrote it); the next sync plans again from it`,
  );
  return {
    ...rest,
    conditions: rest.conditions.map((c) => (c.type === C.PolicyApplied ? applied : c)),
    resyncAfterSeconds: SUPERSEDED_RESYNC_SECONDS,
  };
}

/** Event PolicyDriftOverwritten; never fails the sync. */
export async function recordDrift(events: EventRecorder, parent: K8sObject, write: PolicyWrite): Promise<void> {
  if (!write.drift) return;
  const live = write.drift.live === "none" ? "no policy" : write.drift.live;
  try {
    await events.record({
      regarding: parent,
      reason: "PolicyDriftOverwritten",
      type: "Warning",
      message: `the live Headscale policy (${live}) was changed outside the operator (last applied ${write.drift.lastApplied}); rewrote it with the rendered policy ${write.hash}`,
    });
  } catch {
    // best effort: Events are informational
  }
}
