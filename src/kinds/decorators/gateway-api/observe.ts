/**
 * What a Gateway API decorator sync can see: nothing but the request (no I/O). The Gateway API objects,
 * Namespaces (allowedRoutes selectors), Services (backendRefs), Tailnets and TailnetIngresses come from
 * `related`: customize asks for all of them, in every namespace (v2 hooks: a namespaced parent's related
 * rule without namespace selects in all namespaces, metacontroller pkg/controller/common/customize/manager.go).
 */
import { API_VERSION } from "../../../api/schemas.js";
import { objectsOf } from "../../../k8s/objects.js";
import type { HookRequest } from "../../../pipeline/types.js";
import { GRANT_VERSION, GW_V1, readGrant, readRoute } from "../../shared/gateway-api-objects.js";
import type { GatewayWorld } from "./bind.js";
import type { GatewayObservation } from "./plan.js";

export function observeWorld(req: HookRequest): GatewayWorld {
  return {
    classes: objectsOf(req.related, GW_V1, "GatewayClass"),
    gateways: objectsOf(req.related, GW_V1, "Gateway"),
    routes: [...objectsOf(req.related, GW_V1, "HTTPRoute"), ...objectsOf(req.related, GW_V1, "GRPCRoute")].map(
      readRoute,
    ),
    grants: objectsOf(req.related, GRANT_VERSION, "ReferenceGrant").map(readGrant),
    namespaces: objectsOf(req.related, "v1", "Namespace"),
    services: objectsOf(req.related, "v1", "Service"),
    tailnets: objectsOf(req.related, API_VERSION, "Tailnet"),
  };
}

export function observeGateway(req: HookRequest, now: Date): GatewayObservation {
  return {
    gateway: req.parent,
    world: observeWorld(req),
    attachments: objectsOf(req.children, API_VERSION, "TailnetIngress"),
    tailnetIngresses: objectsOf(req.related, API_VERSION, "TailnetIngress"),
    now,
  };
}
