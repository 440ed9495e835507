/**
 * The egress metrics, set from the same decision as status: tailnet_egress_target_state (1 for
 * the target's current state, 0 for the other states, so `== 1` selects and a change shows as a
 * flip), the deprecated tailnetegress_routes_missing, and the pre-auth key expiry. Series of a
 * target that left the spec, or of a deleted egress, are removed.
 */
import { API_VERSION } from "../../../api/schemas.js";
import { TargetReason } from "../../../conditions/tables/egress.js";
import { attachedMemo } from "../../../k8s/attached.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { SharedValues, stringsKey } from "../../../k8s/shared-values.js";
import { registryMemory } from "../../../metrics/memory.js";
import type { OperatorMetrics } from "../../../metrics/registry.js";
import { onStaleResource } from "../../../metrics/resource.js";
import type { EgressMetricValues } from "./decide.js";

export const TARGET_STATES: readonly string[] = ["Ready", ...Object.values(TargetReason)];

/**
 * The state published per target, per egress ("namespace/name"), per registry: the process is otherwise
 * stateless. A resync whose states did not change sets nothing (16 targets × every state: that many label
 * hashes per sync, the largest cost of the sync hook in bench/hooks.ts); a changed state flips two series.
 * Each egress holds [target, state, target, state, …] in spec order, shared by the egresses holding the same
 * (k8s/shared-values.ts): a Map per egress held 1.2 MiB at 20,000 objects (issue 36).
 */
type TargetStates = readonly string[];
const memoryOf = registryMemory<TargetStates>("egressTargetSeries");
const sharedStatesFor = attachedMemo<OperatorMetrics, SharedValues<TargetStates>>("egressTargetStates");
const sharedStates = (metrics: OperatorMetrics) => sharedStatesFor.of(metrics, () => new SharedValues(stringsKey));
const NO_TARGETS: TargetStates = Object.freeze([]);

const idOf = (parent: K8sObject) => ({ namespace: parent.metadata.namespace ?? "", name: parent.metadata.name });

function removeTarget(metrics: OperatorMetrics, id: { namespace: string; name: string }, target: string): void {
  for (const state of TARGET_STATES) metrics.egressTargetState.remove({ ...id, target, state });
}

const statesOf = (list: TargetStates) => {
  const out = new Map<string, string>();
  for (let i = 0; i < list.length; i += 2) out.set(list[i], list[i + 1]);
  return out;
};

export function publishEgressMetrics(metrics: OperatorMetrics, parent: K8sObject, values: EgressMetricValues): void {
  const id = idOf(parent);
  const key = `${id.namespace}/${id.name}`;
  const memory = memoryOf(metrics);
  const held = memory.get(key) ?? NO_TARGETS;
  const now = new Map((values.targets ?? []).map((t) => [t.name, t.state]));
  const list = [...now].flat();
  if (list.length !== held.length || list.some((x, i) => x !== held[i])) {
    const before = statesOf(held);
    for (const target of before.keys()) if (!now.has(target)) removeTarget(metrics, id, target);
    for (const [target, state] of now) {
      const was = before.get(target);
      if (was === state) continue;
      if (was === undefined) {
        for (const s of TARGET_STATES) metrics.egressTargetState.set({ ...id, target, state: s }, s === state ? 1 : 0);
      } else {
        if (TARGET_STATES.includes(was)) metrics.egressTargetState.set({ ...id, target, state: was }, 0);
        if (TARGET_STATES.includes(state)) metrics.egressTargetState.set({ ...id, target, state }, 1);
      }
    }
    memory.set(key, sharedStates(metrics).swap(memory.get(key), list));
  }

  if (values.routesMissing === undefined) metrics.egressRoutesMissingDeprecated.remove(id);
  else metrics.egressRoutesMissingDeprecated.set(id, values.routesMissing);

  const keyId = { kind: parent.kind, ...id };
  if (values.authKeyExpiresAt) metrics.authKeyExpiry.set(keyId, Math.floor(values.authKeyExpiresAt.getTime() / 1000));
  else metrics.authKeyExpiry.remove(keyId);
}

/** Removes every egress series of this object (it was deleted). */
export function withdrawEgressMetrics(metrics: OperatorMetrics, parent: K8sObject): void {
  publishEgressMetrics(metrics, parent, {});
  const key = `${idOf(parent).namespace}/${idOf(parent).name}`;
  sharedStates(metrics).release(memoryOf(metrics).get(key));
  memoryOf(metrics).delete(key);
}

// An egress whose syncs stopped coming here (deleted while another replica answered): its series and memory go.
onStaleResource((metrics, id) => {
  if (id.kind !== "TailnetEgress") return;
  withdrawEgressMetrics(metrics, {
    apiVersion: API_VERSION,
    kind: id.kind,
    metadata: { namespace: id.namespace, name: id.name },
  });
});
