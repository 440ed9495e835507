/**
 * "Older" for Kubernetes objects: creationTimestamp, then namespace/name, so exactly one of two objects is
 * older. Kinds use it wherever the older claim wins (TailnetSite prefixes, TailnetIngress names).
 */
import type { K8sObject } from "./objects.js";

const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** Strict "is older than": creationTimestamp, then namespace/name, so exactly one of two objects wins. */
export function isOlder(a: K8sObject, b: K8sObject): boolean {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb;
  return idOf(a) < idOf(b);
}

/**
 * `objects` oldest first, in `isOlder` order (a stable sort by the same relation), with each
 * object's sort key built once instead of in every comparison (thousands of objects per render).
 */
export function sortByAge<T extends K8sObject>(objects: readonly T[]): T[] {
  const keyed = objects.map((o) => ({ ts: o.metadata.creationTimestamp ?? "", id: idOf(o), o }));
  keyed.sort((a, b) => (a.ts !== b.ts ? (a.ts < b.ts ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return keyed.map((k) => k.o);
}
