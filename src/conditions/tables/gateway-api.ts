/**
 * The Gateway API's own conditions, as kubernetes-sigs/gateway-api apis/v1 defines them (gatewayclass_types.go,
 * gateway_types.go, shared_types.go): the GatewayClass `tailnet`, its Gateways and their listeners, and each
 * HTTPRoute/GRPCRoute's `status.parents[]` entry for a Gateway of the class. The reasons are the spec's, plus
 * two of ours where the spec has none (its godoc: "Controllers may raise this condition with other reasons"):
 * `InvalidAnnotation` on a Gateway, `UnsupportedHostname` on a listener (docs/gateway-api.md). A route's
 * `Pending` is left out: the hook judges every parentRef of ours in the sync that sees it, never "not yet".
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";

export const GATEWAY_CLASS_REASONS = {
  Accepted: { Accepted: ["True"], InvalidParameters: ["False"] },
} as const satisfies ReasonTable;

export const GATEWAY_API_GATEWAY_REASONS = {
  Accepted: {
    Accepted: ["True"],
    ListenersNotValid: ["True", "False"],
    InvalidParameters: ["False"],
    UnsupportedAddress: ["False"],
    InvalidAnnotation: ["False"],
  },
  Programmed: { Programmed: ["True"], Invalid: ["False"], Pending: ["Unknown"] },
} as const satisfies ReasonTable;

export const GATEWAY_LISTENER_REASONS = {
  Accepted: {
    Accepted: ["True"],
    PortUnavailable: ["False"],
    UnsupportedProtocol: ["False"],
    UnsupportedHostname: ["False"],
  },
  Programmed: { Programmed: ["True"], Invalid: ["False"], Pending: ["Unknown"] },
  ResolvedRefs: {
    ResolvedRefs: ["True"],
    InvalidCertificateRef: ["False"],
    InvalidRouteKinds: ["False"],
    RefNotPermitted: ["False"],
  },
  Conflicted: { NoConflicts: ["False"], HostnameConflict: ["True"] },
} as const satisfies ReasonTable;

export const ROUTE_PARENT_REASONS = {
  Accepted: {
    Accepted: ["True"],
    NotAllowedByListeners: ["False"],
    NoMatchingListenerHostname: ["False"],
    NoMatchingParent: ["False"],
    UnsupportedValue: ["False"],
  },
  ResolvedRefs: {
    ResolvedRefs: ["True"],
    RefNotPermitted: ["False"],
    InvalidKind: ["False"],
    BackendNotFound: ["False"],
  },
} as const satisfies ReasonTable;

export const GatewayClassCondition = conditionNames(GATEWAY_CLASS_REASONS);
export const GatewayClassReason = reasonNames(GATEWAY_CLASS_REASONS);
export const GatewayApiCondition = conditionNames(GATEWAY_API_GATEWAY_REASONS);
export const GatewayApiReason = reasonNames(GATEWAY_API_GATEWAY_REASONS);
export const ListenerCondition = conditionNames(GATEWAY_LISTENER_REASONS);
export const ListenerReason = reasonNames(GATEWAY_LISTENER_REASONS);
export const RouteCondition = conditionNames(ROUTE_PARENT_REASONS);
export const RouteReason = reasonNames(ROUTE_PARENT_REASONS);
