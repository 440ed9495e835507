/**
 * The Gateway API class `tailnet` (docs/gateway-api.md): four DecoratorController kinds, one per resource
 * (decoratorcontrollers/gateway-api/; hook paths /hooks/gatewayapi-*, apart from the TailnetGateway kind's
 * /hooks/gateway), each deciding from its request alone which objects are ours:
 * - gatewayapi-class: a GatewayClass whose controllerName is ours gets `Accepted`;
 * - gatewayapi-gateway: a Gateway of such a class gets a TailnetIngress attachment and its whole status;
 * - gatewayapi-httproute, gatewayapi-grpcroute: a route gets its `status.parents[]` entries for our Gateways, and only those.
 * Like the Ingress class, they select every object (a class is a spec field, a DecoratorController selects by
 * labels and annotations only) and have no finalize hook (with one, Metacontroller would put its finalizer on
 * every object of the resource, of every class: pkg/controller/common/finalizer/finalizer.go SyncObject). An
 * object that is not ours gets an empty answer and a null status, so Metacontroller writes nothing to it.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { Stages } from "../../../pipeline/run.js";
import type { HookDeps, HookRequest, RelatedRule } from "../../../pipeline/types.js";
import { GW_V1 } from "../../shared/gateway-api-objects.js";
import { relatedAll, runDecorator } from "../hook.js";
import type { DecoratorModule, DecoratorRequest } from "../module.js";
import { planGatewayClass } from "./class-plan.js";
import { answerOf, decideGatewayApi, type GatewayApiDecision } from "./decide.js";
import { observeGateway, observeWorld } from "./observe.js";
import { type GatewayObservation, type GatewayPlan, planGateway } from "./plan.js";
import { planRouteStatus } from "./route-plan.js";

const worldRules = (): RelatedRule[] => [
  relatedAll(GW_V1, "gatewayclasses"),
  relatedAll(GW_V1, "gateways"),
  relatedAll(GW_V1, "httproutes"),
  relatedAll(GW_V1, "grpcroutes"),
  relatedAll("gateway.networking.k8s.io/v1beta1", "referencegrants"),
  relatedAll("v1", "namespaces"),
  relatedAll("v1", "services"),
  relatedAll(API_VERSION, "tailnets"),
];

/** A module whose whole answer is a status computed from the request (no attachments, no I/O). */
function statusModule(
  name: string,
  kind: string,
  clusterScoped: boolean,
  rules: () => RelatedRule[],
  plan: (req: HookRequest, now: Date) => Record<string, unknown> | null,
): DecoratorModule {
  const stages: Stages<undefined, Date, Record<string, unknown> | null, undefined, GatewayApiDecision> = {
    spec: () => undefined,
    observe: async (_req, _spec, deps) => deps.now(),
    plan: (req, _spec, now) => plan(req, now),
    act: async () => undefined,
    decide: ({ plan: status }) => decideGatewayApi([], status),
  };
  return {
    name,
    object: { apiVersion: GW_V1, kind, ...(clusterScoped ? { clusterScoped } : {}) },
    customize: rules,
    sync: async (req: DecoratorRequest, deps: HookDeps) => answerOf(await runDecorator(stages, req, deps)),
  };
}

export const gatewayClassModule = statusModule(
  "gatewayapi-class",
  "GatewayClass",
  true,
  () => [],
  (req, now) => planGatewayClass(req.parent, now),
);

const routeModule = (name: string, kind: string) =>
  statusModule(name, kind, false, worldRules, (req, now) => planRouteStatus(req.parent, observeWorld(req), now));

export const httpRouteModule = routeModule("gatewayapi-httproute", "HTTPRoute");
export const grpcRouteModule = routeModule("gatewayapi-grpcroute", "GRPCRoute");

const gatewayStages: Stages<undefined, GatewayObservation, GatewayPlan, undefined, GatewayApiDecision> = {
  spec: () => undefined,
  observe: async (req, _spec, deps) => observeGateway(req, deps.now()),
  plan: (_req, _spec, observed) => planGateway(observed),
  act: async () => undefined,
  decide: ({ plan }) => decideGatewayApi(plan.attachments, plan.status),
};

export const gatewayModule: DecoratorModule = {
  name: "gatewayapi-gateway",
  object: { apiVersion: GW_V1, kind: "Gateway" },
  customize: () => [...worldRules(), relatedAll(API_VERSION, "tailnetingresses")],
  sync: async (req, deps) => answerOf(await runDecorator(gatewayStages, req, deps)),
};

export const gatewayApiModules: readonly DecoratorModule[] = [
  gatewayClassModule,
  gatewayModule,
  httpRouteModule,
  grpcRouteModule,
];
