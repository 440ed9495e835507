/**
 * The Tailnet decision (pure): (parent, observed children, inputs, render, observations, now) →
 * conditions, status, children and at most one intended policy write. `foldWrite` folds the write's
 * outcome back in. Write rules (api.md): only in Apply mode, only in database mode, only with unique
 * user names, never an empty or refused render, only after policy/check accepted it, and only when
 * the rendered hash differs from the live one.
 */
import { type ConditionInput, cond, toK8sTime } from "../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../conditions/reasons.js";
import type { Outcome } from "../../headscale/capabilities.js";
import type { HeadscaleError } from "../../headscale/errors.js";
import type { HsPolicy } from "../../headscale/types.js";
import { dnsRecordsConfigMapName, policyConfigMapName } from "../../k8s/labels.js";
import { findObject, type K8sObject, type ObjectMaps, reuseObserved } from "../../k8s/objects.js";
import { hashOfLivePolicy } from "../../policy/canonical.js";
import type { GeneratedCounts } from "../../policy/render.js";
import { previousStatus } from "../common.js";
import { lostOverLiveText } from "./adoption.js";
import {
  credentialsSecret,
  dnsRecordsConfigMap,
  LIVE_POLICY_KEY,
  livePolicyConfigMap,
  livePolicyConfigMapName,
  policyConfigMap,
} from "./children.js";
import {
  apiKeyValid,
  apiReachable,
  duplicateUsers,
  headscaleCompatible,
  NO_CALL,
  oneLine,
  policyMode,
  policyRendered,
  splitDNS,
  usersUnique,
} from "./conditions.js";
import type { TailnetInputs } from "./inputs.js";
import type { HeadscaleObservations } from "./observe.js";
import { dnsRecords, type PolicyCandidate, type TailnetRender } from "./render.js";

export interface PolicyStatus {
  renderedHash?: string;
  appliedHash?: string;
  appliedAt?: string;
  generated?: GeneratedCounts;
}

export interface TailnetStatusFields {
  policy?: PolicyStatus;
  userConflicts?: number;
}

/** A failed write of the same policy that is still backing off: its condition is repeated until retryAt. */
export interface PendingFailure {
  condition: ConditionInput;
  retryAt: Date;
}

export interface TailnetObserved {
  /** null: no API key, so no Headscale call was made. */
  hs: HeadscaleObservations | null;
  /** POST /api/v1/policy/check of the candidate (of `{}` without one); undefined when not probed. */
  check?: Outcome<void>;
  pendingFailure?: PendingFailure;
}

export interface DecideInput {
  parent: K8sObject;
  children: ObjectMaps;
  inputs: TailnetInputs;
  render: TailnetRender;
  observed: TailnetObserved;
  operatorNamespace: string;
  now: Date;
}

export interface PolicyWrite {
  hash: string;
  policy: Record<string, unknown>;
  /** The live policy changed behind our back (neither the last applied nor the rendered one). */
  drift?: { live: string; lastApplied: string };
}

export interface TailnetDecision {
  conditions: ConditionInput[];
  status: TailnetStatusFields;
  children: K8sObject[];
  write?: PolicyWrite;
  resyncAfterSeconds?: number;
}

/** Resync sooner while Headscale observations fail, so recovery shows within half a resync period. */
export const OBSERVATION_RETRY_SECONDS = 30;

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
  };
}

/** Hash per cached live-policy object: the view hands out the same object for its TTL, so a big policy is parsed once. */
const liveHashes = new WeakMap<HsPolicy, string>();

/** The live policy's hash: null when the database holds none, undefined when it could not be read. */
export function liveHash(hs: HeadscaleObservations | null): string | null | undefined {
  return hs?.policy.ok ? policyHash(hs.policy.value) : undefined;
}

/** The canonical hash of a policy read from Headscale; null when none is stored. */
function policyHash(live: HsPolicy | null): string | null {
  if (live === null) return null;
  let hash = liveHashes.get(live);
  if (hash === undefined) {
    const h = hashOfLivePolicy(live.policy);
    hash = h.ok ? h.hash : "unparsable";
    liveHashes.set(live, hash);
  }
  return hash;
}

const describeLive = (h: string | null) => (h === null ? "Headscale holds no policy yet" : `the live policy is ${h}`);
/** What Headscale's database holds: GET /api/v1/policy reads the database, not the policy served from memory. */
const describeStored = (h: string | null) =>
  h === null ? "Headscale stores no policy yet" : `Headscale's stored policy is ${h}`;

interface AppliedContext {
  input: DecideInput;
  candidate?: PolicyCandidate;
  rendered: ConditionInput;
  compatible: ConditionInput;
  mode: ConditionInput;
  live: string | null | undefined;
  /** What writing the render would drop from a live policy the operator did not write (see adoption.ts). */
  adoption?: string[];
}

/**
 * What writing `candidate` would drop from a live policy the operator never wrote, when nothing allows that:
 * no base policy, no policy applied by the operator yet (status.policy.appliedHash), and no
 * spec.policy.replaceLivePolicy. Undefined when the write may go ahead. An unparsable live policy counts as
 * entirely lost.
 */
export function adoptionLoss(
  input: DecideInput,
  candidate: PolicyCandidate | undefined,
  live: string | null | undefined,
): string[] | undefined {
  const hs = input.observed.hs;
  if (!candidate || !hs?.policy.ok || hs.policy.value === null || live === candidate.hash) return undefined;
  if (input.inputs.base.kind !== "none" || input.inputs.replaceLivePolicy) return undefined;
  if (previousPolicy(input.parent).appliedHash) return undefined;
  const lost = lostOverLiveText(hs.policy.value.policy, candidate.policy) ?? ["the whole (unparsable) policy"];
  return lost.length > 0 ? lost : undefined;
}

/** The exact commands that keep the live policy: export it into a base ConfigMap and reference it. */
function keepLiveCommand(input: DecideInput): string {
  const ns = input.operatorNamespace;
  const name = input.inputs.name;
  const base = `tailnet-${name}-base`;
  const patch = JSON.stringify({ spec: { policy: { baseConfigMapRef: { namespace: ns, name: base } } } });
  const key = LIVE_POLICY_KEY.replace(".", "\\.");
  return `kubectl -n ${ns} get configmap ${livePolicyConfigMapName(name)} -o jsonpath='{.data.${key}}' > ${LIVE_POLICY_KEY} && kubectl -n ${ns} create configmap ${base} --from-file=${LIVE_POLICY_KEY} && kubectl patch tailnet ${name} --type merge -p '${patch}'`;
}

/** The first observation a write depends on that failed (the live policy is checked separately). */
function writeBlocker(hs: HeadscaleObservations): string | undefined {
  if (!hs.health.ok) return oneLine(hs.health.error.message);
  if (!hs.health.value.databaseConnectivity) return "Headscale reports no database connectivity";
  if (!hs.users.ok) return oneLine(hs.users.error.message);
  return undefined;
}

/** PolicyApplied before any write, and the write when one is due (the order is the order of the checks). */
function policyApplied(ctx: AppliedContext): { condition: ConditionInput; write?: PolicyWrite } {
  const { input, candidate, live, rendered, compatible, mode, adoption } = ctx;
  const { hs, check, pendingFailure } = input.observed;
  const applied = (status: "True" | "False" | "Unknown", reason: string, message: string) => ({
    condition: cond(C.PolicyApplied, status, reason, message),
  });
  if (!input.inputs.connection.ok) return applied("False", R.NoAPIKey, input.inputs.connection.message);
  if (!hs) return applied("False", R.NoAPIKey, NO_CALL);

  if (input.inputs.settings.policyMode === "DryRun") {
    if (!candidate) {
      return applied(
        "Unknown",
        R.DryRun,
        `DryRun: nothing written; no policy rendered (PolicyRendered=${rendered.reason})`,
      );
    }
    if (live === undefined)
      return applied("Unknown", R.DryRun, "DryRun: nothing written; the live policy could not be read");
    if (live === candidate.hash) {
      return applied("True", R.DryRun, `DryRun: the live policy already equals the rendered one (${live})`);
    }
    const refusal = adoption
      ? `; in Apply mode the write would be refused (AdoptionRefused): it would drop ${adoption.join(", ")}`
      : "";
    return applied(
      "False",
      R.DryRun,
      `DryRun: nothing written; the rendered policy ${candidate.hash} differs: ${describeLive(live)}${refusal}`,
    );
  }

  if (!hs.policy.ok) return applied("Unknown", R.ApplyFailed, `not written: ${oneLine(hs.policy.error.message)}`);
  if (candidate && live === candidate.hash) {
    return applied("True", R.InSync, `Headscale holds the rendered policy ${candidate.hash}`);
  }
  const blocker = writeBlocker(hs);
  if (blocker) return applied("Unknown", R.ApplyFailed, `not written: ${blocker}`);
  if (!candidate) {
    if (rendered.reason === R.CannotVerify)
      return applied("Unknown", R.ApplyFailed, `not written: ${rendered.message}`);
    // A fresh Tailnet: no base and nothing generated yet is not a refusal, just nothing to do.
    if (rendered.reason === R.PolicyEmpty && input.inputs.base.kind === "none") {
      return applied(
        "False",
        R.NothingToApply,
        `nothing to apply yet: there is no base policy (spec.policy.baseConfigMapRef) and no workload object of this Tailnet generates a rule; Headscale's policy is left as it is (${describeStored(live ?? null)})`,
      );
    }
    return applied(
      "False",
      R.PolicyRejected,
      `not written: the render was refused (PolicyRendered=${rendered.reason}); nothing was sent to Headscale (${describeStored(live ?? null)})`,
    );
  }
  if (mode.reason === R.File) {
    return applied(
      "False",
      R.PolicyModeFile,
      `write skipped: Headscale reads the policy from a file (policy.mode file); put policy.json of ConfigMap ${input.operatorNamespace}/${policyConfigMapName(input.inputs.name)} into that file and reload Headscale, or set policy.mode: database`,
    );
  }
  if (check && !check.ok && check.error.classification === "policyInvalid") {
    return applied(
      "False",
      R.PolicyRejected,
      `Headscale rejects the rendered policy (POST /api/v1/policy/check): ${oneLine(check.error.detail)}; nothing was written (${describeStored(live ?? null)})`,
    );
  }
  if (compatible.status === "False") {
    return applied("False", R.ApplyFailed, `not written: Headscale is not compatible: ${compatible.message}`);
  }
  if (!check?.ok) {
    const why = check ? oneLine(check.error.message) : "not probed";
    return applied("Unknown", R.ApplyFailed, `not written: the policy/check probe failed: ${why}`);
  }
  const dups = hs.users.ok ? duplicateUsers(hs.users.value) : [];
  if (dups.length > 0) {
    return applied(
      "False",
      R.PolicyRejected,
      `write refused: Headscale user names held by more than one user (${dups.map((d) => d.name).join(", ")}) make Headscale reject every policy; nothing was written (${describeStored(live ?? null)})`,
    );
  }
  if (adoption) {
    return applied(
      "False",
      R.AdoptionRefused,
      `write refused: Headscale holds a policy the operator did not write (${live}), and with no base policy (spec.policy.baseConfigMapRef) the render would replace it, dropping ${adoption.join(", ")}; to keep it, export it into a base and keep that file in Git: ${keepLiveCommand(input)}; to replace it, set spec.policy.replaceLivePolicy: true`,
    );
  }
  if (pendingFailure && input.now < pendingFailure.retryAt) return { condition: pendingFailure.condition };
  const lastApplied = previousPolicy(input.parent).appliedHash;
  const drift = lastApplied && live !== lastApplied ? { live: live ?? "none", lastApplied } : undefined;
  return {
    condition: cond(C.PolicyApplied, "Unknown", R.ApplyFailed, "write in progress"),
    write: { hash: candidate.hash, policy: candidate.policy, ...(drift ? { drift } : {}) },
  };
}

function childrenOf(
  input: DecideInput,
  candidate: PolicyCandidate | undefined,
  adoption: string[] | undefined,
  live: string | null | undefined,
): K8sObject[] {
  const { inputs, operatorNamespace: namespace, children } = input;
  const observed = (name: string, kind: string) => findObject(children, "v1", kind, name, namespace);
  const out: K8sObject[] = [];
  const policyName = policyConfigMapName(inputs.name);
  if (candidate) {
    out.push(policyConfigMap({ tailnet: inputs.name, namespace, ...candidate }));
  } else {
    const old = observed(policyName, "ConfigMap");
    if (old) out.push(reuseObserved(old));
  }
  const livePolicy = input.observed.hs?.policy;
  if (adoption && livePolicy?.ok && livePolicy.value && typeof live === "string") {
    out.push(livePolicyConfigMap({ tailnet: inputs.name, namespace, text: livePolicy.value.policy, hash: live }));
  } else if (!livePolicy?.ok || !candidate) {
    // Not observed (or nothing rendered to judge by): keep what was published.
    const old = observed(livePolicyConfigMapName(inputs.name), "ConfigMap");
    if (old) out.push(reuseObserved(old));
  }
  const hs = input.observed.hs;
  const nodes = hs?.nodes.ok ? hs.nodes.value : inputs.ingresses.length === 0 ? [] : null;
  if (nodes) {
    out.push(dnsRecordsConfigMap({ tailnet: inputs.name, namespace, records: dnsRecords(inputs, nodes) }));
  } else {
    // Keep what was published; before anything was, an empty file lets Headscale start with it mounted.
    const old = observed(dnsRecordsConfigMapName(inputs.name), "ConfigMap");
    out.push(old ? reuseObserved(old) : dnsRecordsConfigMap({ tailnet: inputs.name, namespace, records: [] }));
  }
  if (inputs.connection.ok) {
    const { url, apiKey, ca } = inputs.connection.conn;
    out.push(credentialsSecret({ tailnet: inputs.name, namespace, url, apiKey, ca }));
  }
  return out;
}

function statusOf(
  input: DecideInput,
  candidate: PolicyCandidate | undefined,
  live: string | null | undefined,
): TailnetStatusFields {
  const prev = previousPolicy(input.parent);
  const renderedHash = candidate?.hash ?? prev.renderedHash;
  const generated = candidate?.generated ?? prev.generated;
  // appliedHash: what Headscale holds as last written or confirmed (the live policy equals our render).
  const appliedHash = candidate && live === candidate.hash ? candidate.hash : prev.appliedHash;
  const policy: PolicyStatus = {};
  if (renderedHash) policy.renderedHash = renderedHash;
  if (appliedHash) policy.appliedHash = appliedHash;
  if (prev.appliedAt) policy.appliedAt = prev.appliedAt;
  if (generated) policy.generated = { tags: generated.tags, grants: generated.grants, routes: generated.routes };
  const hs = input.observed.hs;
  const prevConflicts = previousStatus(input.parent).userConflicts;
  const userConflicts = hs?.users.ok
    ? duplicateUsers(hs.users.value).length
    : typeof prevConflicts === "number"
      ? prevConflicts
      : undefined;
  return {
    ...(Object.keys(policy).length ? { policy } : {}),
    ...(userConflicts !== undefined ? { userConflicts } : {}),
  };
}

export function decide(input: DecideInput): TailnetDecision {
  const { inputs, render, observed } = input;
  const hs = observed.hs;
  const candidate = render.ok ? render.candidate : undefined;
  const live = liveHash(hs);
  const rendered = policyRendered(render, observed.check, inputs.base.kind === "none");
  const compatible = headscaleCompatible(hs, observed.check);
  const mode = policyMode(hs);
  const adoption = adoptionLoss(input, candidate, live);
  const { condition: applied, write } = policyApplied({
    input,
    candidate,
    rendered,
    compatible,
    mode,
    live,
    adoption,
  });
  const conditions = [
    apiReachable(hs, inputs.connection.ok ? inputs.connection.caMissing : undefined),
    apiKeyValid(inputs, hs),
    compatible,
    mode,
    splitDNS(inputs),
    usersUnique(hs),
    rendered,
    applied,
  ];
  const failing = !!hs && [hs.health, hs.nodes, hs.users, hs.policy].some((o) => !o.ok);
  const pending = observed.pendingFailure;
  const resyncAfterSeconds =
    pending && applied === pending.condition
      ? Math.max(1, Math.ceil((pending.retryAt.getTime() - input.now.getTime()) / 1000))
      : failing
        ? OBSERVATION_RETRY_SECONDS
        : undefined;
  return {
    conditions,
    status: statusOf(input, candidate, live),
    children: childrenOf(input, candidate, adoption, live),
    ...(write ? { write } : {}),
    ...(resyncAfterSeconds !== undefined ? { resyncAfterSeconds } : {}),
  };
}

/**
 * A failed write, and the policy read back right after it (`readback`, from GET /api/v1/policy; null = the
 * database stores none; absent when not read, e.g. in file mode).
 */
export type WriteOutcome = { ok: true } | { ok: false; error: HeadscaleError; readback?: Outcome<HsPolicy | null> };

/**
 * How far a failed PUT got in Headscale 0.29's SetPolicy (hscontrol/grpcv1.go), which swaps the live policy
 * manager *before* the SSH check and the database insert:
 * - "refused": parsing, validation or `tests` failed ("setting policy: …", or a 0.30 400): nothing changed;
 * - "swapped": a later step failed (SetPolicy's own plain errors, gRPC code 2: "verifying SSH rules: …" or a
 *   database error): the rejected policy is live in memory, unstored, until a restart or policy reload;
 * - "unknown": anything else (transport, a proxy's answer, another gRPC code, an unreadable body).
 */
type WriteStage = "refused" | "swapped" | "unknown";

function writeStage(error: HeadscaleError): WriteStage {
  if (error.kind !== "http") return "unknown";
  if (/^setting policy:/i.test(error.detail) || error.status === 400) return "refused";
  return error.grpcCode === 2 ? "swapped" : "unknown";
}

const FROM_MEMORY =
  "Headscale already serves it from memory (0.29 swaps the policy in before the SSH check and the database write), while";

/** PolicyApplied after a failed write (also what a backing-off retry repeats), from the error and the read-back. */
export function writeFailureCondition(
  error: HeadscaleError,
  readback?: Outcome<HsPolicy | null>,
  rendered?: string,
): ConditionInput {
  if (error.classification === "policyFileMode") {
    return cond(C.PolicyApplied, "False", R.PolicyModeFile, `write skipped: ${oneLine(error.message)}`);
  }
  const stage = writeStage(error);
  const rejected = error.classification === "policyInvalid" || stage === "refused";
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
  return cond(C.PolicyApplied, "False", rejected ? R.PolicyRejected : R.ApplyFailed, message);
}

/** Folds the outcome of `decision.write` into conditions and status. */
export function foldWrite(decision: TailnetDecision, outcome: WriteOutcome, now: Date): TailnetDecision {
  const write = decision.write;
  if (!write) return decision;
  const { write: _done, ...rest } = decision;
  const replace = (c: ConditionInput) => rest.conditions.map((x) => (x.type === C.PolicyApplied ? c : x));
  if (!outcome.ok) {
    return { ...rest, conditions: replace(writeFailureCondition(outcome.error, outcome.readback, write.hash)) };
  }
  const drift = write.drift
    ? `; it replaced ${write.drift.live === "none" ? "an empty policy" : write.drift.live}, changed outside the operator (last applied ${write.drift.lastApplied})`
    : "";
  const policy: PolicyStatus = { ...(rest.status.policy ?? {}), appliedHash: write.hash, appliedAt: toK8sTime(now) };
  return {
    ...rest,
    conditions: replace(cond(C.PolicyApplied, "True", R.Applied, `wrote the rendered policy ${write.hash}${drift}`)),
    status: { ...rest.status, policy: orderPolicy(policy) },
  };
}

/** Status keys in the api.md order, so a write and a later InSync sync serialize the same way. */
function orderPolicy(p: PolicyStatus): PolicyStatus {
  const out: PolicyStatus = {};
  if (p.renderedHash) out.renderedHash = p.renderedHash;
  if (p.appliedHash) out.appliedHash = p.appliedHash;
  if (p.appliedAt) out.appliedAt = p.appliedAt;
  if (p.generated) out.generated = p.generated;
  return out;
}
