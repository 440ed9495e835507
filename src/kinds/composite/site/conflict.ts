/**
 * Route conflicts of a TailnetSite (pure; shared by the site kind and the Tailnet's policy render):
 * a prefix overlapping Tailnet.spec.reservedNetworks (OverlapsReserved) or a prefix of an older
 * site on the same Tailnet (OverlapsSite; older = creationTimestamp, then namespace/name). Only
 * the newer site is blocked; a blocked site renders nothing and approves nothing.
 *
 * Overlap means "share at least one address", so nested prefixes overlap and IPv4 never overlaps
 * IPv6. Every older site counts as a rival, blocked or not: its claim is in its spec, and letting
 * a third site take a prefix because the second one is blocked would make the winner depend on
 * the order in which conflicts are fixed. A site being deleted is no rival any more.
 *
 * `siteConflict` answers for one site (the site kind's sync); `siteConflicts` answers for every
 * site of a Tailnet at once (the render) with the same result per site, through an index instead
 * of comparing every pair of prefixes.
 */
import { SiteReason } from "../../../conditions/tables/site.js";
import { isOlder } from "../../../k8s/age.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { type Cidr, cidrsOverlap, parseCidr } from "../../../net/cidr.js";
import { isExitRoute } from "../../../net/exit.js";

export type SiteConflict =
  | { blocked: false }
  | { blocked: true; reason: typeof SiteReason.OverlapsReserved | typeof SiteReason.OverlapsSite; message: string };

/** A prefix as the user wrote it (for messages) and parsed (for the math). */
interface Prefix {
  text: string;
  cidr: Cidr;
}

interface ParsedSite {
  site: K8sObject;
  id: string;
  prefixes: Prefix[];
}

const NO_CONFLICT: SiteConflict = { blocked: false };

/**
 * Valid CIDRs of a list, in order; invalid ones are InvalidSpec's business, not a conflict. Default
 * routes are left out: an exit-node site (0.0.0.0/0 and ::/0) claims no network — exit routes are a
 * separate feature that clients choose, not a competing subnet route — and a default route anywhere
 * else is InvalidSpec.
 */
function parsePrefixes(values: unknown, keepDefaultRoutes = false): Prefix[] {
  if (!Array.isArray(values)) return [];
  const out: Prefix[] = [];
  for (const v of values) {
    if (typeof v !== "string") continue;
    const r = parseCidr(v);
    if (r.ok && (keepDefaultRoutes || !isExitRoute(r.cidr))) out.push({ text: v, cidr: r.cidr });
  }
  return out;
}

/** Reserved networks as written: a reserved 0.0.0.0/0 does reserve every IPv4 network. */
const parseReserved = (values: unknown) => parsePrefixes(values, true);

const tailnetOf = (site: K8sObject) => (site.spec as { tailnetRef?: { name?: string } } | undefined)?.tailnetRef?.name;
const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const parseSite = (site: K8sObject): ParsedSite => ({
  site,
  id: idOf(site),
  prefixes: parsePrefixes((site.spec as { prefixes?: unknown } | undefined)?.prefixes),
});

const byAge = (a: K8sObject, b: K8sObject) => (isOlder(a, b) ? -1 : isOlder(b, a) ? 1 : 0);

function reservedConflict(me: ParsedSite, reserved: readonly Prefix[]): SiteConflict | undefined {
  for (const p of me.prefixes) {
    const r = reserved.find((x) => cidrsOverlap(p.cidr, x.cidr));
    if (r) {
      return {
        blocked: true,
        reason: SiteReason.OverlapsReserved,
        message: `prefix ${p.text} of TailnetSite ${me.id} overlaps reserved network ${r.text} of Tailnet ${tailnetOf(me.site) ?? ""}`,
      };
    }
  }
  return undefined;
}

function siteOverlap(me: ParsedSite, older: ParsedSite, p: Prefix, q: Prefix): SiteConflict {
  return {
    blocked: true,
    reason: SiteReason.OverlapsSite,
    message: `prefix ${p.text} of TailnetSite ${me.id} overlaps prefix ${q.text} of the older TailnetSite ${older.id}`,
  };
}

/** The conflict of one site against every other site of its Tailnet and the reserved networks. */
export function siteConflict(
  site: K8sObject,
  allSites: readonly K8sObject[],
  reservedNetworks: readonly string[],
): SiteConflict {
  const me = parseSite(site);
  const reserved = reservedConflict(me, parseReserved(reservedNetworks));
  if (reserved) return reserved;
  const tailnet = tailnetOf(site);
  const rivals = allSites
    .filter((o) => idOf(o) !== me.id && tailnetOf(o) === tailnet && !o.metadata.deletionTimestamp && isOlder(o, site))
    .sort(byAge);
  // The oldest rival with any overlap wins; within it, the first of my prefixes, then the first of its.
  for (const rival of rivals) {
    const older = parseSite(rival);
    for (const p of me.prefixes) {
      const q = older.prefixes.find((x) => cidrsOverlap(p.cidr, x.cidr));
      if (q) return siteOverlap(me, older, p, q);
    }
  }
  return NO_CONFLICT;
}

/**
 * Conflicts of every site of `tailnet` (keyed "namespace/name"), equal per site to `siteConflict`.
 * Sites are visited oldest first and each one's prefixes go into an index after its own check, so
 * a site is only ever compared with older ones.
 */
export function siteConflicts(
  tailnet: string,
  allSites: readonly K8sObject[],
  reservedNetworks: readonly string[],
): Map<string, SiteConflict> {
  const reserved = parseReserved(reservedNetworks);
  const sites = allSites.filter((s) => tailnetOf(s) === tailnet).sort(byAge);
  const index = new PrefixIndex();
  const out = new Map<string, SiteConflict>();
  sites.forEach((site, rank) => {
    const me = parseSite(site);
    out.set(me.id, reservedConflict(me, reserved) ?? indexedConflict(me, index) ?? NO_CONFLICT);
    if (site.metadata.deletionTimestamp) return;
    me.prefixes.forEach((prefix, i) => {
      index.add({ rank, owner: me, prefix, i });
    });
  });
  return out;
}

/** A prefix of an older site in the index: `rank` is its site's age order, `i` its place in that site's list. */
interface Entry {
  rank: number;
  owner: ParsedSite;
  prefix: Prefix;
  i: number;
}

function indexedConflict(me: ParsedSite, index: PrefixIndex): SiteConflict | undefined {
  // Same choice as siteConflict: oldest rival, then my first prefix, then the rival's first prefix.
  let best: { entry: Entry; mine: number } | undefined;
  me.prefixes.forEach((p, mine) => {
    for (const entry of index.overlapping(p.cidr)) {
      if (
        !best ||
        entry.rank < best.entry.rank ||
        (entry.rank === best.entry.rank && (mine < best.mine || (mine === best.mine && entry.i < best.entry.i)))
      ) {
        best = { entry, mine };
      }
    }
  });
  if (!best) return undefined;
  const { entry, mine } = best;
  return siteOverlap(me, entry.owner, me.prefixes[mine], entry.prefix);
}

function compareBytes(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** The first `bits` bits of `bytes`, the rest zero (a network address) or one (its last address). */
function fill(bytes: readonly number[], bits: number, ones: boolean): number[] {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    const mask = (0xff << (8 - keep)) & 0xff;
    return ones ? (b & mask) | (~mask & 0xff) : b & mask;
  });
}

const keyOf = (family: number, bits: number, bytes: readonly number[]) => `${family}/${bits}/${bytes.join(".")}`;

/**
 * Older prefixes, found two ways: those containing a prefix share its network address masked to
 * their own length (one map lookup per shorter length), and those inside it have their network
 * address within its range (a binary search in address order). Two prefixes overlap exactly when
 * one contains the other, so the two ways find every overlap.
 */
class PrefixIndex {
  private readonly byNetwork = new Map<string, Entry[]>();
  private readonly byAddress: Record<number, Entry[]> = { 4: [], 6: [] };

  add(entry: Entry): void {
    const c = entry.prefix.cidr;
    const key = keyOf(c.family, c.bits, c.bytes);
    const same = this.byNetwork.get(key);
    if (same) same.push(entry);
    else this.byNetwork.set(key, [entry]);
    const list = this.byAddress[c.family];
    list.splice(this.lowerBound(list, c.bytes), 0, entry);
  }

  overlapping(c: Cidr): Set<Entry> {
    const out = new Set<Entry>();
    for (let bits = 0; bits <= c.bits; bits++) {
      for (const e of this.byNetwork.get(keyOf(c.family, bits, fill(c.bytes, bits, false))) ?? []) out.add(e);
    }
    const list = this.byAddress[c.family];
    const last = fill(c.bytes, c.bits, true);
    for (let i = this.lowerBound(list, c.bytes); i < list.length; i++) {
      if (compareBytes(list[i].prefix.cidr.bytes, last) > 0) break;
      out.add(list[i]);
    }
    return out;
  }

  private lowerBound(list: readonly Entry[], bytes: readonly number[]): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareBytes(list[mid].prefix.cidr.bytes, bytes) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
