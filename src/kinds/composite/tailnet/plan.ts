/**
 * The Tailnet's plan (pure): at most one policy write, with the guards that allow it, and the PolicyApplied
 * condition that says why there is none. Write rules (api.md): only in Apply mode, only in database mode,
 * only with unique user names, never an empty or refused render, only after policy/check accepted it, never
 * over a live policy the operator did not write when that drops anything (adoption.ts), never while a failed
 * write of the same render backs off, and only when the rendered hash differs from the live one.
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../../conditions/reasons.js";
import { policyConfigMapName } from "../../../k8s/labels.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { previousStatus } from "../../../pipeline/status.js";
import { operatorWrittenHash } from "../../../policy/marker.js";
import type { GeneratedCounts } from "../../../policy/merge.js";
import { lostOverLiveText } from "./adoption.js";
import { LIVE_POLICY_KEY, livePolicyConfigMapName } from "./children.js";
import type { PolicyCandidate } from "./compose.js";
import {
  duplicateUsers,
  headscaleCompatible,
  NO_CALL,
  oneLine,
  policyMode,
  policyRendered,
  tailnetConditions,
} from "./conditions.js";
import type { LeftOut } from "./left-out.js";
import type { HeadscaleObservations, TailnetObservation } from "./observe.js";
import { planRotation, type RotationPlan, type RotationStatus } from "./rotation.js";
import { describeLive, describeStored, liveHash, writeFailureCondition } from "./write.js";

const { cond } = tailnetConditions;

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

export interface TailnetPlan {
  /** PolicyApplied as planned: why nothing is written, or "write in progress" while `write` is set. */
  applied: ConditionInput;
  write?: PolicyWrite;
  /** What writing the render would drop from a live policy the operator did not write (see adoption.ts). */
  adoption?: string[];
  /** `applied` repeats a failed write that backs off until then. */
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
  if (!candidate || !hs?.policy.ok || hs.policy.value === null || live === candidate.hash) return undefined;
  if (inputs.base.kind !== "none" || inputs.replaceLivePolicy) return undefined;
  if (previousPolicy(input.parent).appliedHash) return undefined;
  // ours by its marker even when the parent's status (a cached copy) does not show the write yet
  if (operatorWrittenHash(hs.policy.value.policy)) return undefined;
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

/** The exact commands that keep the live policy: export it into a base ConfigMap and reference it. */
function keepLiveCommand(input: TailnetPlanInput): string {
  const ns = input.operatorNamespace;
  const name = input.observed.inputs.name;
  const base = `tailnet-${name}-base`;
  const patch = JSON.stringify({ spec: { policy: { baseConfigMapRef: { namespace: ns, name: base } } } });
  const key = LIVE_POLICY_KEY.replace(".", "\\.");
  return `kubectl -n ${ns} get configmap ${livePolicyConfigMapName(name)} -o jsonpath='{.data.${key}}' > ${LIVE_POLICY_KEY} && kubectl -n ${ns} create configmap ${base} --from-file=${LIVE_POLICY_KEY} && kubectl patch tailnets.tailnet.internal ${name} --type merge -p '${patch}'`;
}

/** The first observation a write depends on that failed (the live policy is checked separately). */
function writeBlocker(hs: HeadscaleObservations): string | undefined {
  if (!hs.health.ok) return oneLine(hs.health.error.message);
  if (!hs.health.value.databaseConnectivity) return "Headscale reports no database connectivity";
  if (!hs.users.ok) return oneLine(hs.users.error.message);
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

/** PolicyApplied before any write, and the write when one is due (the order is the order of the checks). */
function planPolicy(input: TailnetPlanInput): TailnetPlan {
  const { inputs, hs, render, check, pendingFailure } = input.observed;
  const candidate = render.ok ? render.candidate : undefined;
  const live = liveHash(hs);
  const rendered = policyRendered(render, check, inputs.base.kind === "none");
  const compatible = headscaleCompatible(hs, check);
  const mode = policyMode(hs);
  const adoption = adoptionLoss(input, candidate, live);
  const plan = (applied: ConditionInput): TailnetPlan => ({ applied, ...(adoption ? { adoption } : {}) });
  const type = C.PolicyApplied;

  if (!inputs.connection.ok) return plan(cond(type, "False", R.NoAPIKey, inputs.connection.message));
  if (!hs) return plan(cond(type, "False", R.NoAPIKey, NO_CALL));

  if (inputs.settings.policyMode === "DryRun") {
    if (!candidate) {
      return plan(
        cond(
          type,
          "Unknown",
          R.DryRun,
          `DryRun: nothing written; no policy rendered (PolicyRendered=${rendered.reason})`,
        ),
      );
    }
    if (live === undefined)
      return plan(cond(type, "Unknown", R.DryRun, "DryRun: nothing written; the live policy could not be read"));
    if (live === candidate.hash) {
      return plan(cond(type, "True", R.DryRun, `DryRun: the live policy already equals the rendered one (${live})`));
    }
    const refusal = adoption
      ? `; in Apply mode the write would be refused (AdoptionRefused): it would drop ${adoption.join(", ")}`
      : "";
    return plan(
      cond(
        type,
        "False",
        R.DryRun,
        `DryRun: nothing written; the rendered policy ${candidate.hash} differs: ${describeLive(live)}${refusal}`,
      ),
    );
  }

  if (!hs.policy.ok) {
    return plan(cond(type, "Unknown", R.ApplyFailed, `not written: ${oneLine(hs.policy.error.message)}`));
  }
  if (candidate && live === candidate.hash) {
    return plan(cond(type, "True", R.InSync, `Headscale holds the rendered policy ${candidate.hash}`));
  }
  const blocker = writeBlocker(hs);
  if (blocker) return plan(cond(type, "Unknown", R.ApplyFailed, `not written: ${blocker}`));
  if (!candidate) {
    if (rendered.reason === R.CannotVerify) {
      return plan(cond(type, "Unknown", R.ApplyFailed, `not written: ${rendered.message}`));
    }
    // A fresh Tailnet: no base and nothing generated yet is not a refusal, just nothing to do.
    if (rendered.reason === R.PolicyEmpty && inputs.base.kind === "none") {
      return plan(
        cond(
          type,
          "False",
          R.NothingToApply,
          `nothing to apply yet: there is no base policy (spec.policy.baseConfigMapRef) and no workload object of this Tailnet generates a rule; Headscale's policy is left as it is (${describeStored(live ?? null)})`,
        ),
      );
    }
    return plan(
      cond(
        type,
        "False",
        R.PolicyRejected,
        `not written: the render was refused (PolicyRendered=${rendered.reason}); nothing was sent to Headscale (${describeStored(live ?? null)})`,
      ),
    );
  }
  if (mode.reason === R.File) {
    return plan(
      cond(
        type,
        "False",
        R.PolicyModeFile,
        `write skipped: Headscale reads the policy from a file (policy.mode file); put policy.json of ConfigMap ${input.operatorNamespace}/${policyConfigMapName(inputs.name)} into that file and reload Headscale, or set policy.mode: database`,
      ),
    );
  }
  if (check && !check.ok && check.error.classification === "policyInvalid") {
    return plan(
      cond(
        type,
        "False",
        R.PolicyRejected,
        `Headscale rejects the rendered policy (POST /api/v1/policy/check): ${oneLine(check.error.detail)}; nothing was written (${describeStored(live ?? null)})`,
      ),
    );
  }
  if (compatible.status === "False") {
    return plan(cond(type, "False", R.ApplyFailed, `not written: Headscale is not compatible: ${compatible.message}`));
  }
  if (!check?.ok) {
    const why = check ? oneLine(check.error.message) : "not probed";
    return plan(cond(type, "Unknown", R.ApplyFailed, `not written: the policy/check probe failed: ${why}`));
  }
  const dups = hs.users.ok ? duplicateUsers(hs.users.value) : [];
  if (dups.length > 0) {
    return plan(
      cond(
        type,
        "False",
        R.PolicyRejected,
        `write refused: Headscale user names held by more than one user (${dups.map((d) => d.name).join(", ")}) make Headscale reject every policy; nothing was written (${describeStored(live ?? null)})`,
      ),
    );
  }
  if (adoption) {
    return plan(
      cond(
        type,
        "False",
        R.AdoptionRefused,
        `write refused: Headscale holds a policy the operator did not write (${live}), and with no base policy (spec.policy.baseConfigMapRef) the render would replace it, dropping ${adoption.join(", ")}; to keep it, export it into a base and keep that file in Git: ${keepLiveCommand(input)}; to replace it, set spec.policy.replaceLivePolicy: true`,
      ),
    );
  }
  if (pendingFailure && input.now < pendingFailure.retryAt) {
    return {
      ...plan(writeFailureCondition(pendingFailure.error, pendingFailure.readback, candidate.hash)),
      retryAt: pendingFailure.retryAt,
    };
  }
  const drift = policyDrift(input, live);
  return {
    applied: cond(type, "Unknown", R.ApplyFailed, "write in progress"),
    write: { hash: candidate.hash, policy: candidate.policy, ...(drift ? { drift } : {}) },
  };
}
