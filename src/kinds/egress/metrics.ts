/**
 * The egress metrics, set from the same decision as status: tailnet_egress_target_state (1 for
 * the target's current state, 0 for the other states, so `== 1` selects and a change shows as a
 * flip), the deprecated tailnetegress_routes_missing, and the pre-auth key expiry. Series of a
 * target that left the spec, or of a deleted egress, are removed.
 */
import { TargetReason } from "../../conditions/reasons.js";
import type { K8sObject } from "../../k8s/objects.js";
import { registryMemory } from "../../metrics/memory.js";
import type { OperatorMetrics } from "../../metrics/registry.js";
import type { EgressMetricValues } from "./decide.js";

export const TARGET_STATES: readonly string[] = ["Ready", ...Object.values(TargetReason)];

/** Targets published per egress ("namespace/name"), per registry: the process is otherwise stateless. */
const memoryOf = registryMemory<Set<string>>();

const idOf = (parent: K8sObject) => ({ namespace: parent.metadata.namespace ?? "", name: parent.metadata.name });

function removeTarget(metrics: OperatorMetrics, id: { namespace: string; name: string }, target: string): void {
  for (const state of TARGET_STATES) metrics.egressTargetState.remove({ ...id, target, state });
}

export function publishEgressMetrics(metrics: OperatorMetrics, parent: K8sObject, values: EgressMetricValues): void {
  const id = idOf(parent);
  const key = `${id.namespace}/${id.name}`;
  const memory = memoryOf(metrics);
  const before = memory.get(key) ?? new Set<string>();
  const now = new Set((values.targets ?? []).map((t) => t.name));
  for (const target of before) if (!now.has(target)) removeTarget(metrics, id, target);
  for (const t of values.targets ?? []) {
    for (const state of TARGET_STATES) {
      metrics.egressTargetState.set({ ...id, target: t.name, state }, state === t.state ? 1 : 0);
    }
  }
  memory.set(key, now);

  if (values.routesMissing === undefined) metrics.egressRoutesMissingDeprecated.remove(id);
  else metrics.egressRoutesMissingDeprecated.set(id, values.routesMissing);

  const keyId = { kind: parent.kind, ...id };
  if (values.authKeyExpiresAt) metrics.authKeyExpiry.set(keyId, Math.floor(values.authKeyExpiresAt.getTime() / 1000));
  else metrics.authKeyExpiry.remove(keyId);
}

/** Removes every egress series of this object (it was deleted). */
export function withdrawEgressMetrics(metrics: OperatorMetrics, parent: K8sObject): void {
  publishEgressMetrics(metrics, parent, {});
  memoryOf(metrics).delete(`${idOf(parent).namespace}/${idOf(parent).name}`);
}
