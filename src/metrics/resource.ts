/**
 * The generic resource metrics every kind publishes from its conditions:
 * tailnet_resource_condition (1 for the active reason, 0 for the latest reasons before it on that type)
 * and tailnet_resource_ready (only for the current-generation Ready condition).
 */
import type { Condition } from "../conditions/condition.js";
import { attachedMemo } from "../k8s/attached.js";
import { recordKey, SharedValues } from "../k8s/shared-values.js";
import { registryMemory } from "./memory.js";
import type { OperatorMetrics } from "./registry.js";

/**
 * What each object published: per condition type its reasons with a series, the active one last,
 * and the reason of its tailnet_resource_ready series. One entry per object (keyed kind/namespace/name)
 * so publishing, withdrawing and expiring touch only that object's entry, never every object's.
 */
interface Published {
  at: number;
  /**
   * Per condition type its reasons joined by NUL, the active one last: one reason (almost every type) is the
   * reason string itself, shared with every other object, where an array per type cost 20,000 objects × 7 types
   * arrays of heap (issue 36). The record is shared by the objects holding the same one (shared-values.ts), so
   * it is never changed in place: a change holds a new record.
   */
  reasons: Readonly<Record<string, string>>;
  ready: string | undefined;
}
const publishedFor = registryMemory<Published>("resourceSeries");
const sharedReasonsFor = attachedMemo<OperatorMetrics, SharedValues<Readonly<Record<string, string>>>>("sharedReasons");
const sharedReasons = (metrics: OperatorMetrics) => sharedReasonsFor.of(metrics, () => new SharedValues(recordKey));

/**
 * Series kept per object and condition type: the active reason and the ones just before it. A
 * condition that cycles through many reasons (a Headscale outage goes Unavailable, Timeout,
 * Unauthorized, …) would otherwise hold one series per reason it ever had, per object, for the
 * life of the process: at 20,000 objects that grew the server's memory without bound.
 */
export const MAX_REASON_SERIES = 3;

export interface ResourceId {
  kind: string;
  namespace: string;
  name: string;
}

/** Never in a condition reason (one CamelCase word). */
const SEP = "\u0000";
const NO_REASONS: Readonly<Record<string, string>> = Object.freeze({});

const keyOf = (id: ResourceId) => `${id.kind}/${id.namespace}/${id.name}`;
/** The id back from its key (a kind, a namespace and a name never hold "/"): an object per entry less (issue 36). */
const idOf = (key: string): ResourceId => {
  const [kind, namespace, name] = key.split("/");
  return { kind, namespace, name };
};

export function publishConditions(
  metrics: OperatorMetrics,
  id: ResourceId,
  conditions: readonly Condition[],
  generation: number,
  nowMs: number = Date.now(),
): void {
  const memory = publishedFor(metrics);
  const key = keyOf(id);
  let entry = memory.get(key);
  if (!entry) {
    entry = { at: nowMs, reasons: NO_REASONS, ready: undefined };
    memory.set(key, entry);
  }
  entry.at = nowMs;
  let reasonsNow: Record<string, string> | undefined; // a copy, made at the first change
  for (const c of conditions) {
    const held = (reasonsNow ?? entry.reasons)[c.type];
    // the active reason is the last one: the whole string when it is the only one
    if (held === c.reason || held?.endsWith(`${SEP}${c.reason}`)) continue; // its series is 1, the earlier ones 0
    const reasons = held === undefined ? [] : held.split(SEP);
    const active = reasons[reasons.length - 1];
    if (active !== undefined) metrics.resourceCondition.set({ ...id, type: c.type, reason: active }, 0);
    const next = [...reasons.filter((r) => r !== c.reason), c.reason];
    for (const dropped of next.splice(0, Math.max(0, next.length - MAX_REASON_SERIES)))
      metrics.resourceCondition.remove({ ...id, type: c.type, reason: dropped });
    reasonsNow ??= { ...entry.reasons };
    reasonsNow[c.type] = next.length === 1 ? c.reason : next.join(SEP);
    metrics.resourceCondition.set({ ...id, type: c.type, reason: c.reason }, 1);
  }
  if (reasonsNow) {
    entry.reasons = sharedReasons(metrics).swap(entry.reasons, reasonsNow);
  }
  const ready = conditions.find((c) => c.type === "Ready");
  const current = ready && ready.observedGeneration === generation ? ready : undefined;
  if (entry.ready !== undefined && entry.ready !== current?.reason)
    metrics.resourceReady.remove({ ...id, reason: entry.ready });
  if (current) metrics.resourceReady.set({ ...id, reason: current.reason }, current.status === "True" ? 1 : 0);
  entry.ready = current?.reason;
}

/** Withdraws every resource series of an object (deleted, or a suspended gateway). */
export function withdrawResource(metrics: OperatorMetrics, id: ResourceId): void {
  const memory = publishedFor(metrics);
  const key = keyOf(id);
  const entry = memory.get(key);
  if (!entry) return;
  for (const [type, reasons] of Object.entries(entry.reasons))
    for (const reason of reasons.split(SEP)) metrics.resourceCondition.remove({ ...id, type, reason });
  if (entry.ready !== undefined) metrics.resourceReady.remove({ ...id, reason: entry.ready });
  sharedReasons(metrics).release(entry.reasons);
  memory.delete(key);
}

/** What the memory holds (tests): objects published, and distinct condition-reason records they share. */
export function resourceMemory(metrics: OperatorMetrics): { objects: number; reasonRecords: number } {
  return { objects: publishedFor(metrics).size, reasonRecords: sharedReasons(metrics).size };
}

/** The kinds' own per-object series and memories (egress targets, ingress exposes), expired with the object. */
const staleWithdrawers: ((metrics: OperatorMetrics, id: ResourceId) => void)[] = [];

/** Registers a kind's withdrawal of its per-object series, called for every object the sweep expires. */
export function onStaleResource(withdraw: (metrics: OperatorMetrics, id: ResourceId) => void): void {
  staleWithdrawers.push(withdraw);
}

/**
 * Several replicas each export the series of the syncs they answered; an object whose syncs now go
 * to another replica (or that was deleted while this one was not asked) would otherwise keep a stale
 * series here and hold an alert firing. Series not refreshed within `maxAgeMs` (a few resync periods)
 * are withdrawn before every scrape, with the object's key expiry and its kind's own series and
 * memories (onStaleResource), so objects deleted while another replica answered hold nothing here.
 *
 * Only while hooks flow (`hooksFlowingForMs`, HookActivity): an object's series is stale when this
 * replica kept answering other hooks for longer than `maxAgeMs` without this one. When no hook arrives
 * at all (Metacontroller stopped, the webhook unreachable, a token mismatch) nothing is stale: the last
 * state stays exported, so a NotReady alert keeps firing and TailnetHooksSilent says why.
 */
export function sweepStaleResources(
  metrics: OperatorMetrics,
  nowMs: number,
  maxAgeMs: number,
  hooksFlowingForMs = Number.POSITIVE_INFINITY,
): number {
  if (hooksFlowingForMs < maxAgeMs) return 0;
  let swept = 0;
  for (const [key, { at }] of [...publishedFor(metrics).entries()]) {
    if (nowMs - at > maxAgeMs) {
      const id = idOf(key);
      withdrawResource(metrics, id);
      metrics.authKeyExpiry.remove({ kind: id.kind, namespace: id.namespace, name: id.name });
      for (const withdraw of staleWithdrawers) withdraw(metrics, id);
      swept++;
    }
  }
  return swept;
}
