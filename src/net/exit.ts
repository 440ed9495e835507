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
 */
import type { Cidr } from "./cidr.js";

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
