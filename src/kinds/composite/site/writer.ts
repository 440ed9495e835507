/**
 * One writer per node (pure). `approve_routes` replaces a node's whole approved set, so two
 * read-modify-writes of the same node by two operator replicas at once lose one of them. Instead of
 * every site writing its own routes, exactly one site writes to a given node, chosen by a rule
 * every replica computes the same from the same objects:
 *
 * - while a site of the Tailnet that is being deleted claims the node (the node carries one of its
 *   advertiser tags), the oldest such site writes to it (its finalize withdraws its routes) and no
 *   live site does;
 * - otherwise the oldest live site that claims the node, has a valid spec and is not blocked by
 *   RouteConflict writes to it — approving, in one call, the announced but unapproved prefixes of
 *   every such site claiming the node.
 *
 * Metacontroller never runs two hooks of the same object at once (one work queue per controller),
 * so one writing object per node means one writer per node across replicas. "Oldest" is the
 * RouteConflict order (creationTimestamp, then namespace/name).
 */
import { validateSpec } from "../../../api/validate.js";
import type { HsNode } from "../../../headscale/types.js";
import { sortByAge } from "../../../k8s/age.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { siteConflicts } from "./conflict.js";
import { carriesAny, type SitePrefix } from "./routes.js";
import { readSiteSpec, siteSpecProblem } from "./spec.js";

export interface SiteClaim {
  site: K8sObject;
  /** namespace/name */
  id: string;
  namespace: string;
  name: string;
  prefixes: SitePrefix[];
  tags: string[];
}

export interface NodeWriters {
  /** Live, valid, unblocked sites of the Tailnet, oldest first: those whose routes get approved. */
  live: SiteClaim[];
  /** The site that writes to `node`, and whether it is being deleted; undefined when none claims it. */
  writerOf(node: HsNode): { claim: SiteClaim; deleting: boolean } | undefined;
}

const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const tailnetOf = (site: K8sObject) => readSiteSpec(site).tailnet;
const validSpec = (site: K8sObject) => validateSpec("site", site.spec) === undefined && !siteSpecProblem(site);

function claimOf(site: K8sObject): SiteClaim {
  const spec = readSiteSpec(site);
  return {
    site,
    id: idOf(site),
    namespace: site.metadata.namespace ?? "",
    name: site.metadata.name,
    prefixes: spec.prefixes,
    tags: spec.advertiserTags,
  };
}

/** The writers for the Tailnet of `parent`, from every related site (the parent counted as given). */
export function nodeWriters(
  parent: K8sObject,
  sites: readonly K8sObject[],
  reservedNetworks: readonly string[],
): NodeWriters {
  const tailnet = tailnetOf(parent);
  const mine = [parent, ...sites.filter((s) => idOf(s) !== idOf(parent) && tailnetOf(s) === tailnet)];
  const conflicts = siteConflicts(tailnet ?? "", mine, reservedNetworks);
  const ordered = sortByAge(mine);
  const deleting = ordered.filter((s) => s.metadata.deletionTimestamp).map(claimOf);
  const live = ordered
    .filter((s) => !s.metadata.deletionTimestamp && !conflicts.get(idOf(s))?.blocked && validSpec(s))
    .map(claimOf);
  return {
    live,
    writerOf(node) {
      const d = deleting.find((c) => carriesAny(node, c.tags));
      if (d) return { claim: d, deleting: true };
      const l = live.find((c) => carriesAny(node, c.tags));
      return l ? { claim: l, deleting: false } : undefined;
    },
  };
}
