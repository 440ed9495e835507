/**
 * The generic resource metrics every kind publishes from its conditions:
 * tailnet_resource_condition (1 for the active reason, 0 for reasons seen before on that type)
 * and tailnet_resource_ready (only for the current-generation Ready condition).
 */
import type { Condition } from "../conditions/condition.js";
import { registryMemory } from "./memory.js";
import type { OperatorMetrics } from "./registry.js";

/** Reasons seen per object and condition type. */
const seenFor = registryMemory<Set<string>>();
/** When each object's series were last published, for expiring them (see sweepStaleResources). */
const publishedFor = registryMemory<{ id: ResourceId; at: number }>();

export interface ResourceId {
  kind: string;
  namespace: string;
  name: string;
}

export function publishConditions(
  metrics: OperatorMetrics,
  id: ResourceId,
  conditions: readonly Condition[],
  generation: number,
  nowMs: number = Date.now(),
): void {
  publishedFor(metrics).set(`${id.kind}/${id.namespace}/${id.name}`, { id, at: nowMs });
  const memory = seenFor(metrics);
  for (const c of conditions) {
    const key = `${id.kind}/${id.namespace}/${id.name}/${c.type}`;
    const reasons = memory.get(key) ?? new Set<string>();
    for (const r of reasons) {
      if (r !== c.reason) metrics.resourceCondition.set({ ...id, type: c.type, reason: r }, 0);
    }
    reasons.add(c.reason);
    memory.set(key, reasons);
    metrics.resourceCondition.set({ ...id, type: c.type, reason: c.reason }, 1);
  }
  const ready = conditions.find((c) => c.type === "Ready");
  metrics.resourceReady.remove({ ...id, reason: "" });
  for (const key of memory.keys()) {
    if (key === `${id.kind}/${id.namespace}/${id.name}/Ready`) {
      for (const r of memory.get(key) ?? []) metrics.resourceReady.remove({ ...id, reason: r });
    }
  }
  if (ready && ready.observedGeneration === generation) {
    metrics.resourceReady.set({ ...id, reason: ready.reason }, ready.status === "True" ? 1 : 0);
  }
}

/** Withdraws every resource series of an object (deleted, or a suspended gateway). */
export function withdrawResource(metrics: OperatorMetrics, id: ResourceId): void {
  publishedFor(metrics).delete(`${id.kind}/${id.namespace}/${id.name}`);
  const memory = seenFor(metrics);
  const prefix = `${id.kind}/${id.namespace}/${id.name}/`;
  for (const [key, reasons] of memory) {
    if (!key.startsWith(prefix)) continue;
    const type = key.slice(prefix.length);
    for (const r of reasons) {
      metrics.resourceCondition.remove({ ...id, type, reason: r });
      if (type === "Ready") metrics.resourceReady.remove({ ...id, reason: r });
    }
    memory.delete(key);
  }
}

/**
 * Several replicas each export the series of the syncs they answered; an object whose syncs now go
 * to another replica (or that was deleted while this one was not asked) would otherwise keep a stale
 * series here and hold an alert firing. Series not refreshed within `maxAgeMs` (a few resync periods)
 * are withdrawn before every scrape.
 */
export function sweepStaleResources(metrics: OperatorMetrics, nowMs: number, maxAgeMs: number): number {
  const times = publishedFor(metrics);
  let swept = 0;
  for (const { id, at } of [...times.values()]) {
    if (nowMs - at > maxAgeMs) {
      withdrawResource(metrics, id);
      swept++;
    }
  }
  return swept;
}
