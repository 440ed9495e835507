/** Helpers shared by every kind: parent identity, status assembly, the InvalidSpec answer. */
import { type Condition, type ConditionInput, cond, mergeConditions } from "../conditions/condition.js";
import { CommonReason } from "../conditions/tables/shared.js";
import { findObject, isRecord, type K8sObject, type ObjectMaps, reuseAllChildren } from "../k8s/objects.js";
import { publishConditions, type ResourceId } from "../metrics/resource.js";
import { recordConditionEvents } from "./condition-events.js";
import type { HookDeps, HookRequest, SyncResult } from "./types.js";

export const generationOf = (parent: K8sObject): number =>
  typeof parent.metadata.generation === "number" ? parent.metadata.generation : 0;

export const previousStatus = (parent: K8sObject): Record<string, unknown> =>
  isRecord(parent.status) ? (parent.status as Record<string, unknown>) : {};

export const resourceId = (parent: K8sObject): ResourceId => ({
  kind: parent.kind,
  namespace: parent.metadata.namespace ?? "",
  name: parent.metadata.name,
});

/**
 * The full status of a sync: conditions merged with the previous ones (lastTransitionTime kept
 * when unchanged), observedGeneration set, fields in a fixed order; the resource metrics, and an Event per
 * condition change (condition-events.ts).
 */
export function assembleStatus(
  req: HookRequest,
  deps: HookDeps,
  conditions: readonly ConditionInput[],
  fields: Record<string, unknown> = {},
  opts: { publish?: boolean } = {},
): Record<string, unknown> {
  const generation = generationOf(req.parent);
  const previous = previousStatus(req.parent).conditions;
  const merged = mergeConditions(previous, conditions, generation, deps.now());
  logTransitions(req, deps, previous, merged);
  recordConditionEvents(deps.events, req.parent, previous, merged);
  if (opts.publish !== false) {
    publishConditions(deps.metrics, resourceId(req.parent), merged, generation, deps.now().getTime());
  }
  return { observedGeneration: generation, ...fields, conditions: merged };
}

/**
 * Log transitions, not every call (Tailscale's updateCondition): one line per condition whose
 * reason changed since the previous status. Messages carry no secret (errors name operations).
 */
function logTransitions(req: HookRequest, deps: HookDeps, previous: unknown, merged: readonly Condition[]): void {
  const before = new Map(
    (Array.isArray(previous) ? previous : [])
      .filter((c): c is Condition => isRecord(c) && typeof c.type === "string")
      .map((c) => [c.type, c]),
  );
  for (const c of merged) {
    const old = before.get(c.type);
    if (old && old.status === c.status && old.reason === c.reason) continue;
    deps.log.info(
      {
        kind: req.parent.kind,
        object: req.parent.metadata.namespace
          ? `${req.parent.metadata.namespace}/${req.parent.metadata.name}`
          : req.parent.metadata.name,
        condition: c.type,
        from: old ? `${old.status}/${old.reason}` : "",
        to: `${c.status}/${c.reason}`,
      },
      c.message || `${c.type} is ${c.status}/${c.reason}`,
    );
  }
}

/**
 * The answer for a spec the CRD schema could not catch: observed children unchanged, the previous
 * status kept, and `conditionType` (Ready, or PolicyRendered for Tailnet) False/InvalidSpec.
 */
export function invalidSpecResult(
  req: HookRequest,
  deps: HookDeps,
  conditionType: string,
  allTypes: readonly string[],
  message: string,
): SyncResult {
  const next = invalidSpecConditions(req.parent, conditionType, allTypes, message);
  const { conditions: _c, observedGeneration: _g, ...rest } = previousStatus(req.parent);
  return { status: assembleStatus(req, deps, next, rest), children: reuseAllChildren(req.children) };
}

/**
 * The conditions of `invalidSpecResult` (pure): `conditionType` False/InvalidSpec with `message`, every other
 * type as the previous status had it, or Unknown/InvalidSpec ("not evaluated") when it had none.
 */
export function invalidSpecConditions(
  parent: K8sObject,
  conditionType: string,
  allTypes: readonly string[],
  message: string,
): ConditionInput[] {
  const prev = previousStatus(parent);
  const prevConds = Array.isArray(prev.conditions) ? (prev.conditions as ConditionInput[]) : [];
  return allTypes.map((type) => {
    if (type === conditionType) return cond(type, "False", CommonReason.InvalidSpec, message);
    const old = prevConds.find((c) => c?.type === type);
    return old
      ? cond(type, old.status, old.reason, old.message)
      : cond(type, "Unknown", CommonReason.InvalidSpec, "not evaluated: the spec is invalid");
  });
}

/**
 * Whether the parent's namespace is being deleted (the related Namespace every workload asks for): the API
 * server then refuses every create there ("forbidden: unable to create new content in namespace … because it is
 * being terminated", which Metacontroller logs at error level on every sync).
 */
export function namespaceTerminating(req: HookRequest): boolean {
  const ns = req.parent.metadata.namespace;
  if (!ns) return false;
  const o = findObject(req.related, "v1", "Namespace", ns);
  const phase = isRecord(o?.status) ? o.status.phase : undefined;
  return !!o && (!!o.metadata.deletionTimestamp || phase === "Terminating");
}

/**
 * The answer's children without any the request did not observe: what a finalize (and a sync in a terminating
 * namespace) may return. A finalize only keeps or drops what exists — a child it created would be an orphan the
 * parent's release leaves behind, and in a terminating namespace a forbidden create (issue 31).
 */
export function observedOnly(children: readonly K8sObject[], req: HookRequest): K8sObject[] {
  return observedIn(children, req.children, req.parent.metadata.namespace);
}

/** observedOnly over any observed map (a DecoratorController's attachments); `namespace` defaults a child's. */
export function observedIn(
  children: readonly K8sObject[],
  observed: ObjectMaps | undefined,
  namespace: string | undefined,
): K8sObject[] {
  return children.filter((c) =>
    findObject(observed, c.apiVersion, c.kind, c.metadata.name, c.metadata.namespace ?? namespace),
  );
}
