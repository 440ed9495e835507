/**
 * What a sync observes of an agent's replicas (src/kinds/shared/agent-replicas.ts ReplicaObservation), built for
 * pure children and decide tests: by default every replica's SA, Role, RoleBinding and state Secret are observed,
 * so its StatefulSet is answered (creation order).
 */
import type { K8sObject } from "../../../src/k8s/objects.js";
import { agentReplica, type ReplicaObservation } from "../../../src/kinds/shared/agent-replicas.js";
import { replicaIdentityChildren } from "../../../src/kinds/shared/replica.js";

export function observedReplicas(
  parent: K8sObject,
  replicas: number,
  o: { identity?: boolean; statefulSets?: K8sObject[]; legacyDeployment?: K8sObject } = {},
): ReplicaObservation {
  const identity =
    o.identity === false
      ? []
      : Array.from({ length: replicas }, (_, i) => replicaIdentityChildren(agentReplica(parent, i))).flat();
  const statefulSets = new Map((o.statefulSets ?? []).map((s, i) => [i, s] as const));
  return {
    facts: [],
    running: new Set(statefulSets.keys()),
    pods: [],
    record: [],
    statefulSets,
    ...(o.legacyDeployment ? { legacyDeployment: o.legacyDeployment } : {}),
    legacyKeySecrets: [],
    identity,
  };
}
