/**
 * A route's backendRefs resolved (pure), with its ResolvedRefs condition (kubernetes-sigs/gateway-api apis/v1
 * shared_types.go RouteConditionResolvedRefs; httproute_types.go HTTPRouteRule.BackendRefs):
 * - a ref that is not a core Service is InvalidKind;
 * - a Service in another namespace needs a ReferenceGrant there allowing this route kind from the route's
 *   namespace (to all Services, or to that one): else RefNotPermitted — the route author cannot reach into a
 *   namespace that did not consent;
 * - a Service that does not exist (or a ref without port) is BackendNotFound.
 * An unresolved ref keeps its weight with no Service: the agent answers its share of the requests 500, as the
 * spec requires ("the proportion of requests that would otherwise have been routed to an invalid backend MUST
 * receive a 500"). A rule without backendRefs answers every request 500. GRPCRoute backends are spoken to in h2c.
 */
import { RouteCondition as C, RouteReason as R } from "../../../conditions/tables/gateway-api.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { WeightedBackend } from "../../shared/expose-paths.js";
import {
  type Grant,
  GW_GROUP,
  granted,
  type Route,
  type RouteBackend,
  type RouteMatch,
} from "../../shared/gateway-api-objects.js";
import { type RouteParentCondition, routeCond } from "./conditions.js";

export interface ResolvedRule {
  matches: RouteMatch[];
  backends: WeightedBackend[];
}

type Refusal = { reason: "InvalidKind" | "RefNotPermitted" | "BackendNotFound"; message: string };

function refusalOf(
  b: RouteBackend,
  route: Route,
  grants: readonly Grant[],
  services: readonly K8sObject[],
): Refusal | undefined {
  const who = `${b.namespace}/${b.name}`;
  if (b.group !== "" || b.kind !== "Service") {
    return { reason: R.InvalidKind, message: `${b.group || "core"}/${b.kind} ${who} is not a Service` };
  }
  const from = { group: GW_GROUP, kind: route.kind, namespace: route.namespace };
  if (!granted(grants, from, { group: "", kind: "Service", namespace: b.namespace, name: b.name })) {
    return {
      reason: R.RefNotPermitted,
      message: `Service ${who}: no ReferenceGrant in ${b.namespace} allows ${route.kind}s from ${route.namespace}`,
    };
  }
  if (!services.some((s) => s.metadata.name === b.name && s.metadata.namespace === b.namespace)) {
    return { reason: R.BackendNotFound, message: `Service ${who} does not exist` };
  }
  if (b.port === undefined) return { reason: R.BackendNotFound, message: `Service ${who}: port is required` };
  return undefined;
}

export function resolveBackends(
  route: Route,
  grants: readonly Grant[],
  services: readonly K8sObject[],
): { cond: RouteParentCondition; rules: ResolvedRule[] } {
  const refusals: Refusal[] = [];
  const protocol = route.kind === "GRPCRoute" ? { protocol: "h2c" as const } : {};
  const rules = route.rules.map((rule): ResolvedRule => {
    if (rule.backends.length === 0) return { matches: rule.matches, backends: [{ weight: 1 }] };
    const backends = rule.backends.map((b): WeightedBackend => {
      const refused = refusalOf(b, route, grants, services);
      if (refused) {
        refusals.push(refused);
        return { weight: b.weight };
      }
      return {
        // the route it comes from: the TailnetIngress re-checks a backend in another namespace against it
        // (ingress/permitted.ts), so a hand-written ingress cannot claim what no route gave its Gateway
        backend: {
          service: b.name,
          namespace: b.namespace,
          port: b.port as number,
          ...protocol,
          route: { kind: route.kind, namespace: route.namespace, name: route.name },
        },
        weight: b.weight,
      };
    });
    return { matches: rule.matches, backends };
  });
  const first = refusals[0];
  if (!first) return { cond: routeCond(C.ResolvedRefs, "True", R.ResolvedRefs, "every backendRef is resolved"), rules };
  const more = refusals.length > 1 ? ` (and ${refusals.length - 1} more)` : "";
  return {
    cond: routeCond(
      C.ResolvedRefs,
      "False",
      first.reason,
      `${first.message}${more}; its share of requests is answered 500`,
    ),
    rules,
  };
}
