/**
 * Which routes a Gateway of the class `tailnet` takes, on which listeners, and why not (pure). One function
 * decides it for both sides — the Gateway's decorator builds its TailnetIngress and listener status from it,
 * each route's decorator its `status.parents` entry — so the two never disagree. The rules are the Gateway
 * API's (kubernetes-sigs/gateway-api apis/v1 shared_types.go ParentReference, gateway_types.go AllowedRoutes,
 * httproute_types.go Hostnames):
 * - a parentRef names the Gateway (group, kind, namespace defaulting to the route's, name), and, when set, a
 *   listener by `sectionName` and/or `port`: no such listener is NoMatchingParent;
 * - a listener takes the route when its kind is in the listener's kinds and its namespace is allowed by
 *   `allowedRoutes.namespaces` (Same — the default —, All, or Selector on the Namespace's labels): none is
 *   NotAllowedByListeners. A namespace editor can attach a route only to a Gateway whose owner allowed it;
 * - a route with `hostnames` needs one naming the listener's tailnet name (`<label>.<zone>`, the label, or a
 *   `*.` wildcard above it): none is NoMatchingListenerHostname;
 * - a route the agent cannot serve as written is UnsupportedValue on every parent (src/kinds/shared/gateway-api-objects.ts).
 */
import { RouteCondition as C, RouteReason as R } from "../../../conditions/tables/gateway-api.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { resolveTailnet } from "../../shared/annotations.js";
import { flatNamespacesOf, zoneOf } from "../../shared/dns-tenancy.js";
import {
  CONTROLLER_NAME,
  type Grant,
  GW_GROUP,
  type ParentRef,
  type Route,
  readListeners,
} from "../../shared/gateway-api-objects.js";
import { selects } from "../../shared/tenancy.js";
import { exposureAnnotations } from "../annotations.js";
import { type RouteParentCondition, routeCond } from "./conditions.js";
import { type JudgedListener, judgeListeners } from "./listeners.js";
import { type ResolvedRule, resolveBackends } from "./refs.js";

export type { RouteParentCondition } from "./conditions.js";

/** Everything a binding reads, from the hook request's related objects. */
export interface GatewayWorld {
  classes: readonly K8sObject[];
  gateways: readonly K8sObject[];
  routes: readonly Route[];
  grants: readonly Grant[];
  namespaces: readonly K8sObject[];
  services: readonly K8sObject[];
  tailnets: readonly K8sObject[];
}

export interface ParentVerdict {
  ref: ParentRef;
  accepted: RouteParentCondition;
  resolvedRefs: RouteParentCondition;
}

export interface BoundRoute {
  route: Route;
  /** The listeners (by name) that took it. */
  listeners: string[];
  rules: ResolvedRule[];
}

export interface BoundGateway {
  gateway: K8sObject;
  label: string;
  zone: string | undefined;
  listeners: JudgedListener[];
  /** Accepted routes, oldest first then by namespace/name (the Gateway API's precedence between routes). */
  routes: BoundRoute[];
}

/** GatewayClass names whose controllerName is ours (a class being deleted takes no new Gateways). */
export function ourClassNames(classes: readonly K8sObject[]): Set<string> {
  return new Set(
    classes
      .filter((c) => (c.spec as { controllerName?: unknown } | undefined)?.controllerName === CONTROLLER_NAME)
      .filter((c) => !c.metadata.deletionTimestamp)
      .map((c) => c.metadata.name),
  );
}

export const classOf = (gateway: K8sObject): string | undefined => {
  const c = (gateway.spec as { gatewayClassName?: unknown } | undefined)?.gatewayClassName;
  return typeof c === "string" ? c : undefined;
};

export function isOurGateway(gateway: K8sObject, classes: readonly K8sObject[]): boolean {
  const cls = classOf(gateway);
  return cls !== undefined && ourClassNames(classes).has(cls);
}

/** The zone a Gateway's names live in: its Tailnet's baseDomain, or its namespace's subtree (dns-tenancy.ts). */
export function gatewayZone(gateway: K8sObject, tailnets: readonly K8sObject[]): string | undefined {
  const resolved = resolveTailnet(exposureAnnotations(gateway).tailnet, tailnets);
  if (!("tailnet" in resolved)) return undefined;
  const spec = resolved.tailnet.spec as { dns?: { baseDomain?: string } } | undefined;
  return zoneOf(
    gateway.metadata.namespace ?? "default",
    spec?.dns?.baseDomain,
    flatNamespacesOf(resolved.tailnet.spec),
  );
}

export const namesGateway = (ref: ParentRef, gateway: K8sObject): boolean =>
  ref.group === GW_GROUP &&
  ref.kind === "Gateway" &&
  ref.name === gateway.metadata.name &&
  ref.namespace === (gateway.metadata.namespace ?? "default");

function namespaceAllowed(
  j: JudgedListener,
  route: Route,
  gatewayNs: string,
  namespaces: readonly K8sObject[],
): boolean {
  const from = j.listener.from;
  if (from === "All") return true;
  if (from === "Same") return route.namespace === gatewayNs;
  if (from !== "Selector" || !j.listener.selector) return false;
  const ns = namespaces.find((n) => n.metadata.name === route.namespace);
  return !!ns && selects(j.listener.selector, ns.metadata.labels ?? {});
}

/** A route's hostname names the listener's tailnet name: exactly, as the bare label, or by a `*.` wildcard. */
function hostnameMatches(route: Route, label: string, zone: string | undefined): boolean {
  if (route.hostnames.length === 0) return true;
  const fqdn = zone ? `${label}.${zone}` : label;
  return route.hostnames.some((h) => {
    const name = h.replace(/\.$/, "");
    if (name === fqdn || name === label) return true;
    return name.startsWith("*.") && fqdn.endsWith(name.slice(1)) && fqdn.length > name.length - 1;
  });
}

/** The verdict of one parentRef naming this Gateway, and the listeners that take the route. */
export function judgeParent(
  b: Omit<BoundGateway, "routes">,
  route: Route,
  ref: ParentRef,
  namespaces: readonly K8sObject[],
): { accepted: RouteParentCondition; listeners: string[] } {
  const gatewayNs = b.gateway.metadata.namespace ?? "default";
  const named = b.listeners.filter(
    (j) =>
      (ref.sectionName === undefined || j.listener.name === ref.sectionName) &&
      (ref.port === undefined || j.listener.port === ref.port),
  );
  if (named.length === 0) {
    const what = [ref.sectionName && `sectionName ${ref.sectionName}`, ref.port && `port ${ref.port}`].filter(Boolean);
    return {
      accepted: routeCond(
        C.Accepted,
        "False",
        R.NoMatchingParent,
        `the Gateway has no listener with ${what.join(" and ")}`,
      ),
      listeners: [],
    };
  }
  const allowed = named.filter(
    (j) => j.valid && j.supportedKinds.includes(route.kind) && namespaceAllowed(j, route, gatewayNs, namespaces),
  );
  if (allowed.length === 0) {
    return {
      accepted: routeCond(
        C.Accepted,
        "False",
        R.NotAllowedByListeners,
        `no valid listener of Gateway ${gatewayNs}/${b.gateway.metadata.name} allows ${route.kind}s from namespace ${route.namespace}`,
      ),
      listeners: [],
    };
  }
  const matching = allowed.filter((j) => hostnameMatches(route, j.label as string, b.zone));
  if (matching.length === 0) {
    const names = allowed.map((j) => (b.zone ? `${j.label}.${b.zone}` : j.label)).join(", ");
    return {
      accepted: routeCond(
        C.Accepted,
        "False",
        R.NoMatchingListenerHostname,
        `spec.hostnames name none of the listeners' tailnet names (${names})`,
      ),
      listeners: [],
    };
  }
  if (route.unsupported) {
    return { accepted: routeCond(C.Accepted, "False", R.UnsupportedValue, route.unsupported), listeners: [] };
  }
  return {
    accepted: routeCond(
      C.Accepted,
      "True",
      R.Accepted,
      `attached to listener ${matching.map((j) => j.listener.name).join(", ")}`,
    ),
    listeners: matching.map((j) => j.listener.name),
  };
}

/** The listeners of a Gateway of our class, judged, before any route. */
export function gatewayListeners(gateway: K8sObject, world: GatewayWorld): Omit<BoundGateway, "routes"> {
  const zone = gatewayZone(gateway, world.tailnets);
  const label = exposureAnnotations(gateway).hostname;
  const ns = gateway.metadata.namespace ?? "default";
  return { gateway, label, zone, listeners: judgeListeners(readListeners(gateway), ns, label, zone, world.grants) };
}

const byAge = (a: Route, b: Route) =>
  a.created.localeCompare(b.created) || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`);

/** The Gateway with the routes it takes. */
export function bindGateway(gateway: K8sObject, world: GatewayWorld): BoundGateway {
  const b = gatewayListeners(gateway, world);
  const routes: BoundRoute[] = [];
  for (const route of [...world.routes].sort(byAge)) {
    const listeners = new Set<string>();
    for (const ref of route.parentRefs) {
      if (!namesGateway(ref, gateway)) continue;
      for (const l of judgeParent(b, route, ref, world.namespaces).listeners) listeners.add(l);
    }
    if (listeners.size === 0) continue;
    const refs = resolveBackends(route, world.grants, world.services);
    routes.push({ route, listeners: [...listeners], rules: refs.rules });
  }
  return { ...b, routes };
}

/** A route's verdict for each parentRef that names a Gateway of our class, in spec order. */
export function routeVerdicts(route: Route, world: GatewayWorld): ParentVerdict[] {
  const out: ParentVerdict[] = [];
  const refs = resolveBackends(route, world.grants, world.services);
  for (const ref of route.parentRefs) {
    const gateway = world.gateways.find((g) => namesGateway(ref, g));
    if (!gateway || !isOurGateway(gateway, world.classes)) continue;
    const { accepted } = judgeParent(gatewayListeners(gateway, world), route, ref, world.namespaces);
    out.push({ ref, accepted, resolvedRefs: refs.cond });
  }
  return out;
}
