/**
 * What the Headscale node list says about a site's prefixes (pure). Headscale serves a subnet route
 * only when a node both announces (`availableRoutes`) and has approved (`approvedRoutes`) the
 * exact prefix — approving 10.0.0.0/8 does not serve an announced 10.1.0.0/16 (NOTES §1.2) — so
 * Advertised and Approved match exact prefixes, compared in canonical form (IPv6 may be spelled
 * several ways). Overlap, used for unmanaged routes, includes nesting.
 */
import type { HsNode } from "../../../headscale/types.js";
import { type Cidr, cidrsOverlap, parseCidr } from "../../../net/cidr.js";
import { isExitRoute } from "../../../net/exit.js";

/** A site prefix: the text as written in the spec (shown in status) and its parsed form. */
export interface SitePrefix {
  text: string;
  cidr: Cidr;
}

/** One node carrying an advertiser tag that announces at least one site prefix. */
export interface AdvertiserFact {
  nodeId: string;
  node: string;
  /** Site prefixes (spec text) the node announces, in address order. */
  advertised: string[];
  /** The subset it has approved. */
  approved: string[];
  /** Announced but not approved: the route as the node announces it, and the site prefix it is. */
  pending: { route: string; prefix: string }[];
}

/** A route announced by a node without any of the site's advertiser tags that overlaps a site prefix. */
export interface UnmanagedRoute {
  node: string;
  route: string;
  overlaps: string;
}

/** IPv4 before IPv6, then by network address, then shorter prefixes first. */
export function compareCidr(a: Cidr, b: Cidr): number {
  if (a.family !== b.family) return a.family - b.family;
  for (let i = 0; i < a.bytes.length; i++) if (a.bytes[i] !== b.bytes[i]) return a.bytes[i] - b.bytes[i];
  return a.bits - b.bits;
}

/** The valid prefixes of a spec list, deduplicated by canonical form, in address order. */
export function sitePrefixes(values: unknown): SitePrefix[] {
  if (!Array.isArray(values)) return [];
  const seen = new Set<string>();
  const out: SitePrefix[] = [];
  for (const v of values) {
    if (typeof v !== "string") continue;
    const r = parseCidr(v);
    if (!r.ok || seen.has(r.cidr.text)) continue;
    seen.add(r.cidr.text);
    out.push({ text: v, cidr: r.cidr });
  }
  return out.sort((a, b) => compareCidr(a.cidr, b.cidr));
}

/** Canonical text of a route, or undefined when Headscale sent something that is not a prefix. */
export function canonicalRoute(route: string): string | undefined {
  const r = parseCidr(route);
  return r.ok ? r.cidr.text : undefined;
}

export const nodeName = (n: HsNode) => n.givenName || n.name;
const byName = (a: HsNode, b: HsNode) =>
  nodeName(a) < nodeName(b) ? -1 : nodeName(a) > nodeName(b) ? 1 : Number(a.id) - Number(b.id);

export const carriesAny = (node: HsNode, tags: readonly string[]) => node.tags.some((t) => tags.includes(t));

/** Advertiser nodes that announce a site prefix, sorted by node name (then id). */
export function advertiserFacts(
  nodes: readonly HsNode[],
  prefixes: readonly SitePrefix[],
  advertiserTags: readonly string[],
): AdvertiserFact[] {
  const out: AdvertiserFact[] = [];
  for (const node of [...nodes].filter((n) => carriesAny(n, advertiserTags)).sort(byName)) {
    const announced = new Map<string, string>();
    for (const r of node.availableRoutes) {
      const c = canonicalRoute(r);
      if (c && !announced.has(c)) announced.set(c, r);
    }
    const approved = new Set(node.approvedRoutes.map(canonicalRoute));
    const fact: AdvertiserFact = { nodeId: node.id, node: nodeName(node), advertised: [], approved: [], pending: [] };
    for (const p of prefixes) {
      const route = announced.get(p.cidr.text);
      if (route === undefined) continue;
      fact.advertised.push(p.text);
      if (approved.has(p.cidr.text)) fact.approved.push(p.text);
      else fact.pending.push({ route, prefix: p.text });
    }
    if (fact.advertised.length > 0) out.push(fact);
  }
  return out;
}

/**
 * Routes overlapping the site that nodes without an advertiser tag announce (report only: the
 * managed route still ships and clients pick the longest prefix). Exit routes are left out on both
 * sides: every exit node would otherwise "overlap" every site and every subnet route an exit-node
 * site, and withdrawing them is not the remedy (clients choose an exit node; a subnet route is
 * always more specific).
 */
export function unmanagedRoutes(
  nodes: readonly HsNode[],
  sitePrefixList: readonly SitePrefix[],
  advertiserTags: readonly string[],
): UnmanagedRoute[] {
  const prefixes = sitePrefixList.filter((p) => !isExitRoute(p.cidr));
  const out: UnmanagedRoute[] = [];
  if (prefixes.length === 0) return out;
  for (const node of [...nodes].filter((n) => !carriesAny(n, advertiserTags)).sort(byName)) {
    const routes = node.availableRoutes
      .map((r) => parseCidr(r))
      .flatMap((r) => (r.ok && !isExitRoute(r.cidr) ? [r.cidr] : []))
      .sort(compareCidr);
    const seen = new Set<string>();
    for (const route of routes) {
      const hit = prefixes.find((p) => cidrsOverlap(p.cidr, route));
      if (!hit || seen.has(route.text)) continue;
      seen.add(route.text);
      out.push({ node: nodeName(node), route: route.text, overlaps: hit.text });
    }
  }
  return out;
}
