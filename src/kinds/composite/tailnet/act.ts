/**
 * The Tailnet's only Headscale write: `PUT /api/v1/policy` of the planned render, through the view.
 *
 * Before the PUT the live policy is read again (view.freshPolicy) and the plan made again with it
 * (docs/architecture.md "Policy writes from several replicas"): another replica may have written this very
 * render already (then it is InSync, no PUT), or a newer one (then this sync's inputs are older: no PUT of a
 * stale render over it). Two replicas share no memory and Headscale v1 has no compare-and-swap, so the
 * write is guarded by what Headscale holds right now.
 *
 * A failed write of one policy is retried with backoff (30 s doubling to 10 min) rather than on every
 * resync: the backoff is soft state of the connection (soft-state.ts writeBackoff), so a restart simply
 * retries at once. A failed PUT is followed by one fresh read: 0.29 may already serve the refused text from
 * memory, or may have stored it before failing (hscontrol/grpcv1.go SetPolicy), so decide reports what the
 * read-back shows. File mode is answered before anything changes: no read. The Event for an overwritten
 * drift is best effort; drift is judged from the stored policy's own marker (plan.ts policyDrift).
 */

import { toK8sTime } from "../../../conditions/condition.js";
import type { Outcome } from "../../../headscale/capabilities.js";
import type { Obs } from "../../../headscale/errors.js";
import { HeadscaleError } from "../../../headscale/errors.js";
import type { HsPolicy } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { EventRecorder, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { operatorWrittenHash } from "../../../policy/marker.js";
import { type TailnetObservation, tailnetView } from "./observe.js";
import { type PolicyWrite, planTailnet, type TailnetPlan } from "./plan.js";
import { expirePrefix, findOwnApiKey, listedPrefix, type RotationOutcome, type RotationPlan } from "./rotation.js";
import { candidateText, liveOwnLine, liveShared, recompose } from "./shared.js";
import { softStateOf } from "./soft-state.js";
import type { TailnetSpec } from "./spec.js";
import { liveHash, policyRefused, writeStage } from "./write.js";

/**
 * A failed write, and the policy read back right after it (`readback`, from GET /api/v1/policy; null = the
 * database stores none; absent when not read, e.g. in file mode).
 */
export type WriteOutcome = { ok: true } | { ok: false; error: HeadscaleError; readback?: Outcome<HsPolicy | null> };

export interface TailnetOutcome {
  /** The API key renewal step taken (plan.rotation), if any. */
  rotation?: RotationOutcome;
  /** Only when a write was planned: the live policy read again just before the PUT, and the plan made with it. */
  replan?: { policy: Obs<HsPolicy | null>; plan: TailnetPlan; render?: TailnetObservation["render"] };
  /** The re-planned write was not sent: the live policy moved from `from` to `to` since the observation. */
  superseded?: { from: string | null; to: string | null };
  /** The sync gave up: every attempt's read-back showed another writer's policy in place of this one (WriteContended). */
  contended?: { attempts: number; write: PolicyWrite };
  /** Attempts that another writer undid before the one that held (read, merge, write, read back). */
  attempts?: number;
  /** The PUT that was sent; after a failure, the seconds until its backoff elapses. */
  written?: { write: PolicyWrite; result: WriteOutcome; retryAfterSeconds?: number };
}

const BACKOFF_FIRST_MS = 30_000;
const BACKOFF_MAX_MS = 10 * 60_000;

/** How soon a sync whose planned write was superseded (the live policy moved meanwhile) plans again. */
export const SUPERSEDED_RESYNC_SECONDS = 5;
/** After a write into a policy other clusters share: look again this soon (decide.ts verifiedSoon). */
export const VERIFY_SHARED_WRITE_SECONDS = 5;

export async function actTailnet(
  req: HookRequest,
  _spec: TailnetSpec,
  observed: TailnetObservation,
  plan: TailnetPlan,
  deps: HookDeps,
): Promise<TailnetOutcome> {
  const view = tailnetView(observed.inputs, deps);
  if (!view || !observed.hs) return {};
  const outcome = await actPolicy(req, plan, observed, view, deps);
  const rotation = plan.rotation ? await actRotation(plan.rotation, observed, view, deps) : undefined;
  return rotation ? { ...outcome, rotation } : outcome;
}

/** Attempts of one sync's read, merge, write, read back before it gives up (WriteContended). */
export const WRITE_ATTEMPTS = 4;
/** The first wait between attempts; doubled each time, jittered ±50 % so two racing operators part ways. */
const CONTENTION_WAIT_MS = 150;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * Read, merge, write, read back (policy/sections.ts): the live policy is read again, this cluster's section is
 * merged into it (every other line kept as stored), the plan is made again with it, and after the PUT the
 * policy is read back. When the read-back does not hold this cluster's section as written, another writer
 * replaced the policy in between (Headscale has no compare-and-swap): merged again, after a jittered wait, at
 * most WRITE_ATTEMPTS times; then WriteContended, and the next sync tries again.
 */
async function actPolicy(
  req: HookRequest,
  plan: TailnetPlan,
  observed: TailnetObservation,
  view: HeadscaleView,
  deps: HookDeps,
): Promise<TailnetOutcome> {
  if (!observed.hs || !plan.write) return {};
  const name = observed.inputs.name;
  const rendered = observed.render.ok ? observed.render.candidate : undefined;
  const ownId = rendered?.shared?.own.id;
  const base = liveHash(observed.hs) ?? null;
  const baseOwn =
    ownId === undefined ? "" : liveOwnLine(observed.hs.policy.ok ? observed.hs.policy.value : null, ownId);
  let outcome: TailnetOutcome = {};
  for (let attempt = 1; ; attempt++) {
    const policy = await view.freshPolicy();
    const render = policy.ok && rendered ? recompose(rendered, policy.value) : observed.render;
    const fresh: TailnetObservation = { ...observed, hs: { ...observed.hs, policy }, render };
    const replanned = planTailnet({
      parent: req.parent,
      observed: fresh,
      operatorNamespace: deps.config.operatorNamespace,
      now: deps.now(),
    });
    outcome = { replan: { policy, plan: replanned, render }, ...(attempt > 1 ? { attempts: attempt - 1 } : {}) };
    const write = replanned.write;
    if (!write) return outcome;
    if (attempt === 1 && superseded(fresh, base, baseOwn, ownId)) {
      const moved = policy.ok ? (liveHash(fresh.hs) ?? null) : base;
      return { ...outcome, superseded: { from: base, to: moved } };
    }
    const result = await putPolicy(view, write);
    if (!result.ok) return failed(outcome, view, write, result, deps, name);
    const back = await view.freshPolicy();
    // a read-back that failed proves nothing either way: the PUT was accepted, and the next sync reads again
    if (!back.ok || ownId === undefined || holdsWrite(back.value, write, ownId)) {
      softStateOf(view).writeBackoff.delete(name);
      deps.log.info({ tailnet: name, hash: write.hash, drift: !!write.drift, attempt }, "Headscale policy written");
      await recordDrift(deps.events, req.parent, write);
      return { ...outcome, written: { write, result } };
    }
    // another writer replaced the policy between our read and our read-back
    if (attempt >= WRITE_ATTEMPTS) {
      deps.metrics.policyWriteRetries.inc({ tailnet: name, result: "gave_up" });
      deps.log.warn({ tailnet: name, hash: write.hash, attempts: attempt }, "Headscale policy write contended");
      return { replan: outcome.replan, contended: { attempts: attempt, write } };
    }
    deps.metrics.policyWriteRetries.inc({ tailnet: name, result: "retried" });
    await sleep(CONTENTION_WAIT_MS * 2 ** (attempt - 1) * (0.5 + Math.random()));
  }
}

/**
 * The live policy moved since the observation in a way this sync must not write over: this cluster's own
 * section changed (another replica of this operator wrote a possibly newer render), or — without sections —
 * anything changed. Other clusters' sections moving is what the merge is for.
 */
function superseded(
  fresh: TailnetObservation,
  base: string | null,
  baseOwn: string,
  ownId: string | undefined,
): boolean {
  const policy = fresh.hs?.policy;
  if (!policy?.ok) return false;
  if (ownId === undefined) return (liveHash(fresh.hs) ?? null) !== base;
  if (liveOwnLine(policy.value, ownId) !== baseOwn) return true;
  // a policy without sections (an older operator, an administrator) replaced the observed one: plan again
  return !liveShared(policy.value)?.sections.length && (liveHash(fresh.hs) ?? null) !== base;
}

/** The read-back holds what was written: this cluster's section as written (another writer may have added theirs). */
function holdsWrite(back: HsPolicy | null, write: PolicyWrite, ownId: string): boolean {
  if (!back) return false;
  return liveOwnLine(back, ownId) === (write.ownLine ?? "") && operatorWrittenHash(back.policy) !== undefined;
}

function failed(
  outcome: TailnetOutcome,
  view: HeadscaleView,
  write: PolicyWrite,
  result: Extract<WriteOutcome, { ok: false }>,
  deps: HookDeps,
  name: string,
): TailnetOutcome {
  const e = result.error;
  deps.metrics.policyApplyErrors.inc({ tailnet: name, reason: policyRefused(e) ? "rejected" : "transport" });
  deps.log.warn({ tailnet: name, hash: write.hash, error: e.message }, "Headscale policy write failed");
  const retryAfterSeconds = recordFailure(view, name, write.hash, result, deps.now());
  return { ...outcome, written: { write, result, retryAfterSeconds } };
}

/**
 * One renewal step (rotation.ts). Create: POST /api/v1/apikey with the key in use, then an authenticated
 * GET /api/v1/apikey with the new key that must list it; a new key that does not work is expired again with
 * the old one and never published. Expire: POST /api/v1/apikey/expire of the replaced key, with the new one.
 * Logs and metrics carry prefixes only, never a key. Each step's Event is the ApiKeyRotation condition's
 * change (Renewed, CreateFailed, VerifyFailed, OldKeyExpired, ExpireFailed: src/pipeline/condition-events.ts),
 * whose message says the same.
 */
async function actRotation(
  plan: RotationPlan,
  observed: TailnetObservation,
  view: HeadscaleView,
  deps: HookDeps,
): Promise<RotationOutcome | undefined> {
  const tailnet = observed.inputs.name;
  const conn = observed.inputs.connection;
  if (!conn.ok) return undefined;
  const step = (s: "create" | "verify" | "expire", ok: boolean) =>
    deps.metrics.apiKeyRotationSteps.inc({ tailnet, step: s, result: ok ? "ok" : "failed" });

  if (plan.kind === "expire") {
    const expired = await view.expireApiKey(expirePrefix(plan.prefix));
    // Gone already (deleted by hand): nothing is left to expire.
    const alreadyGone = !expired.ok && expired.error.classification === "notFound";
    step("expire", expired.ok || alreadyGone);
    if (!expired.ok && !alreadyGone) {
      deps.log.warn({ tailnet, prefix: plan.prefix, error: expired.error.message }, "expiring the old API key failed");
      return { step: "expireFailed", prefix: plan.prefix, error: expired.error };
    }
    deps.log.info({ tailnet, prefix: plan.prefix }, "expired the old API key");
    return { step: "expired", prefix: plan.prefix, alreadyGone };
  }

  const created = await view.createApiKey(plan.expiration);
  step("create", created.ok);
  if (!created.ok) {
    deps.log.warn({ tailnet, error: created.error.message }, "creating a new API key failed");
    return { step: "createFailed", error: created.error };
  }
  const apiKey = created.value;
  const prefix = listedPrefix(apiKey);
  const listed = await deps.views.view({ ...conn.conn, apiKey }).apiKeys();
  const works = listed.ok && !!findOwnApiKey(listed.value, apiKey);
  step("verify", works);
  if (!works) {
    const error = listed.ok
      ? new HeadscaleError({
          kind: "decode",
          operation: "GET /api/v1/apikey",
          detail: "the new key is not listed",
          classification: "other",
        })
      : listed.error;
    const cleanup = await view.expireApiKey(expirePrefix(prefix));
    deps.log.warn({ tailnet, prefix, error: error.message, cleanedUp: cleanup.ok }, "the new API key did not work");
    return { step: "verifyFailed", prefix, error, cleanedUp: cleanup.ok };
  }
  const expiresAt = toK8sTime(plan.expiration);
  const rotatedAt = toK8sTime(deps.now());
  deps.log.info({ tailnet, prefix, replaces: plan.replaces, expiresAt }, "created and verified a new API key");
  return { step: "created", apiKey, prefix, expiresAt, rotatedAt, replaces: plan.replaces };
}

/** PUT /api/v1/policy; after a failure (but file mode), the policy read back fresh. */
async function putPolicy(view: HeadscaleView, write: PolicyWrite): Promise<WriteOutcome> {
  // marked as ours, so that the stored text itself tells later syncs whether it changed (policy/marker.ts)
  const put = await view.putPolicy(candidateText(write.hash, write.policy, write.meta));
  if (put.ok) return { ok: true };
  if (writeStage(put.error) === "fileMode") return { ok: false, error: put.error };
  return { ok: false, error: put.error, readback: await view.freshPolicy() };
}

/**
 * Remembers a failed write in the connection's soft state; the next attempt of the same policy waits
 * 30 s · 2^(failures-1), at most 10 min. Another hash of the same Tailnet no longer matters: only the current
 * render is retried.
 */
export function recordFailure(
  view: HeadscaleView,
  tailnet: string,
  hash: string,
  failed: Extract<WriteOutcome, { ok: false }>,
  now: Date,
): number {
  const previous = softStateOf(view).writeBackoff.get(tailnet);
  const failures = (previous?.hash === hash ? previous.failures : 0) + 1;
  const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** (failures - 1));
  softStateOf(view).writeBackoff.set(tailnet, {
    tailnet,
    hash,
    failures,
    retryAt: now.getTime() + delay,
    error: failed.error,
    ...(failed.readback ? { readback: failed.readback } : {}),
  });
  return Math.ceil(delay / 1000);
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
