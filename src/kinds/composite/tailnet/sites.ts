/**
 * Which TailnetSites of one Tailnet are blocked (RouteConflict), for the policy render: the verdict
 * of `siteConflict` (the one definition, which the site kind reports with) for every site at once.
 *
 * `siteConflict` scans every older site, so calling it per site is quadratic. Here the sites are
 * walked oldest first (the same `isOlder` order) while an index of the prefixes seen so far, keyed
 * by their leading bits (numbers for IPv4, so no strings are built), answers "does this prefix overlap an older site's prefix?" in O(prefix
 * length): equal or containing prefixes are found among its own leading bits, contained ones
 * through every prefix's leading bits. Deleting sites block no one, as in `siteConflict`; a test
 * checks both agree on random sites.
 */
import { sortByAge } from "../../../k8s/age.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { type Cidr, cidrsOverlap, parseCidr } from "../../../net/cidr.js";
import { isExitRoute } from "../../../net/exit.js";

const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/**
 * Keys of a prefix's leading bits, one per length 0..bits (index = length): two prefixes share
 * a key exactly when they have the same family, length and leading bits. IPv4 keys are numbers
 * (length · 2³² + the leading bits as an integer), IPv6 keys "6:" then the bits as 0/1 text.
 */
function leadingKeys(c: Cidr): (number | string)[] {
  const out: (number | string)[] = new Array(c.bits + 1);
  if (c.family === 4) {
    const [b0, b1, b2, b3] = c.bytes;
    const addr = ((b0 << 24) | (b1 << 16) | (b2 << 8) | b3) >>> 0;
    for (let len = 0; len <= c.bits; len++) out[len] = len * 4294967296 + (len === 0 ? 0 : addr >>> (32 - len));
    return out;
  }
  let bits = "";
  for (const b of c.bytes) bits += b.toString(2).padStart(8, "0");
  for (let len = 0; len <= c.bits; len++) out[len] = `6:${bits.slice(0, len)}`;
  return out;
}

function prefixesOf(site: K8sObject): Cidr[] {
  const raw = (site.spec as { prefixes?: unknown } | undefined)?.prefixes;
  if (!Array.isArray(raw)) return [];
  const out: Cidr[] = [];
  for (const p of raw) {
    if (typeof p !== "string") continue;
    const r = parseCidr(p);
    // Default routes claim no network (exit-node sites; see site/conflict.ts parsePrefixes).
    if (r.ok && !isExitRoute(r.cidr)) out.push(r.cidr);
  }
  return out;
}

/** `namespace/name` of every blocked site among `sites` (all of one Tailnet). */
export function blockedSites(sites: readonly K8sObject[], reservedNetworks: readonly string[]): Set<string> {
  const reserved = reservedNetworks.flatMap((r) => {
    const c = parseCidr(r);
    return c.ok ? [c.cidr] : [];
  });
  const exact = new Set<number | string>(); // prefixes of older sites
  const covering = new Set<number | string>(); // every leading-bits key of those prefixes (their supernets)
  const blocked = new Set<string>();
  for (const site of sortByAge(sites)) {
    const cidrs = prefixesOf(site);
    const keys = cidrs.map(leadingKeys);
    const overlapsReserved = cidrs.some((c) => reserved.some((r) => cidrsOverlap(c, r)));
    const overlapsOlder = keys.some((k) => {
      const bits = k.length - 1;
      if (covering.has(k[bits])) return true; // an older prefix equal to or inside this one
      for (let len = 0; len < bits; len++) if (exact.has(k[len])) return true; // one containing it
      return false;
    });
    if (overlapsReserved || overlapsOlder) blocked.add(idOf(site));
    if (site.metadata.deletionTimestamp) continue;
    for (const k of keys) {
      exact.add(k[k.length - 1]);
      for (const key of k) covering.add(key);
    }
  }
  return blocked;
}
