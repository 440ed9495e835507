/**
 * PolicyApplied from what the plan found (pure; decide's): each PolicyFinding said as the condition an
 * administrator reads, with the field or command that changes it. A write's own answer is decide's
 * (appliedAfter), and a failed one's wording is write.ts writeFailureCondition, which BackingOff repeats.
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../../conditions/tables/tailnet.js";
import { policyConfigMapName } from "../../../k8s/labels.js";
import { LIVE_POLICY_KEY, livePolicyConfigMapName } from "./children.js";
import { NO_CALL, oneLine, tailnetConditions } from "./conditions.js";
import { HEADSCALE_MAX_POLICY_BYTES, type PolicyFinding } from "./plan.js";
import { describeLive, describeStored, writeFailureCondition } from "./write.js";

const { cond } = tailnetConditions;

/** Where the Tailnet's children live and its name: what the file-mode and adoption messages name. */
export interface AppliedContext {
  operatorNamespace: string;
  tailnet: string;
}

/** The exact commands that keep the live policy: export it into a base ConfigMap and reference it. */
function keepLiveCommand(ctx: AppliedContext): string {
  const ns = ctx.operatorNamespace;
  const name = ctx.tailnet;
  const base = `tailnet-${name}-base`;
  const patch = JSON.stringify({ spec: { policy: { baseConfigMapRef: { namespace: ns, name: base } } } });
  const key = LIVE_POLICY_KEY.replace(".", "\\.");
  return `kubectl -n ${ns} get configmap ${livePolicyConfigMapName(name)} -o jsonpath='{.data.${key}}' > ${LIVE_POLICY_KEY} && kubectl -n ${ns} create configmap ${base} --from-file=${LIVE_POLICY_KEY} && kubectl patch tailnets.tailnet.internal ${name} --type merge -p '${patch}'`;
}

type Found<K extends PolicyFinding["found"]> = Extract<PolicyFinding, { found: K }>;
type Say = { [K in PolicyFinding["found"]]: (f: Found<K>, ctx: AppliedContext) => ConditionInput };

const type = C.PolicyApplied;

/** One message per finding, in the order of plan's checks. */
const say: Say = {
  NoConnection: (f) => cond(type, "False", R.NoAPIKey, f.message),
  NoCall: () => cond(type, "False", R.NoAPIKey, NO_CALL),
  DryRunNotRendered: (f) =>
    cond(type, "Unknown", R.DryRun, `DryRun: nothing written; no policy rendered (PolicyRendered=${f.rendered})`),
  DryRunLiveUnread: () => cond(type, "Unknown", R.DryRun, "DryRun: nothing written; the live policy could not be read"),
  DryRunInSync: (f) =>
    cond(type, "True", R.DryRun, `DryRun: the live policy already equals the rendered one (${f.live})`),
  DryRunDiffers: (f) => {
    const refusal = f.adoption
      ? `; in Apply mode the write would be refused (AdoptionRefused): it would drop ${f.adoption.join(", ")}`
      : "";
    // the same body: only the cluster section lines would change (policy/sections.ts)
    const what =
      f.live === f.hash
        ? "only its cluster section lines differ from the live policy's"
        : `differs: ${describeLive(f.live)}`;
    return cond(type, "False", R.DryRun, `DryRun: nothing written; the rendered policy ${f.hash} ${what}${refusal}`);
  },
  LiveUnread: (f) => cond(type, "Unknown", R.ApplyFailed, `not written: ${oneLine(f.error.message)}`),
  InSync: (f) => cond(type, "True", R.InSync, `Headscale holds the rendered policy ${f.hash}`),
  HeadscaleFailing: (f) =>
    cond(
      type,
      "Unknown",
      R.ApplyFailed,
      `not written: ${f.error ? oneLine(f.error.message) : "Headscale reports no database connectivity"}`,
    ),
  RenderUnverified: (f) => cond(type, "Unknown", R.ApplyFailed, `not written: ${f.message}`),
  NothingToApply: (f) =>
    cond(
      type,
      "False",
      R.NothingToApply,
      `nothing to apply yet: there is no base policy (spec.policy.baseConfigMapRef) and no workload object of this Tailnet generates a rule; Headscale's policy is left as it is (${describeStored(f.live)})`,
    ),
  RenderRefused: (f) =>
    cond(
      type,
      "False",
      R.PolicyRejected,
      `not written: the render was refused (PolicyRendered=${f.rendered}); nothing was sent to Headscale (${describeStored(f.live)})`,
    ),
  FileMode: (_f, ctx) =>
    cond(
      type,
      "False",
      R.PolicyModeFile,
      `write skipped: Headscale reads the policy from a file (policy.mode file); put policy.json of ConfigMap ${ctx.operatorNamespace}/${policyConfigMapName(ctx.tailnet)} into that file and reload Headscale, or set policy.mode: database`,
    ),
  PolicyTooLarge: (f) =>
    cond(
      type,
      "False",
      R.PolicyTooLarge,
      `not written: the rendered policy is ${f.bytes} bytes and Headscale's API takes at most ${HEADSCALE_MAX_POLICY_BYTES} (grpc-go's 4 MiB message limit behind its REST API); nothing was sent (${describeStored(f.live)}); see status.policy.generated for what makes it up`,
    ),
  CheckRejected: (f) =>
    cond(
      type,
      "False",
      R.PolicyRejected,
      `Headscale rejects the rendered policy (POST /api/v1/policy/check): ${oneLine(f.detail)}; nothing was written (${describeStored(f.live)})`,
    ),
  Incompatible: (f) => cond(type, "False", R.ApplyFailed, `not written: Headscale is not compatible: ${f.message}`),
  CheckFailed: (f) =>
    cond(
      type,
      "Unknown",
      R.ApplyFailed,
      `not written: the policy/check probe failed: ${f.error ? oneLine(f.error.message) : "not probed"}`,
    ),
  DuplicateUsers: (f) =>
    cond(
      type,
      "False",
      R.PolicyRejected,
      `write refused: Headscale user names held by more than one user (${f.names.join(", ")}) make Headscale reject every policy; nothing was written (${describeStored(f.live)})`,
    ),
  AdoptionRefused: (f, ctx) =>
    cond(
      type,
      "False",
      R.AdoptionRefused,
      `write refused: Headscale holds a policy the operator did not write (${f.live}), and with no base policy (spec.policy.baseConfigMapRef) the render would replace it, dropping ${f.adoption.join(", ")}; to keep it, export it into a base and keep that file in Git: ${keepLiveCommand(ctx)}; to replace it, set spec.policy.replaceLivePolicy: true`,
    ),
  ClusterNameTaken: (f) =>
    cond(
      type,
      "False",
      R.ClusterNameTaken,
      `write refused: the policy's section ${f.id} was written by another installation (Tailnet uid ${f.uid}): give each cluster on this Headscale its own clusterName (operator config, chart value clusterName); if this cluster's Tailnet was recreated, set spec.policy.replaceLivePolicy: true to take the section over`,
    ),
  LegacyWriter: (f) =>
    cond(
      type,
      "False",
      R.LegacyWriter,
      `write refused: the live policy (${f.live}) was written by a tailnet-operator older than cluster sections after this Tailnet applied its own; it would replace this cluster's section at each of its syncs: upgrade every operator that writes this Headscale (docs/OPERATIONS.md "Upgrading")`,
    ),
  BackingOff: (f) => writeFailureCondition(f.failure.error, f.failure.readback, f.hash),
  WriteDue: () => cond(type, "Unknown", R.ApplyFailed, "write in progress"),
};

/** PolicyApplied as planned: why nothing is written, or "write in progress" while a write is due. */
export function plannedApplied(finding: PolicyFinding, ctx: AppliedContext): ConditionInput {
  return (say[finding.found] as (f: PolicyFinding, ctx: AppliedContext) => ConditionInput)(finding, ctx);
}
