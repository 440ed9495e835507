/**
 * The gateway's NodeIdentity condition and its renames (design §2.5): a replica that re-registered was named `<host>-1` by Headscale while its
 * predecessor held the name (juanfont/headscale hscontrol/state/node_store.go resolveGivenName). The shared plan
 * (src/kinds/shared/replica-nodes.ts planRenames) names a rename only for a settled binding whose predecessor is
 * gone and whose wanted label no other node holds; the gateway writes it only when its node identity is verified,
 * as its other node writes (plan.ts), and reports the outcome in NodeIdentity. Pure.
 */
import { conditionsOf } from "../../../conditions/table.js";
import { GatewayCondition as C, GATEWAY_REASONS, GatewayReason as R } from "../../../conditions/tables/gateway.js";
import { type NodeStatusItem, nodeIdentityVerdict } from "../../shared/replica-nodes.js";
import type { GatewayWriteOutcome } from "./act.js";
import type { FreshVerdict, GatewayConditionOf, GatewayInputs } from "./plan.js";
import type { GatewayRenamed } from "./renames.js";

const { cond } = conditionsOf(GATEWAY_REASONS);

/** What NodeIdentity adds to its message: the renames this sync made or failed, and the names held by others. */
export function renameReport(v: FreshVerdict, renamed: readonly GatewayRenamed[] | undefined): string {
  const parts = (renamed ?? []).map((r) =>
    r.error
      ? `renaming node ${r.id} from ${r.from} to ${r.name} failed: ${r.error} (retrying)`
      : `renamed node ${r.id} from ${r.from} to ${r.name}`,
  );
  parts.push(...(v.facts?.plan.renameBlocked ?? []));
  return parts.map((p) => `; ${p}`).join("");
}

/** status.nodes[] with the names this sync's renames gave (so the next sync does not move the status). */
export function withRenames(nodes: NodeStatusItem[], renamed: readonly GatewayRenamed[] | undefined): NodeStatusItem[] {
  const done = new Map((renamed ?? []).filter((r) => !r.error).map((r) => [r.id, r.name]));
  return nodes.map((n) => {
    const name = done.get(n.id);
    return name ? { ...n, name } : n;
  });
}

/** NodeIdentity: which node each replica is (the shared verdict); Migrating while the legacy Deployment runs. */
export function nodeIdentity(
  input: GatewayInputs,
  v: FreshVerdict,
  out: GatewayWriteOutcome,
): GatewayConditionOf<"NodeIdentity"> {
  if (!v.facts) {
    const error = input.headscale.nodes.ok ? "" : input.headscale.nodes.error;
    return cond(C.NodeIdentity, "Unknown", R.NotObserved, `cannot list Headscale's nodes: ${error}`);
  }
  const verdict = nodeIdentityVerdict(v.facts.plan, input.spec.replicas, !!input.observed.deployment);
  const message =
    verdict.reason === "Migrating"
      ? `the gateway Deployment from before per-replica identity still runs; it goes once every replica is bound, online and has its routes approved`
      : verdict.message;
  return cond(C.NodeIdentity, verdict.status, R[verdict.reason], `${message}${renameReport(v, out.renamed)}`);
}
