/**
 * Route rules every kind that approves or renders routes calls — the gateway's own sync and the Tailnet's
 * render alike, so that what a gateway approves and what the policy auto-approves never disagree:
 * - a route set whose union covers 0.0.0.0/0 or ::/0 is an exit route (src/net/exit.ts coveredDefaultRoutes),
 *   however it is split: Headscale only singles out a literal /0 (juanfont/headscale
 *   hscontrol/policy/v2/policy.go NodeCanApproveRoute), so halves would be approved as subnet routes;
 * - a route overlapping Tailnet.spec.reservedNetworks is approved nowhere (the sites' OverlapsReserved);
 * - who may use an exit node (spec.exitNode.allowFrom) is held to Tailnet.spec.allowedIngressSources, as an
 *   ingress's allowFrom is (PolicyDenied).
 */
import { type Cidr, cidrsOverlap, parseCidr } from "../../net/cidr.js";
import { coveredDefaultRoutes, isExitRoute } from "../../net/exit.js";

const parsed = (values: readonly string[]): { text: string; cidr: Cidr }[] =>
  values.flatMap((v) => {
    const r = parseCidr(v.trim());
    return r.ok ? [{ text: v, cidr: r.cidr }] : [];
  });

/**
 * Why `routes` (a gateway's spec.routes, a site's prefixes) are an exit route, naming the routes and the
 * default routes they cover; undefined when they are not. Literal default routes are reported alone.
 */
export function exitRouteProblem(routes: readonly string[]): { routes: string[]; covers: string[] } | undefined {
  const cidrs = parsed(routes);
  const literal = cidrs.filter((c) => isExitRoute(c.cidr));
  if (literal.length) return { routes: literal.map((c) => c.text), covers: literal.map((c) => c.cidr.text) };
  const covers = coveredDefaultRoutes(cidrs.map((c) => c.cidr));
  if (!covers.length) return undefined;
  // the routes of the covered families, as written
  const families = new Set(covers.map((c) => (c.includes(":") ? 6 : 4)));
  return { routes: cidrs.filter((c) => families.has(c.cidr.family)).map((c) => c.text), covers };
}

/**
 * The first route overlapping a reserved network, as the message of OverlapsReserved (the words of the
 * sites' own, src/kinds/composite/site/conflict.ts); undefined when there is none.
 */
export function reservedOverlap(
  routes: readonly string[],
  reservedNetworks: readonly string[],
  who: { kind: string; id: string; tailnet: string },
): string | undefined {
  const reserved = parsed(reservedNetworks);
  // a default route claims no network (as for sites, site/conflict.ts): it is an exit route, refused apart
  for (const r of parsed(routes).filter((x) => !isExitRoute(x.cidr))) {
    const hit = reserved.find((x) => cidrsOverlap(r.cidr, x.cidr));
    if (hit) {
      return `route ${r.text} of ${who.kind} ${who.id} overlaps reserved network ${hit.text} of Tailnet ${who.tailnet}`;
    }
  }
  return undefined;
}

/** The entries of `allowFrom` that Tailnet.spec.allowedIngressSources does not list (each once, in order). */
export function sourcesOutside(allowFrom: readonly string[], allowedIngressSources: readonly string[]): string[] {
  const allowed = new Set(allowedIngressSources);
  return [...new Set(allowFrom.filter((a) => !allowed.has(a)))];
}

/** PolicyDenied of a gateway whose spec.exitNode.allowFrom lists `outside` (sourcesOutside). */
export const exitAllowFromDenied = (outside: readonly string[], tailnet: string): string =>
  `spec.exitNode.allowFrom: ${outside.join(", ")} not in Tailnet ${tailnet}'s spec.allowedIngressSources; the gateway is no exit node (nothing advertised, approved or granted)`;

/**
 * Whether approving `route` on a node that has `approved` (and is being given `adding`) would make its subnet
 * routes cover a whole family. Literal default routes are exit routes, approved as such (exit-node sites,
 * spec.exitNode), and are neither judged nor counted here.
 */
export function completesDefaultRoute(approved: readonly string[], adding: readonly string[], route: string): boolean {
  const r = parseCidr(route.trim());
  if (!r.ok || isExitRoute(r.cidr)) return false;
  const subnet = parsed([...approved, ...adding]).filter((c) => !isExitRoute(c.cidr));
  return coveredDefaultRoutes([...subnet.map((c) => c.cidr), r.cidr]).length > 0;
}
