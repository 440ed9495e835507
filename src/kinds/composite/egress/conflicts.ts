/**
 * Target Services whose name is already held by a Service this egress does not own (pure).
 * Returning such a child would make Metacontroller fail the whole sync on "already exists", or
 * worse, take over someone else's Service; so the target simply gets no Service and
 * ServiceConflict=True names the holder.
 */
import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { EgressCondition as C, EGRESS_REASONS, EgressReason as R } from "../../../conditions/tables/egress.js";
import { OWNER_UID_LABEL } from "../../../k8s/labels.js";
import { findObject, type K8sObject, type ObjectMaps } from "../../../k8s/objects.js";
import { listNames } from "../../shared/node-names.js";
import type { EgressTarget } from "./spec.js";

/** Ours: an ownerReference to this parent's uid, or (with no controller reference) our owner-uid label. */
export function ownedByParent(object: K8sObject, parentUid: string | undefined): boolean {
  if (!parentUid) return false;
  const refs = object.metadata.ownerReferences ?? [];
  if (refs.some((r) => r.uid === parentUid)) return true;
  if (refs.some((r) => r.controller)) return false;
  return object.metadata.labels?.[OWNER_UID_LABEL] === parentUid;
}

/** Names of the targets whose Service name is held by a foreign Service, in spec order. */
export function conflictingTargets(
  parent: K8sObject,
  targets: readonly EgressTarget[],
  related: ObjectMaps,
  children: ObjectMaps,
): string[] {
  const ns = parent.metadata.namespace;
  return targets.flatMap((t) => {
    if (findObject(children, "v1", "Service", t.name, ns)) return [];
    const held = findObject(related, "v1", "Service", t.name, ns);
    return held && !ownedByParent(held, parent.metadata.uid) ? [t.name] : [];
  });
}

const { cond } = conditionsOf(EGRESS_REASONS);

export function serviceConflictCondition(
  parent: K8sObject,
  conflicting: readonly string[],
): TypedCondition<typeof EGRESS_REASONS, "ServiceConflict"> {
  if (!conflicting.length) return cond(C.ServiceConflict, "False", R.NoConflict, "");
  const ns = parent.metadata.namespace ?? "";
  const names = listNames(conflicting.map((n) => `${ns}/${n}`));
  const message =
    conflicting.length === 1
      ? `Service ${names} exists and is not owned by this TailnetEgress: target ${conflicting[0]} gets no Service`
      : `Services ${names} exist and are not owned by this TailnetEgress: their targets get no Service`;
  return cond(C.ServiceConflict, "True", R.Conflict, message);
}
