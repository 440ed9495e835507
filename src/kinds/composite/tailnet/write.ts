/**
 * What the live policy and a policy write's answer mean (pure), in one place for plan, act and decide: the
 * live policy's canonical hash, and how far a failed PUT got (the metric's label and PolicyApplied both
 * follow `writeStage`).
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../../conditions/tables/tailnet.js";
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HeadscaleError } from "../../../headscale/errors.js";
import type { HsPolicy } from "../../../headscale/types.js";
import { hashOfLivePolicy } from "../../../policy/canonical.js";
import { oneLine, tailnetConditions } from "./conditions.js";
import type { HeadscaleObservations } from "./observed.js";

const { cond } = tailnetConditions;

/** Hash per cached live-policy object: the view hands out the same object for its TTL, so a big policy is parsed once. */
const liveHashes = new WeakMap<HsPolicy, string>();

/** The live policy's hash: null when the database holds none, undefined when it could not be read. */
export function liveHash(hs: HeadscaleObservations | null): string | null | undefined {
  return hs?.policy.ok ? policyHash(hs.policy.value) : undefined;
}

/** The canonical hash of a policy read from Headscale; null when none is stored. */
export function policyHash(live: HsPolicy | null): string | null {
  if (live === null) return null;
  let hash = liveHashes.get(live);
  if (hash === undefined) {
    const h = hashOfLivePolicy(live.policy);
    hash = h.ok ? h.hash : "unparsable";
    liveHashes.set(live, hash);
  }
  return hash;
}

export const describeLive = (h: string | null) =>
  h === null ? "Headscale holds no policy yet" : `the live policy is ${h}`;
/** What Headscale's database holds: GET /api/v1/policy reads the database, not the policy served from memory. */
export const describeStored = (h: string | null) =>
  h === null ? "Headscale stores no policy yet" : `Headscale's stored policy is ${h}`;

/**
 * How far a failed PUT got in Headscale 0.29's SetPolicy (hscontrol/grpcv1.go), which swaps the live policy
 * manager *before* the SSH check and the database insert:
 * - "fileMode": Headscale reads its policy from a file; nothing changed;
 * - "refused": parsing, validation or `tests` failed ("setting policy: …", or a 0.30 400): nothing changed;
 * - "swapped": a later step failed (SetPolicy's own plain errors, gRPC code 2: "verifying SSH rules: …" or a
 *   database error): the rejected policy is live in memory, unstored, until a restart or policy reload;
 * - "unknown": anything else (transport, a proxy's answer, another gRPC code, an unreadable body).
 */
export type WriteStage = "fileMode" | "refused" | "swapped" | "unknown";

export function writeStage(error: HeadscaleError): WriteStage {
  if (error.classification === "policyFileMode") return "fileMode";
  if (error.kind !== "http") return "unknown";
  if (/^setting policy:/i.test(error.detail) || error.status === 400) return "refused";
  return error.grpcCode === 2 ? "swapped" : "unknown";
}

/** Headscale refused the policy itself (rather than failing to store it): PolicyRejected, metric reason "rejected". */
export function policyRefused(error: HeadscaleError): boolean {
  const stage = writeStage(error);
  return stage === "fileMode" || stage === "refused" || error.classification === "policyInvalid";
}

const FROM_MEMORY =
  "Headscale already serves it from memory (0.29 swaps the policy in before the SSH check and the database write), while";

/** PolicyApplied after a failed write (also what a backing-off retry repeats), from the error and the read-back. */
export function writeFailureCondition(
  error: HeadscaleError,
  readback?: Outcome<HsPolicy | null>,
  rendered?: string,
): ConditionInput {
  const stage = writeStage(error);
  if (stage === "fileMode") {
    return cond(C.PolicyApplied, "False", R.PolicyModeFile, `write skipped: ${oneLine(error.message)}`);
  }
  const rejected = policyRefused(error);
  const head = rejected
    ? `Headscale rejected the policy (PUT /api/v1/policy): ${oneLine(error.detail)}`
    : `not written: ${oneLine(error.message)}`;
  const stored = readback?.ok ? policyHash(readback.value) : undefined;
  let live: string;
  if (!readback) {
    live = stage === "refused" ? "nothing was stored and Headscale serves the policy it served before" : "";
  } else if (!readback.ok) {
    live = `what Headscale holds now could not be read back: ${oneLine(readback.error.message)}`;
  } else if (stored !== undefined && stored === rendered) {
    live = `reading it back shows Headscale stored the rendered policy ${rendered} all the same`;
  } else if (stage === "refused") {
    live = `nothing was stored and Headscale serves the policy it served before (${describeStored(stored ?? null)})`;
  } else if (stage === "swapped") {
    live = `the rendered policy${rendered ? ` ${rendered}` : ""} was not stored, but ${FROM_MEMORY} ${describeStored(stored ?? null)}; a Headscale restart or policy reload returns to the stored one`;
  } else {
    live = `not stored (${describeStored(stored ?? null)}); whether Headscale already serves the rendered policy from memory cannot be told (0.29 swaps the policy in before storing it)`;
  }
  const message = live ? `${head}; ${live}` : head;
  return rejected
    ? cond(C.PolicyApplied, "False", R.PolicyRejected, message)
    : cond(C.PolicyApplied, "False", R.ApplyFailed, message);
}
