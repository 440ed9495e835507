/** The scenario helpers of the Gateway API decide tests: one sync's plan, its conditions, the tables they cover. */
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { type GatewayPlan, planGateway } from "../../../../src/kinds/decorators/gateway-api/plan.js";
import { planRouteStatus } from "../../../../src/kinds/decorators/gateway-api/route-plan.js";
import { CONTROLLER_NAME } from "../../../../src/kinds/shared/gateway-api-objects.js";
import { BASE, gateway, listener, NOW, service, world } from "./fixtures.js";

export type Cond = ConditionInput & { lastTransitionTime?: string; observedGeneration?: number };
export type GwStatus = {
  conditions: Cond[];
  listeners: { name: string; attachedRoutes: number; supportedKinds: unknown[]; conditions: Cond[] }[];
  addresses?: unknown[];
};

export const produced = {
  class: [] as Cond[][],
  gateway: [] as Cond[][],
  listener: [] as Cond[][],
  route: [] as Cond[][],
};

export function planOf(gw: K8sObject, objects: K8sObject[] = [], attachments: K8sObject[] = []): GatewayPlan {
  const p = planGateway({
    gateway: gw,
    world: world([gw, ...objects]),
    attachments,
    tailnetIngresses: attachments,
    now: NOW,
  });
  const s = p.status as GwStatus | null;
  // a released Gateway's status is the CRD's default, not ours
  if (s?.listeners) {
    produced.gateway.push(s.conditions);
    for (const l of s.listeners) produced.listener.push(l.conditions);
  }
  return p;
}

export const statusOf = (p: GatewayPlan) => p.status as GwStatus;
export const reasons = (cs: readonly Cond[]) => Object.fromEntries(cs.map((c) => [c.type, `${c.status}/${c.reason}`]));
export const listenerReasons = (p: GatewayPlan, name: string) =>
  reasons(statusOf(p).listeners.find((l) => l.name === name)?.conditions ?? []);
export const exposesOf = (p: GatewayPlan) =>
  (p.attachments[0]?.spec as { exposes: Record<string, unknown>[] } | undefined)?.exposes;

export function routeStatus(route: K8sObject, objects: K8sObject[]) {
  const s = planRouteStatus(route, world([route, ...objects]), NOW) as {
    parents: { controllerName: string; conditions: Cond[] }[];
  } | null;
  for (const p of s?.parents ?? []) if (p.controllerName === CONTROLLER_NAME) produced.route.push(p.conditions);
  return s;
}
export const ourParent = (s: ReturnType<typeof routeStatus>, i = 0) =>
  reasons(s?.parents.filter((p) => p.controllerName === CONTROLLER_NAME)[i]?.conditions ?? []);

export const web = () =>
  gateway([listener("https", { hostname: `shop.${BASE}`, allowedRoutes: { namespaces: { from: "Same" } } })]);
export const api = service("api");
export const canary = service("api-canary");
