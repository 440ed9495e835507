/** Builders for the Gateway API tests: the class, Gateways, routes, grants, Services, Namespaces. */
import { API_VERSION } from "../../../../src/api/schemas.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { GatewayWorld } from "../../../../src/kinds/decorators/gateway-api/bind.js";
import { CONTROLLER_NAME, GW_V1, readGrant, readRoute } from "../../../../src/kinds/shared/gateway-api-objects.js";

export const NS = "shop";
export const BASE = "ts.example.com";
export const NOW = new Date("2026-12-05T12:00:00Z");

export const gatewayClass = (
  name = "tailnet",
  controllerName = CONTROLLER_NAME,
  extra: Record<string, unknown> = {},
): K8sObject => ({
  apiVersion: GW_V1,
  kind: "GatewayClass",
  metadata: { name, uid: `class-${name}`, generation: 1 },
  spec: { controllerName, ...extra },
});

export const listener = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  protocol: "HTTPS",
  port: 443,
  tls: { mode: "Terminate", certificateRefs: [{ name: `${name}-tls` }] },
  ...extra,
});

export function gateway(
  listeners: unknown[],
  opts: {
    name?: string;
    namespace?: string;
    className?: string;
    annotations?: Record<string, string>;
    spec?: Record<string, unknown>;
  } = {},
): K8sObject {
  const name = opts.name ?? "web";
  return {
    apiVersion: GW_V1,
    kind: "Gateway",
    metadata: {
      name,
      namespace: opts.namespace ?? NS,
      uid: `uid-gw-${name}`,
      generation: 1,
      creationTimestamp: "2026-11-01T00:00:00Z",
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: { gatewayClassName: opts.className ?? "tailnet", listeners, ...(opts.spec ?? {}) },
  };
}

export const backendRef = (name: string, port = 80, extra: Record<string, unknown> = {}) => ({ name, port, ...extra });

export function httpRoute(
  name: string,
  spec: Record<string, unknown>,
  opts: { namespace?: string; created?: string; status?: unknown } = {},
): K8sObject {
  return {
    apiVersion: GW_V1,
    kind: "HTTPRoute",
    metadata: {
      name,
      namespace: opts.namespace ?? NS,
      uid: `uid-hr-${name}`,
      generation: 2,
      creationTimestamp: opts.created ?? "2026-11-02T00:00:00Z",
    },
    spec: { parentRefs: [{ name: "web" }], ...spec },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

export function grpcRoute(name: string, spec: Record<string, unknown>, opts: { namespace?: string } = {}): K8sObject {
  return {
    apiVersion: GW_V1,
    kind: "GRPCRoute",
    metadata: {
      name,
      namespace: opts.namespace ?? NS,
      uid: `uid-gr-${name}`,
      generation: 1,
      creationTimestamp: "2026-11-03T00:00:00Z",
    },
    spec: { parentRefs: [{ name: "web" }], ...spec },
  };
}

export const referenceGrant = (
  namespace: string,
  from: Record<string, string>[],
  to: Record<string, string>[],
): K8sObject => ({
  apiVersion: "gateway.networking.k8s.io/v1beta1",
  kind: "ReferenceGrant",
  metadata: { name: `grant-${namespace}`, namespace, uid: `uid-grant-${namespace}` },
  spec: { from, to },
});

export const service = (name: string, namespace = NS, ports = [80]): K8sObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace, uid: `uid-svc-${namespace}-${name}` },
  spec: { ports: ports.map((port) => ({ port })) },
});

export const namespace = (name: string, labels: Record<string, string> = {}): K8sObject => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name, uid: `uid-ns-${name}`, labels: { "kubernetes.io/metadata.name": name, ...labels } },
});

export const tailnet = (name = "home"): K8sObject => ({
  apiVersion: API_VERSION,
  kind: "Tailnet",
  metadata: { name, uid: `tailnet-${name}`, creationTimestamp: "2026-10-01T00:00:00Z" },
  spec: { dns: { baseDomain: BASE } },
});

/** A world of the given objects, with the class, one Tailnet and the namespaces shop and other. */
export function world(objects: K8sObject[]): GatewayWorld {
  const of = (kind: string) => objects.filter((o) => o.kind === kind);
  return {
    classes: [gatewayClass(), ...of("GatewayClass")],
    gateways: of("Gateway"),
    routes: [...of("HTTPRoute"), ...of("GRPCRoute")].map(readRoute),
    grants: of("ReferenceGrant").map(readGrant),
    namespaces: [namespace(NS), namespace("other", { team: "other" }), ...of("Namespace")],
    services: of("Service"),
    tailnets: [tailnet()],
  };
}
