/**
 * Tags kept from before derived tags were injective (issue 23's upgrade, closed by issue 31): an object created
 * before keeps the tag an earlier version derived for it (tenancy.ts objectDerivedTag, from its status), and a new
 * object may derive that same tag (`team/a-db` and `team-a/db` both once gave `tag:k8s-team-a-db`). The tag stays
 * the keeper's: the Tailnet renders nothing for the twin (keptTagTwins) and publishes the kept tags in its status,
 * so the twin's own sync refuses it before anything is minted (keptTagRefusal).
 */
import type { K8sObject } from "../../k8s/objects.js";
import { recordOf } from "../../k8s/objects.js";
import { derivedTag, explicitTag, objectDerivedTag } from "./tenancy.js";

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** A derived tag kept from before injective derivation (objectDerivedTag), when it differs from today's. */
export function keptLegacyTag(parent: K8sObject, tagPrefix: string): string | undefined {
  if (explicitTag(parent) !== undefined) return undefined;
  const namespace = parent.metadata.namespace ?? "";
  const kept = objectDerivedTag(parent, tagPrefix);
  return kept !== derivedTag(tagPrefix, namespace, parent.metadata.name) ? kept : undefined;
}

/**
 * Derived tags that are another object's kept legacy tag (pure): derivation is injective for objects today,
 * but a new `team/a-db` derives `tag:k8s-team-a-db`, which `team-a/db` kept from before the upgrade. The
 * tag stays the keeper's; returns "namespace/name" of each object whose fresh derived tag is such a twin,
 * with the keeper, across every kind of the Tailnet (they share one tag space).
 */
export function keptTagTwins(objects: readonly K8sObject[], tagPrefix: string): Map<string, string> {
  return keptTagIndex(objects, tagPrefix).twins;
}

/**
 * keptTagTwins and the kept tags themselves (sorted), from one pass over the objects: the Tailnet needs both on
 * every sync (the twins to leave out of the render, the tags for status.keptLegacyTags, keptTagRefusal).
 */
export function keptTagIndex(
  objects: readonly K8sObject[],
  tagPrefix: string,
): { twins: Map<string, string>; tags: string[] } {
  const id = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  // each object's kept tag once: the Tailnet calls this over every workload object on every sync
  const kept = objects.map((o) => keptLegacyTag(o, tagPrefix));
  const keepers = new Map<string, string>();
  objects.forEach((o, i) => {
    const k = kept[i];
    if (k && !keepers.has(k)) keepers.set(k, id(o));
  });
  const twins = new Map<string, string>();
  const tags = [...keepers.keys()].sort();
  if (!keepers.size) return { twins, tags };
  for (const [i, o] of objects.entries()) {
    if (explicitTag(o) !== undefined || kept[i]) continue;
    const keeper = keepers.get(objectDerivedTag(o, tagPrefix));
    if (keeper) twins.set(id(o), keeper);
  }
  return { twins, tags };
}

/** The kinds that mint keys under their derived tag (an auth key's tags are explicit; a site mints none). */
const DERIVED_TAG_KINDS = ["TailnetEgress", "TailnetIngress", "TailnetGateway"];

/**
 * A new object whose derived tag is another object's kept legacy tag (the Tailnet's status.keptLegacyTags) is
 * refused before anything is minted: its agent would otherwise join holding the keeper's grants (issue 31, the
 * upgrade window issue 23 left open). The keeper itself (its own kept tag) and explicit tags are not judged here.
 */
export function keptTagRefusal(
  parent: K8sObject,
  tailnet: K8sObject,
  tagPrefix: string,
): { reason: "TagInUse"; message: string } | undefined {
  if (!DERIVED_TAG_KINDS.includes(parent.kind) || explicitTag(parent) !== undefined) return undefined;
  if (keptLegacyTag(parent, tagPrefix) !== undefined) return undefined;
  const tag = objectDerivedTag(parent, tagPrefix);
  if (!strings(recordOf(tailnet.status).keptLegacyTags).includes(tag)) return undefined;
  return {
    reason: "TagInUse",
    message: `${tag}, the tag derived for this object, is kept by an object created before tags were derived injectively (the Tailnet's status.keptLegacyTags); a tag has one owner, so nothing is minted for it — rename this object, or recreate the older one so it derives its own tag`,
  };
}
