/**
 * Which TailnetSites of one Tailnet are blocked (RouteConflict), for the policy render: the verdict
 * of `siteConflict` (the one definition, which the site kind reports with) for every site at once.
 *
 * `siteConflict` scans every older site, so calling it per site is quadratic. Here the sites are
 * walked oldest first (the same `isOlder` order) while an index of the prefixes seen so far, keyed
 * by their leading bits, answers "does this prefix overlap an older site's prefix?" in O(prefix
 * length): equal or containing prefixes are found among its own leading bits, contained ones
 * through every prefix's leading bits. Deleting sites block no one, as in `siteConflict`; a test
 * checks both agree on random sites.
 */
import type { K8sObject } from "../../k8s/objects.js";
import { type Cidr, cidrsOverlap, parseCidr } from "../../net/cidr.js";
import { isOlder } from "../site/conflict.js";

const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** "4:" or "6:" then the prefix's network bits as 0/1 characters. */
function bitsOf(c: Cidr): string {
  let out = "";
  for (const b of c.bytes) out += b.toString(2).padStart(8, "0");
  return `${c.family}:${out.slice(0, c.bits)}`;
}

function prefixesOf(site: K8sObject): Cidr[] {
  const raw = (site.spec as { prefixes?: unknown } | undefined)?.prefixes;
  if (!Array.isArray(raw)) return [];
  const out: Cidr[] = [];
  for (const p of raw) {
    if (typeof p !== "string") continue;
    const r = parseCidr(p);
    if (r.ok) out.push(r.cidr);
  }
  return out;
}

/** `namespace/name` of every blocked site among `sites` (all of one Tailnet). */
export function blockedSites(sites: readonly K8sObject[], reservedNetworks: readonly string[]): Set<string> {
  const reserved = reservedNetworks.flatMap((r) => {
    const c = parseCidr(r);
    return c.ok ? [c.cidr] : [];
  });
  const exact = new Set<string>(); // prefixes of older sites
  const covering = new Set<string>(); // every leading-bits key of those prefixes (their supernets)
  const blocked = new Set<string>();
  const byAge = [...sites].sort((a, b) => (isOlder(a, b) ? -1 : isOlder(b, a) ? 1 : 0));
  for (const site of byAge) {
    const cidrs = prefixesOf(site);
    const keys = cidrs.map(bitsOf);
    const overlapsReserved = cidrs.some((c) => reserved.some((r) => cidrsOverlap(c, r)));
    const overlapsOlder = keys.some((key) => {
      if (covering.has(key)) return true; // an older prefix equal to or inside this one
      for (let len = 2; len < key.length; len++) if (exact.has(key.slice(0, len))) return true; // one containing it
      return false;
    });
    if (overlapsReserved || overlapsOlder) blocked.add(idOf(site));
    if (site.metadata.deletionTimestamp) continue;
    for (const key of keys) {
      exact.add(key);
      for (let len = 2; len <= key.length; len++) covering.add(key.slice(0, len));
    }
  }
  return blocked;
}
