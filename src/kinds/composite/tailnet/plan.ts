/**
 * The Tailnet's plan (pure): at most one policy write, with the guards that allow it, and what the checks
 * found when there is none (PolicyFinding; decide says it in PolicyApplied, applied.ts). Write rules (api.md):
 * only in Apply mode, only in database mode, only with unique user names, never an empty or refused render,
 * only after policy/check accepted it, never over a live policy the operator did not write when that drops
 * anything (adoption.ts), never while a failed write of the same render backs off, and only when the rendered
 * hash differs from the live one.
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { TailnetReason as R } from "../../../conditions/tables/tailnet.js";
import type { HeadscaleError } from "../../../headscale/errors.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { previousStatus } from "../../../pipeline/status.js";
import { operatorWrittenHash } from "../../../policy/marker.js";
import type { GeneratedCounts } from "../../../policy/merge.js";
import { lostOverLiveText } from "./adoption.js";
import type { PolicyCandidate } from "./compose.js";
import { duplicateUsers, headscaleCompatible, policyMode, policyRendered } from "./conditions.js";
import type { TailnetInputs } from "./inputs.js";
import type { LeftOut } from "./left-out.js";
import type { PendingFailure, TailnetObservation } from "./observe.js";
import type { HeadscaleObservations } from "./observed.js";
import { planRotation, type RotationPlan, type RotationStatus } from "./rotation.js";
import { candidateText, liveHolds, liveShared } from "./shared.js";
import { liveHash } from "./write.js";

export interface PolicyStatus {
  renderedHash?: string;
  appliedHash?: string;
  appliedAt?: string;
  generated?: GeneratedCounts;
  /** What the render left out of the policy, per object (left-out.ts); each object's sync reads its entry. */
  leftOut?: LeftOut[];
}

export type TailnetStatusFields = {
  policy?: PolicyStatus;
  userConflicts?: number;
  /** Kept legacy tags of its objects (inputs.ts), only when there are any. */
  keptLegacyTags?: string[];
  /** Only while spec.headscale.apiKeyRotation is enabled. */
  apiKeyRotation?: RotationStatus;
};

export interface PolicyWrite {
  hash: string;
  policy: Record<string, unknown>;
  /** The base and cluster section lines written between the marker and the body (policy/sections.ts). */
  meta?: string;
  /** This cluster's section line among them ("" when it writes none). */
  ownLine?: string;
  /** The live policy changed behind our back (neither the last applied nor the rendered one). */
  drift?: { live: string; lastApplied: string };
}

/** What plan (and decide) read: the parent, the observation, where the children live, the clock. */
export interface TailnetPlanInput {
  parent: K8sObject;
  observed: TailnetObservation;
  operatorNamespace: string;
  now: Date;
}

/**
 * What the plan found about the policy write, in the order of its checks: why nothing is written, or WriteDue
 * (then `write` is set). Decide says each in PolicyApplied (applied.ts); the data is what its message names.
 */
export type PolicyFinding =
  | { found: "NoConnection"; message: string }
  | { found: "NoCall" }
  | { found: "DryRunNotRendered"; rendered: string }
  | { found: "DryRunLiveUnread" }
  | { found: "DryRunInSync"; live: string }
  | { found: "DryRunDiffers"; hash: string; live: string | null; adoption?: string[] }
  | { found: "LiveUnread"; error: HeadscaleError }
  | { found: "InSync"; hash: string }
  /** A failed read of health or users, or (no error) Headscale reports no database connectivity. */
  | { found: "HeadscaleFailing"; error?: HeadscaleError }
  | { found: "RenderUnverified"; message: string }
  | { found: "NothingToApply"; live: string | null }
  | { found: "RenderRefused"; rendered: string; live: string | null }
  | { found: "FileMode" }
  /** The render is more than Headscale's API takes in one message (HEADSCALE_MAX_POLICY_BYTES): nothing is sent. */
  | { found: "PolicyTooLarge"; bytes: number; live: string | null }
  | { found: "CheckRejected"; detail: string; live: string | null }
  | { found: "Incompatible"; message: string }
  /** The policy/check probe failed (no error: not probed). */
  | { found: "CheckFailed"; error?: HeadscaleError }
  | { found: "DuplicateUsers"; names: string[]; live: string | null }
  | { found: "AdoptionRefused"; live: string | null; adoption: string[] }
  /** Another installation (another Tailnet uid) writes this cluster's section: nothing is written. */
  | { found: "ClusterNameTaken"; id: string; uid: string }
  /** A policy marked by an operator without cluster sections replaced the one this Tailnet wrote. */
  | { found: "LegacyWriter"; live: string }
  | { found: "BackingOff"; failure: PendingFailure; hash: string }
  | { found: "WriteDue" };

export interface TailnetPlan {
  /** What the policy checks found: why nothing is written, or WriteDue while `write` is set. */
  policy: PolicyFinding;
  write?: PolicyWrite;
  /** What writing the render would drop from a live policy the operator did not write (see adoption.ts). */
  adoption?: string[];
  /** `policy` is a failed write that backs off until then. */
  retryAt?: Date;
  /** The API key renewal step due this sync (spec.headscale.apiKeyRotation; rotation.ts). */
  rotation?: RotationPlan;
}

const isCounts = (v: unknown): v is GeneratedCounts =>
  !!v &&
  typeof v === "object" &&
  ["tags", "grants", "routes"].every((k) => typeof (v as Record<string, unknown>)[k] === "number");

export function previousPolicy(parent: K8sObject): PolicyStatus {
  const p = previousStatus(parent).policy as Record<string, unknown> | undefined;
  const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
  return {
    renderedHash: str(p?.renderedHash),
    appliedHash: str(p?.appliedHash),
    appliedAt: str(p?.appliedAt),
    generated: isCounts(p?.generated) ? p.generated : undefined,
    leftOut: Array.isArray(p?.leftOut) ? (p.leftOut as LeftOut[]) : undefined,
  };
}

/**
 * What writing `candidate` would drop from a live policy the operator never wrote, when nothing allows that:
 * no base policy, no policy applied by the operator yet (status.policy.appliedHash), and no
 * spec.policy.replaceLivePolicy. Undefined when the write may go ahead. An unparsable live policy counts as
 * entirely lost.
 */
export function adoptionLoss(
  input: TailnetPlanInput,
  candidate: PolicyCandidate | undefined,
  live: string | null | undefined,
): string[] | undefined {
  const { hs, inputs } = input.observed;
  if (!candidate || !hs?.policy.ok || hs.policy.value === null) return undefined;
  if (live === candidate.hash && liveHolds(hs, candidate)) return undefined;
  if (inputs.base.kind !== "none" || inputs.replaceLivePolicy) return undefined;
  const applied = previousPolicy(input.parent).appliedHash;
  if (applied) return undefined;
  // ours by its marker even when the parent's status (a cached copy) does not show the write yet; a policy marked
  // by a version before cluster sections is another cluster's unless this Tailnet applied it (legacyWriter)
  const l = liveShared(hs.policy.value);
  if (operatorWrittenHash(hs.policy.value.policy) && !(l?.legacy && candidate.shared)) return undefined;
  const lost = lostOverLiveText(hs.policy.value.policy, candidate.policy) ?? ["the whole (unparsable) policy"];
  return lost.length > 0 ? lost : undefined;
}

/**
 * The live policy changed behind the operator's back: it has applied one (status.policy.appliedHash)
 * and what Headscale stores now is not a text it wrote, intact (policy/marker.ts). Not "live differs
 * from appliedHash": the parent comes from Metacontroller's informer cache, whose status can lag
 * behind the previous answer's write, and that raised false PolicyDriftOverwritten Warnings. A live
 * policy equal to appliedHash counts as ours too (written before the marker existed).
 */
export function policyDrift(
  input: TailnetPlanInput,
  live: string | null | undefined,
): { live: string; lastApplied: string } | undefined {
  const lastApplied = previousPolicy(input.parent).appliedHash;
  if (!lastApplied || live === undefined) return undefined;
  const stored = input.observed.hs?.policy.ok ? input.observed.hs.policy.value : undefined;
  const ours = live !== null && (live === lastApplied || (!!stored && !!operatorWrittenHash(stored.policy)));
  return ours ? undefined : { live: live ?? "none", lastApplied };
}

/** The first observation a write depends on that failed (the live policy is checked separately). */
function writeBlocker(hs: HeadscaleObservations): PolicyFinding | undefined {
  if (!hs.health.ok) return { found: "HeadscaleFailing", error: hs.health.error };
  if (!hs.health.value.databaseConnectivity) return { found: "HeadscaleFailing" };
  if (!hs.users.ok) return { found: "HeadscaleFailing", error: hs.users.error };
  return undefined;
}

/** The policy write and the API key renewal step this sync wants, each with its guards. */
export function planTailnet(input: TailnetPlanInput): TailnetPlan {
  const policy = planPolicy(input);
  const { inputs, hs, apiKey } = input.observed;
  const rotation = inputs.apiKeyRotation
    ? planRotation({
        rotation: inputs.apiKeyRotation,
        hs,
        apiKey: inputs.connection.ok ? inputs.connection.conn.apiKey : undefined,
        use: apiKey,
        now: input.now,
      })
    : undefined;
  return rotation ? { ...policy, rotation } : policy;
}

/** DryRun: what the render and the live policy say, never a write. */
function dryRunFinding(
  hs: HeadscaleObservations | null,
  candidate: PolicyCandidate | undefined,
  live: string | null | undefined,
  rendered: string,
  adoption: string[] | undefined,
): PolicyFinding {
  if (!candidate) return { found: "DryRunNotRendered", rendered };
  if (live === undefined) return { found: "DryRunLiveUnread" };
  if (live === candidate.hash && (!hs || liveHolds(hs, candidate))) return { found: "DryRunInSync", live };
  return { found: "DryRunDiffers", hash: candidate.hash, live, ...(adoption ? { adoption } : {}) };
}

/** Without a render: why (the order is the order of plan's checks). */
function notRendered(rendered: ConditionInput, base: TailnetInputs["base"], live: string | null): PolicyFinding {
  if (rendered.reason === R.CannotVerify) return { found: "RenderUnverified", message: rendered.message };
  // A fresh Tailnet: no base and nothing generated yet is not a refusal, just nothing to do.
  if (rendered.reason === R.PolicyEmpty && base.kind === "none") return { found: "NothingToApply", live };
  return { found: "RenderRefused", rendered: rendered.reason, live };
}

/**
 * The largest policy the operator writes, in UTF-8 bytes. Headscale 0.29's REST API reaches its gRPC server
 * through grpc-gateway, and neither side sets a message size (juanfont/headscale hscontrol/app.go), so grpc-go's
 * 4 MiB default caps both the request (the policy and 5 bytes of framing: past it 429 code 8, nothing stored)
 * and the PUT's answer, which repeats the policy with `updated_at` (up to 19 bytes more: past it the policy is
 * stored and served, yet the PUT and every later GET answer 429, and no writer can read the live policy again).
 * 24 bytes under 4 MiB keeps both answers whole (test/real/policy-size.test.ts measures the edges).
 */
export const HEADSCALE_MAX_POLICY_BYTES = 4 * 1024 * 1024 - 24;

/** What keeps the policy from being written, or WriteDue (the order is the order of the checks). */
function findPolicy(input: TailnetPlanInput, adoption: string[] | undefined): PolicyFinding {
  const { inputs, hs, render, check, pendingFailure } = input.observed;
  const candidate = render.ok ? render.candidate : undefined;
  const live = liveHash(hs);
  const rendered = policyRendered(render, check, inputs.base.kind === "none");
  if (!inputs.connection.ok) return { found: "NoConnection", message: inputs.connection.message };
  if (!hs) return { found: "NoCall" };
  if (inputs.settings.policyMode === "DryRun") return dryRunFinding(hs, candidate, live, rendered.reason, adoption);
  if (!hs.policy.ok) return { found: "LiveUnread", error: hs.policy.error };
  const stored = live ?? null;
  const taken = candidate?.shared?.nameTaken;
  if (taken && candidate?.shared) return { found: "ClusterNameTaken", id: candidate.shared.own.id, uid: taken.uid };
  if (candidate && liveHolds(hs, candidate)) return { found: "InSync", hash: candidate.hash };
  const legacy = legacyWriter(input, candidate, stored);
  if (legacy) return legacy;
  const blocker = writeBlocker(hs);
  if (blocker) return blocker;
  if (!candidate) return notRendered(rendered, inputs.base, stored);
  if (policyMode(hs).reason === R.File) return { found: "FileMode" };
  // the text the PUT would carry (act.ts putPolicy); only computed when the live policy does not hold the render
  const bytes = Buffer.byteLength(candidateText(candidate.hash, candidate.policy, candidate.shared?.meta), "utf8");
  if (bytes > HEADSCALE_MAX_POLICY_BYTES) return { found: "PolicyTooLarge", bytes, live: stored };
  if (check && !check.ok && check.error.classification === "policyInvalid") {
    return { found: "CheckRejected", detail: check.error.detail, live: stored };
  }
  const compatible = headscaleCompatible(hs, check);
  if (compatible.status === "False") return { found: "Incompatible", message: compatible.message };
  if (!check?.ok) return { found: "CheckFailed", ...(check ? { error: check.error } : {}) };
  const dups = hs.users.ok ? duplicateUsers(hs.users.value) : [];
  if (dups.length > 0) return { found: "DuplicateUsers", names: dups.map((d) => d.name), live: stored };
  if (adoption) return { found: "AdoptionRefused", live: stored, adoption };
  if (pendingFailure && input.now < pendingFailure.retryAt) {
    return { found: "BackingOff", failure: pendingFailure, hash: candidate.hash };
  }
  return { found: "WriteDue" };
}

/** What the policy check found, the write when one is due, and what a write would drop (adoption.ts). */
function planPolicy(input: TailnetPlanInput): TailnetPlan {
  const { render, hs } = input.observed;
  const candidate = render.ok ? render.candidate : undefined;
  const live = liveHash(hs);
  const adoption = adoptionLoss(input, candidate, live);
  const policy = findPolicy(input, adoption);
  const plan: TailnetPlan = { policy, ...(adoption ? { adoption } : {}) };
  if (policy.found === "BackingOff") return { ...plan, retryAt: policy.failure.retryAt };
  if (policy.found !== "WriteDue" || !candidate) return plan;
  const drift = policyDrift(input, live);
  const meta = candidate.shared ? { meta: candidate.shared.meta, ownLine: candidate.shared.ownLine } : {};
  return { policy, write: { hash: candidate.hash, policy: candidate.policy, ...meta, ...(drift ? { drift } : {}) } };
}

/**
 * An operator of a version before cluster sections wrote the live policy after this Tailnet applied one: it
 * would replace this cluster's section at each of its syncs, and this one would put it back. Nothing is written
 * until every operator on this Headscale is upgraded (docs/OPERATIONS.md "Upgrading").
 */
function legacyWriter(
  input: TailnetPlanInput,
  candidate: PolicyCandidate | undefined,
  live: string | null,
): PolicyFinding | undefined {
  const stored = input.observed.hs?.policy.ok ? input.observed.hs.policy.value : undefined;
  const applied = previousPolicy(input.parent).appliedHash;
  if (!candidate?.shared || !stored || live === null || !applied || live === applied) return undefined;
  const l = liveShared(stored);
  return l?.legacy && operatorWrittenHash(stored.policy) ? { found: "LegacyWriter", live } : undefined;
}
