/**
 * Exit routes: the two default routes a Tailscale exit node announces (`--advertise-exit-node`).
 * Headscale 0.29 treats them apart from subnet routes everywhere:
 * - `approve_routes` stores both when either is sent (hscontrol/grpcv1.go SetApprovedRoutes);
 * - auto-approval approves them only through `autoApprovers.exitNode`, never through a
 *   `routes` key, not even `0.0.0.0/0` (hscontrol/policy/v2/policy.go NodeCanApproveRoute);
 * - a grant may not name them as a destination: "to allow all IP addresses, use "*" or
 *   "autogroup:internet"" (hscontrol/policy/v2/types.go ErrGrantDefaultRouteCIDR); the right to use an
 *   exit node is a grant to `autogroup:internet`.
 * So a TailnetSite whose prefixes are exactly the pair is an exit-node site, and a default route is
 * valid nowhere else in a site.
 *
 * A default route is also one written in pieces: `0.0.0.0/1` + `128.0.0.0/1` is approved as two subnet routes
 * (policy.go NodeCanApproveRoute only singles out a literal /0), and a node serving both routes everything,
 * like an exit node, without autoApprovers.exitNode or the tenancy check. `coveredDefaultRoutes` is the one
 * definition of "these routes cover a whole family" that sites, gateways and the Tailnet's render use.
 */
import type { Cidr, IpFamily } from "./cidr.js";

/** Canonical texts, IPv4 first. */
export const EXIT_ROUTES = ["0.0.0.0/0", "::/0"] as const;

/** Grant destination that stands for "the internet through an exit node". */
export const INTERNET = "autogroup:internet";

/** A default route (length 0), in either family. */
export const isExitRoute = (c: Cidr): boolean => c.bits === 0;

/** True when the prefixes are exactly 0.0.0.0/0 and ::/0 (each once, however spelled). */
export function isExitNodePrefixes(cidrs: readonly Cidr[]): boolean {
  const texts = new Set(cidrs.map((c) => c.text));
  return cidrs.length === 2 && texts.size === 2 && EXIT_ROUTES.every((r) => texts.has(r));
}

const bigOf = (bytes: readonly number[]): bigint => bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);

/**
 * The default routes ("0.0.0.0/0", "::/0", in that order) whose whole address space the union of `cidrs`
 * covers, however it is split or overlapped: a route set that covers one is an exit route.
 */
export function coveredDefaultRoutes(cidrs: readonly Cidr[]): string[] {
  const out: string[] = [];
  for (const [family, route] of [
    [4, EXIT_ROUTES[0]],
    [6, EXIT_ROUTES[1]],
  ] as [IpFamily, string][]) {
    const max = family === 4 ? 32 : 128;
    const ranges = cidrs
      .filter((c) => c.family === family)
      .map((c) => {
        const start = bigOf(c.bytes);
        return [start, start + (1n << BigInt(max - c.bits))] as const;
      })
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    // walk the ranges from the lowest address; a gap before the next range means not covered
    let reached = 0n;
    for (const [start, end] of ranges) {
      if (start > reached) break;
      if (end > reached) reached = end;
    }
    if (reached === 1n << BigInt(max)) out.push(route);
  }
  return out;
}

/** True when `cidrs` together cover 0.0.0.0/0 or ::/0 (coveredDefaultRoutes). */
export const coversDefaultRoute = (cidrs: readonly Cidr[]): boolean => coveredDefaultRoutes(cidrs).length > 0;
