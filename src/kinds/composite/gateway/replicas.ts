/**
 * The gateway's per-replica children (pure; issue 32): for replica i its ServiceAccount, Role, RoleBinding and
 * state Secret (src/kinds/shared/replica.ts), then its StatefulSet once those are observed (containerboot exits on
 * a failed permission check at boot, cmd/containerboot/settings.go setupKube). A template change is rolled one
 * replica at a time (src/kinds/shared/staged-rollout.ts, the rule the agents share), so the routes stay served by
 * another node (Headscale fails over) — with one replica a rollout is a restart gap of the same node. A replica a
 * scale-down removed loses its StatefulSet at once and its identity children only once its nodes are deleted
 * (replica-nodes.ts removed).
 * The legacy gateway Deployment (before per-replica identity) and its key Secrets are kept as observed until every
 * replica is bound, online and has the routes approved (§2.8 of the design; then HA fails over to the new nodes).
 */
import { type K8sObject, reuseObserved } from "../../../k8s/objects.js";
import {
  identityObserved,
  isStateSecret,
  keptStateSecret,
  replicaIdentityChildren,
  replicaIndexOf,
} from "../../shared/replica.js";
import { stageRollout } from "../../shared/staged-rollout.js";
import { gatewayReplica } from "./children.js";
import type { FreshVerdict, GatewayInputs } from "./plan.js";
import { renderStatefulSet } from "./workload.js";

const indexOf = (o: K8sObject) => replicaIndexOf(o) ?? -1;

/** Scaled to zero (suspend): state and nodes stay, so resume brings back the same nodes. */
export function scaledToZero(children: readonly K8sObject[]): K8sObject[] {
  return children.map((c) =>
    c.kind === "Deployment" || c.kind === "StatefulSet" ? { ...c, spec: { ...(c.spec as object), replicas: 0 } } : c,
  );
}

/** A child kept as observed; a state Secret only as metadata (its data is tailscaled's, never answered). */
const kept = (o: K8sObject) => (isStateSecret(o) ? keptStateSecret(o) : reuseObserved(o));

/** Every replica's rendered StatefulSet (the stamps WorkloadCurrent compares against). */
export function renderedStatefulSets(input: GatewayInputs): K8sObject[] {
  const keyName = input.key.secret?.metadata.name;
  return Array.from({ length: input.spec.replicas }, (_, i) => renderStatefulSet(input, i, keyName));
}

/** The StatefulSets to answer: rendered, each only after its identity children, staged one replica at a time. */
function statefulSets(input: GatewayInputs, rendered: readonly K8sObject[]): K8sObject[] {
  const observed = new Map(input.observed.statefulSets.map((s) => [indexOf(s), s]));
  if (!input.key.secret) {
    // without a key containerboot would start an interactive login: nothing new runs, what runs is kept
    const keep = [...observed].filter(([i]) => i < input.spec.replicas).map(([, s]) => reuseObserved(s));
    return input.spec.suspend ? scaledToZero(keep) : keep;
  }
  const answer = rendered.filter(
    (want) =>
      observed.has(indexOf(want)) ||
      identityObserved(gatewayReplica(input.parent, indexOf(want)), input.observed.children),
  );
  return stageRollout(answer, observed, { replicas: input.spec.replicas, suspended: input.spec.suspend });
}

/** Removed replicas' identity children, kept until their nodes are deleted (this sync or before). */
function removedChildren(input: GatewayInputs, v: FreshVerdict, deleted: ReadonlySet<string>): K8sObject[] {
  const identityKinds = new Set(["ServiceAccount", "Role", "RoleBinding", "Secret"]);
  const gone = (index: number) => {
    const r = v.facts?.plan.removed.find((x) => x.index === index);
    if (!v.facts || !r || r.waiting) return false;
    return r.nodes.every((n) => deleted.has(n.id));
  };
  return input.observed.children.filter(
    (o) =>
      identityKinds.has(o.kind) &&
      indexOf(o) >= input.spec.replicas &&
      o.metadata.labels?.["tailnet.internal/owner-uid"] === input.parent.metadata.uid &&
      !gone(indexOf(o)),
  );
}

/** Every replica bound to an online node that has the spec's routes approved: the legacy Deployment may go. */
export function migrated(input: GatewayInputs, v: FreshVerdict): boolean {
  const bindings = v.facts?.plan.bindings ?? [];
  return (
    v.verified &&
    bindings.length === input.spec.replicas &&
    bindings.every(
      (b) =>
        b.node?.online &&
        (b.verdict === "stable" || b.verdict === "firstBinding") &&
        input.spec.routes.every((r) => b.node?.approvedRoutes.includes(r)),
    )
  );
}

/** The legacy Deployment and its key Secrets while the move to per-replica identity is under way. */
function legacyChildren(input: GatewayInputs, v: FreshVerdict): K8sObject[] {
  const d = input.observed.deployment;
  if (!d || migrated(input, v)) return [];
  const keep = [reuseObserved(d), ...input.observed.legacyKeySecrets.map(reuseObserved)];
  return input.spec.suspend ? scaledToZero(keep) : keep;
}

export function replicaChildren(
  input: GatewayInputs,
  v: FreshVerdict,
  rendered: readonly K8sObject[],
  deleted: ReadonlySet<string>,
): K8sObject[] {
  const identity = Array.from({ length: input.spec.replicas }, (_, i) =>
    replicaIdentityChildren(gatewayReplica(input.parent, i)),
  ).flat();
  return [
    ...identity,
    ...statefulSets(input, rendered),
    ...removedChildren(input, v, deleted).map(kept),
    ...legacyChildren(input, v),
  ];
}
