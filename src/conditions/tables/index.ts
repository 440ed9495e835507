/**
 * Every kind's ReasonTable by kind name, the one registry of reasons: the reasons page and the coverage tests
 * read them from here; each table file also exports the typed names its kind builds conditions with. What
 * several tables share is composed from shared.ts ("not evaluated") and exposure.ts (the decorators' Exposed).
 */
import type { ReasonTable } from "../table.js";
import { AUTHKEY_REASONS } from "./authkey.js";
import { EGRESS_REASONS } from "./egress.js";
import { GATEWAY_REASONS } from "./gateway.js";
import {
  GATEWAY_API_GATEWAY_REASONS,
  GATEWAY_CLASS_REASONS,
  GATEWAY_LISTENER_REASONS,
  ROUTE_PARENT_REASONS,
} from "./gateway-api.js";
import { INGRESS_REASONS } from "./ingress.js";
import { INGRESS_CLASS_REASONS } from "./ingress-class.js";
import { SERVICE_REASONS } from "./service.js";
import { SITE_REASONS } from "./site.js";
import { TAILNET_REASONS } from "./tailnet.js";
import { USER_REASONS } from "./user.js";

export const REASON_TABLES: Readonly<Record<string, ReasonTable>> = {
  Tailnet: TAILNET_REASONS,
  TailnetEgress: EGRESS_REASONS,
  TailnetIngress: INGRESS_REASONS,
  TailnetSite: SITE_REASONS,
  TailnetGateway: GATEWAY_REASONS,
  Service: SERVICE_REASONS,
  IngressClass: INGRESS_CLASS_REASONS,
  // The Gateway API's objects (docs/gateway-api.md); keys name the prose files (gatewayclass.md, ...).
  GatewayClass: GATEWAY_CLASS_REASONS,
  GatewayAPI: GATEWAY_API_GATEWAY_REASONS,
  GatewayListener: GATEWAY_LISTENER_REASONS,
  RouteParent: ROUTE_PARENT_REASONS,
  TailnetUser: USER_REASONS,
  TailnetAuthKey: AUTHKEY_REASONS,
};
