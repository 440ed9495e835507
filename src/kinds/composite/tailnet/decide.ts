/**
 * The Tailnet decision (pure): the observation, the plan and the outcome of its write → conditions, status
 * fields and children. When a write was planned, the sync re-read the live policy and planned again just
 * before the PUT (act.ts): decide then speaks from that fresher observation and plan, and folds in what
 * the PUT answered.
 */
import { type ConditionInput, toK8sTime } from "../../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../../conditions/tables/tailnet.js";
import { dnsRecordsConfigMapName, policyConfigMapName } from "../../../k8s/labels.js";
import { findObject, type K8sObject, type ObjectMaps, reuseObserved } from "../../../k8s/objects.js";
import type { Decision } from "../../../pipeline/run.js";
import { previousStatus } from "../../../pipeline/status.js";
import type { TailnetOutcome } from "./act.js";
import { SUPERSEDED_RESYNC_SECONDS, VERIFY_SHARED_WRITE_SECONDS } from "./act.js";
import { type AppliedContext, plannedApplied } from "./applied.js";
import {
  credentialsSecret,
  dnsRecordsConfigMap,
  livePolicyConfigMap,
  livePolicyConfigMapName,
  policyConfigMap,
} from "./children.js";
import { dnsRecords, type PolicyCandidate } from "./compose.js";
import type { MemoSlot } from "./compose-memo.js";
import {
  apiKeyValid,
  apiReachable,
  duplicateUsers,
  headscaleCompatible,
  policyMode,
  policyRendered,
  splitDNS,
  tailnetConditions,
  usersUnique,
} from "./conditions.js";
import { describeLeftOut } from "./left-out.js";
import type { TailnetObservation } from "./observe.js";
import {
  type PolicyStatus,
  type PolicyWrite,
  previousPolicy,
  type TailnetPlan,
  type TailnetPlanInput,
  type TailnetStatusFields,
} from "./plan.js";
import { type RotationStatus, renewedKeyChild, replacedGone, rotationCondition, rotationStatus } from "./rotation.js";
import { liveHolds, sharedPolicyCondition, withoutRefused } from "./shared.js";
import { liveHash, writeFailureCondition } from "./write.js";

/** status.apiKeyRotation as last written (only strings are kept). */
function previousRotation(parent: K8sObject): RotationStatus | undefined {
  const p = previousStatus(parent).apiKeyRotation;
  if (!p || typeof p !== "object") return undefined;
  const r = p as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
  return { keyPrefix: str(r.keyPrefix), expiresAt: str(r.expiresAt) };
}

const { cond } = tailnetConditions;

export interface TailnetDecideInput extends TailnetPlanInput {
  children: ObjectMaps;
  /** Reuses the DNS records computed from the same inputs (compose-memo.ts); absent: computed fresh. */
  memo?: MemoSlot;
  plan: TailnetPlan;
  outcome: TailnetOutcome;
}

export interface TailnetDecision extends Decision {
  fields: TailnetStatusFields;
}

/** Resync sooner while Headscale observations fail, so recovery shows within half a resync period. */
export const OBSERVATION_RETRY_SECONDS = 30;

function childrenOf(
  input: TailnetDecideInput,
  observed: TailnetObservation,
  candidate: PolicyCandidate | undefined,
  adoption: string[] | undefined,
  live: string | null | undefined,
): K8sObject[] {
  const { operatorNamespace: namespace, children } = input;
  const inputs = observed.inputs;
  const find = (name: string, kind: string) => findObject(children, "v1", kind, name, namespace);
  const out: K8sObject[] = [];
  const policyName = policyConfigMapName(inputs.name);
  if (candidate) {
    out.push(policyConfigMap({ tailnet: inputs.name, namespace, ...candidate }));
  } else {
    const old = find(policyName, "ConfigMap");
    if (old) out.push(reuseObserved(old));
  }
  const livePolicy = observed.hs?.policy;
  if (adoption && livePolicy?.ok && livePolicy.value && typeof live === "string") {
    out.push(livePolicyConfigMap({ tailnet: inputs.name, namespace, text: livePolicy.value.policy, hash: live }));
  } else if (!livePolicy?.ok || !candidate) {
    // Not observed (or nothing rendered to judge by): keep what was published.
    const old = find(livePolicyConfigMapName(inputs.name), "ConfigMap");
    if (old) out.push(reuseObserved(old));
  }
  const hs = observed.hs;
  const nodes = hs?.nodes.ok ? hs.nodes.value : inputs.ingresses.length === 0 ? [] : null;
  if (nodes) {
    out.push(
      dnsRecordsConfigMap({
        tailnet: inputs.name,
        namespace,
        records: withoutRefused(dnsRecords(inputs, nodes, input.memo), candidate),
      }),
    );
  } else {
    // Keep what was published; before anything was, an empty file lets Headscale start with it mounted.
    const old = find(dnsRecordsConfigMapName(inputs.name), "ConfigMap");
    out.push(old ? reuseObserved(old) : dnsRecordsConfigMap({ tailnet: inputs.name, namespace, records: [] }));
  }
  const rotation = input.outcome.rotation;
  if (inputs.connection.ok) {
    const { url, ca } = inputs.connection.conn;
    // A key renewed this sync is what the workload kinds read from now on.
    const apiKey = rotation?.step === "created" ? rotation.apiKey : inputs.connection.conn.apiKey;
    out.push(credentialsSecret({ tailnet: inputs.name, namespace, url, apiKey, ca }));
  }
  const renewed = renewedKeyChild(
    inputs.name,
    namespace,
    observed.apiKey,
    rotation,
    !!inputs.apiKeyRotation,
    replacedGone(observed.hs, observed.apiKey, input.now),
    observed.apiKey.source === "spec" && !!observed.hs?.health.ok,
  );
  if (renewed) out.push(renewed);
  return out;
}

function rotationContext(input: TailnetDecideInput, observed: TailnetObservation, plan: TailnetPlan) {
  const { inputs } = observed;
  if (!inputs.apiKeyRotation) return undefined;
  return {
    rotation: inputs.apiKeyRotation,
    hs: observed.hs,
    apiKey: inputs.connection.ok ? inputs.connection.conn.apiKey : undefined,
    use: observed.apiKey,
    now: input.now,
    tailnet: inputs.name,
    namespace: input.operatorNamespace,
    ...(plan.rotation ? { plan: plan.rotation } : {}),
    ...(input.outcome.rotation ? { outcome: input.outcome.rotation } : {}),
  };
}

function statusOf(
  input: TailnetDecideInput,
  observed: TailnetObservation,
  candidate: PolicyCandidate | undefined,
  live: string | null | undefined,
): TailnetStatusFields {
  const prev = previousPolicy(input.parent);
  const renderedHash = candidate?.hash ?? prev.renderedHash;
  const generated = candidate?.generated ?? prev.generated;
  // appliedHash: what Headscale holds as last written or confirmed (the live policy equals our render).
  const appliedHash =
    candidate && live === candidate.hash && liveHolds(observed.hs, candidate) ? candidate.hash : prev.appliedHash;
  const policy: PolicyStatus = {};
  if (renderedHash) policy.renderedHash = renderedHash;
  if (appliedHash) policy.appliedHash = appliedHash;
  if (prev.appliedAt) policy.appliedAt = prev.appliedAt;
  if (generated) policy.generated = { tags: generated.tags, grants: generated.grants, routes: generated.routes };
  // without a render (Headscale unreadable, say) the previous list stands: a failed observation changes nothing
  const leftOut = candidate ? candidate.leftOut : prev.leftOut;
  if (leftOut?.length) policy.leftOut = leftOut;
  const hs = observed.hs;
  const prevConflicts = previousStatus(input.parent).userConflicts;
  const userConflicts = hs?.users.ok
    ? duplicateUsers(hs.users.value).length
    : typeof prevConflicts === "number"
      ? prevConflicts
      : undefined;
  return {
    ...(Object.keys(policy).length ? { policy } : {}),
    ...(userConflicts !== undefined ? { userConflicts } : {}),
    // what every workload sync reads to refuse a twin of a kept tag (kept-tags.ts keptTagRefusal)
    ...(observed.inputs.keptLegacyTags.length ? { keptLegacyTags: observed.inputs.keptLegacyTags } : {}),
  };
}

/** PolicyApplied after the outcome: a superseded write, the PUT's answer, or the plan's own word. */
function appliedAfter(plan: TailnetPlan, outcome: TailnetOutcome, ctx: AppliedContext): ConditionInput {
  const { superseded, written, contended } = outcome;
  if (contended) {
    return cond(
      C.PolicyApplied,
      "Unknown",
      R.WriteContended,
      `not held: ${contended.attempts} times another writer replaced the policy between this operator's write of ${contended.write.hash} and its read-back (another cluster's operator, or an administrator); the next sync merges and writes again`,
    );
  }
  if (superseded) {
    const name = (h: string | null) => (h === null ? "no policy" : h);
    return cond(
      C.PolicyApplied,
      "Unknown",
      R.ApplyFailed,
      `not written: the live policy changed from ${name(superseded.from)} to ${name(superseded.to)} while this sync was planning (another operator replica or an administrator wrote it); the next sync plans again from it`,
    );
  }
  if (!written) return plannedApplied(plan.policy, ctx);
  const { write, result } = written;
  if (!result.ok) return writeFailureCondition(result.error, result.readback, write.hash);
  const drift = write.drift
    ? `; it replaced ${write.drift.live === "none" ? "an empty policy" : write.drift.live}, changed outside the operator (last applied ${write.drift.lastApplied})`
    : "";
  return cond(C.PolicyApplied, "True", R.Applied, `wrote the rendered policy ${write.hash}${drift}`);
}

/** Written: appliedHash and appliedAt, the status keys in the api.md order (a later InSync sync serializes the same). */
function afterWrite(fields: TailnetStatusFields, write: PolicyWrite, now: Date): TailnetStatusFields {
  const p: PolicyStatus = { ...(fields.policy ?? {}), appliedHash: write.hash, appliedAt: toK8sTime(now) };
  const policy: PolicyStatus = {};
  if (p.renderedHash) policy.renderedHash = p.renderedHash;
  if (p.appliedHash) policy.appliedHash = p.appliedHash;
  if (p.appliedAt) policy.appliedAt = p.appliedAt;
  if (p.generated) policy.generated = p.generated;
  if (p.leftOut) policy.leftOut = p.leftOut;
  return { ...fields, policy };
}

/** PolicyApplied says what the written (or live) policy leaves out, so an administrator sees it at the Tailnet. */
function withLeftOut(applied: ConditionInput, candidate: PolicyCandidate | undefined): ConditionInput {
  if (!candidate?.leftOut.length || applied.status !== "True") return applied;
  return { ...applied, message: `${applied.message}; left out of the policy: ${describeLeftOut(candidate.leftOut)}` };
}

export function decideTailnet(input: TailnetDecideInput): TailnetDecision {
  const { outcome } = input;
  // A re-plan before the PUT saw the live policy fresher than the observation: speak from it.
  const observed: TailnetObservation =
    outcome.replan && input.observed.hs
      ? {
          ...input.observed,
          hs: { ...input.observed.hs, policy: outcome.replan.policy },
          render: outcome.replan.render ?? input.observed.render,
        }
      : input.observed;
  const plan = outcome.replan?.plan ?? input.plan;
  const { inputs, hs, render, check } = observed;
  const candidate = render.ok ? render.candidate : undefined;
  const live = liveHash(hs);
  const ctx = { operatorNamespace: input.operatorNamespace, tailnet: inputs.name };
  const applied = withLeftOut(appliedAfter(plan, outcome, ctx), candidate);
  const conditions = [
    apiReachable(hs, inputs.connection.ok ? inputs.connection.caMissing : undefined),
    apiKeyValid(inputs, hs),
    headscaleCompatible(hs, check),
    policyMode(hs),
    splitDNS(inputs),
    usersUnique(hs),
    policyRendered(render, check, inputs.base.kind === "none"),
    applied,
    sharedPolicyCondition(candidate, !!hs?.policy.ok),
  ];
  const rotation = rotationContext(input, observed, input.plan);
  if (rotation) conditions.push(rotationCondition(rotation));
  const status = statusOf(input, observed, candidate, live);
  const written = outcome.written;
  const policyFields = written?.result.ok ? afterWrite(status, written.write, input.now) : status;
  const fields: TailnetStatusFields = rotation
    ? { ...policyFields, apiKeyRotation: rotationStatus(rotation, previousRotation(input.parent)) }
    : policyFields;
  const failing = !!hs && [hs.health, hs.nodes, hs.users, hs.policy].some((o) => !o.ok);
  const resyncAfterSeconds = verifiedSoon(
    outcome.superseded || outcome.contended
      ? SUPERSEDED_RESYNC_SECONDS
      : written?.retryAfterSeconds !== undefined
        ? written.retryAfterSeconds
        : plan.retryAt && !written
          ? Math.max(1, Math.ceil((plan.retryAt.getTime() - input.now.getTime()) / 1000))
          : failing
            ? OBSERVATION_RETRY_SECONDS
            : undefined,
    !!written?.result.ok && !!candidate?.shared?.others.length,
  );
  return {
    conditions,
    fields,
    children: childrenOf(input, observed, candidate, plan.adoption, live),
    ...(resyncAfterSeconds !== undefined ? { resyncAfterSeconds } : {}),
  };
}

/**
 * Headscale has no compare-and-swap: another cluster's write that read the policy before ours and lands after our
 * read-back drops our section again. A sync that wrote into a policy other clusters share looks again soon, so such
 * a lost update is repaired within seconds, not a resync period (docs/OPERATIONS.md "Several clusters").
 */
function verifiedSoon(resync: number | undefined, wroteShared: boolean): number | undefined {
  if (!wroteShared) return resync;
  return Math.min(resync ?? VERIFY_SHARED_WRITE_SECONDS, VERIFY_SHARED_WRITE_SECONDS);
}
