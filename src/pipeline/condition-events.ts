/**
 * One Kubernetes Event per condition change, for every kind (issue 33): `kubectl describe` on any object
 * shows what changed and why without reading status. assembleStatus (status.ts) calls this with the
 * previous and the merged conditions of every sync and finalize, so no kind records its own.
 *
 * - reason: the condition's reason; message: `<type>: <message>` (messages carry no secret: they name
 *   operations and prefixes, never a key).
 * - type: Warning when the condition is in its troubled state (eventTypeOf), Normal otherwise.
 * - A condition Unknown with the reason another condition of the same answer carries at True or False is the
 *   "not evaluated because of X" echo (e.g. every condition Unknown/NoTailnet beside Ready=False/NoTailnet):
 *   the condition that says X records it, the echoes do not.
 * - Deduplicated per recorder: a (object, condition) pair records a (status, reason) only when it differs from
 *   the one recorded last, so a sync answered again before Metacontroller wrote the status (or a status write
 *   that failed) does not repeat the Event — the same idea as the decorators' recordExposed.
 * Recording is best effort and never delays or fails the answer.
 */

import type { Condition } from "../conditions/condition.js";
import { attachedMemo } from "../k8s/attached.js";
import { isRecord, type K8sObject } from "../k8s/objects.js";
import { recordKey, SharedValues } from "../k8s/shared-values.js";
import type { EventRecorder, OperatorEvent } from "./types.js";

/** Condition types whose True is the trouble (a conflict, an overlap, a failed renewal, an expired key). */
const TRUE_IS_TROUBLE = new Set([
  "ServiceConflict",
  "RouteConflict",
  "UnmanagedOverlap",
  "StaleNodes",
  "RenewalDue",
  "Expired",
]);
/**
 * Reasons that are a chosen or passing state whatever their status: a suspended gateway, an exit node nobody
 * asked for, a dry run, a node being registered, a renewal in progress, stale nodes cleaned up.
 */
const ROUTINE_REASONS = new Set([
  "Suspended",
  "NotRequested",
  "DryRun",
  "Provisioning",
  "Registering",
  "Migrating",
  "Renewing",
  "NotDue",
  "Deleted",
  "ExternallyManaged",
]);

/** Normal or Warning for a condition, from its type's polarity and its reason. */
export function eventTypeOf(c: Pick<Condition, "type" | "status" | "reason">): OperatorEvent["type"] {
  if (ROUTINE_REASONS.has(c.reason)) return "Normal";
  const fine = TRUE_IS_TROUBLE.has(c.type) ? "False" : "True";
  return c.status === fine ? "Normal" : "Warning";
}

/** Per condition type, the status/reason recorded last. */
type Recorded = Readonly<Record<string, string>>;
/**
 * Per recorder: object uid (or kind/namespace/name) → what was recorded last for it. Most objects of a kind
 * hold the same record (every condition at its steady reason), so the records are shared (k8s/shared-values.ts):
 * at 20,000 objects a key per object and condition type held 4.4 MiB (issue 36).
 */
const recordedLast = attachedMemo<EventRecorder, { byObject: Map<string, Recorded>; records: SharedValues<Recorded> }>(
  "recordedConditions",
);
/** Bounds the memory of one recorder, in objects; the least recently changed go first (a Map keeps insertion order). */
export const MAX_REMEMBERED = 20_000;
const memoryOf = (events: EventRecorder) =>
  recordedLast.of(events, () => ({
    byObject: new Map(),
    records: new SharedValues<Recorded>(recordKey),
  }));

function objectKey(o: K8sObject): string {
  return o.metadata.uid ?? `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}

function previousByType(previous: unknown): Map<string, Condition> {
  const list = Array.isArray(previous) ? previous : [];
  return new Map(list.filter((c): c is Condition => isRecord(c) && typeof c.type === "string").map((c) => [c.type, c]));
}

type Change = OperatorEvent & { condition: string; state: string; echo: boolean };

/** Every condition change of one answer, as the Event it calls for; `echo`: a "not evaluated" echo, not recorded. */
function conditionChanges(parent: K8sObject, previous: unknown, merged: readonly Condition[]): Change[] {
  const before = previousByType(previous);
  const decisive = new Set(merged.filter((c) => c.status !== "Unknown").map((c) => c.reason));
  const out: Change[] = [];
  for (const c of merged) {
    const old = before.get(c.type);
    if (old && old.status === c.status && old.reason === c.reason) continue;
    out.push({
      regarding: parent,
      reason: c.reason,
      type: eventTypeOf(c),
      message: c.message ? `${c.type}: ${c.message}` : `${c.type} is ${c.status}`,
      condition: c.type,
      state: `${c.status}/${c.reason}`,
      echo: c.status === "Unknown" && decisive.has(c.reason),
    });
  }
  return out;
}

/** The Events a sync's conditions call for (pure; `recordConditionEvents` dedupes and records them). */
export function conditionEvents(parent: K8sObject, previous: unknown, merged: readonly Condition[]): OperatorEvent[] {
  return conditionChanges(parent, previous, merged)
    .filter((c) => !c.echo)
    .map(({ regarding, reason, type, message, condition }) => ({ regarding, reason, type, message, condition }));
}

/**
 * Records the Events of one answer's condition changes, each once per recorder; never throws. The memory
 * follows every change, echoes included, so a condition coming back from an echo is recorded again.
 */
export function recordConditionEvents(
  events: EventRecorder,
  parent: K8sObject,
  previous: unknown,
  merged: readonly Condition[],
): void {
  const changes = conditionChanges(parent, previous, merged);
  if (!changes.length) return;
  const memory = memoryOf(events);
  const key = objectKey(parent);
  const held = memory.byObject.get(key);
  let next: Record<string, string> | undefined; // a copy, made at the first change
  for (const { state, echo, ...event } of changes) {
    if ((next ?? held)?.[event.condition] === state) continue;
    next ??= { ...held };
    next[event.condition] = state;
    if (!echo) events.record(event).catch(() => undefined);
  }
  if (!next) return;
  memory.byObject.delete(key);
  memory.byObject.set(key, memory.records.swap(held, next));
  if (memory.byObject.size > MAX_REMEMBERED) {
    const [oldest, record] = memory.byObject.entries().next().value as [string, Recorded];
    memory.records.release(record);
    memory.byObject.delete(oldest);
  }
}

/** What a recorder remembers (tests): objects, and the distinct records they share. */
export function rememberedConditions(events: EventRecorder): { objects: number; records: number } {
  const memory = memoryOf(events);
  return { objects: memory.byObject.size, records: memory.records.size };
}
