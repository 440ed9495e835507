/**
 * Route conflicts of a TailnetSite (pure; shared by the site kind and the Tailnet's policy render):
 * a prefix overlapping Tailnet.spec.reservedNetworks (OverlapsReserved) or a prefix of an older
 * site on the same Tailnet (OverlapsSite; older = creationTimestamp, then namespace/name). Only
 * the newer site is blocked; a blocked site renders nothing and approves nothing.
 */
import { SiteReason } from "../../conditions/reasons.js";
import type { K8sObject } from "../../k8s/objects.js";
import { cidrsOverlap, parseCidr } from "../../net/cidr.js";

export type SiteConflict =
  | { blocked: false }
  | { blocked: true; reason: typeof SiteReason.OverlapsReserved | typeof SiteReason.OverlapsSite; message: string };

const prefixesOf = (site: K8sObject): string[] => {
  const p = (site.spec as { prefixes?: unknown } | undefined)?.prefixes;
  return Array.isArray(p) ? p.filter((x): x is string => typeof x === "string" && parseCidr(x).ok) : [];
};
const tailnetOf = (site: K8sObject) => (site.spec as { tailnetRef?: { name?: string } } | undefined)?.tailnetRef?.name;
const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** Strict "is older than": creationTimestamp, then namespace/name, so exactly one of two sites wins. */
export function isOlder(a: K8sObject, b: K8sObject): boolean {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb;
  return idOf(a) < idOf(b);
}

export function siteConflict(
  site: K8sObject,
  allSites: readonly K8sObject[],
  reservedNetworks: readonly string[],
): SiteConflict {
  const mine = prefixesOf(site);
  for (const p of mine) {
    for (const r of reservedNetworks) {
      if (parseCidr(r).ok && cidrsOverlap(p, r)) {
        return {
          blocked: true,
          reason: SiteReason.OverlapsReserved,
          message: `prefix ${p} of TailnetSite ${idOf(site)} overlaps reserved network ${r} of Tailnet ${tailnetOf(site) ?? ""}`,
        };
      }
    }
  }
  const rivals = allSites
    .filter(
      (o) =>
        idOf(o) !== idOf(site) && tailnetOf(o) === tailnetOf(site) && !o.metadata.deletionTimestamp && isOlder(o, site),
    )
    .sort((a, b) => (isOlder(a, b) ? -1 : 1));
  for (const older of rivals) {
    for (const p of mine) {
      const hit = prefixesOf(older).find((q) => cidrsOverlap(p, q));
      if (hit) {
        return {
          blocked: true,
          reason: SiteReason.OverlapsSite,
          message: `prefix ${p} of TailnetSite ${idOf(site)} overlaps prefix ${hit} of the older TailnetSite ${idOf(older)}`,
        };
      }
    }
  }
  return { blocked: false };
}
