/**
 * Decide inputs for a TailnetIngress whose backend is in another namespace (ingress/permitted.ts): the ingress
 * `grafana` in monitoring naming Service other/grafana, the ReferenceGrants and routes around it.
 */
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { IngressDecideInput } from "../../../../src/kinds/composite/ingress/decide.js";
import type { GrantsSeen } from "../../../../src/kinds/composite/ingress/permitted.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import {
  GRANT_VERSION,
  GW_GROUP,
  GW_V1,
  readGrant,
  readRoute,
} from "../../../../src/kinds/shared/gateway-api-objects.js";
import { type ExposeInput, ingress, NS, WEB } from "./fixtures.js";

export const OTHER = "other";
/** WEB with its backend moved to namespace other. */
export const FOREIGN_WEB: ExposeInput = { ...WEB, backend: { service: "grafana", namespace: OTHER, port: 3000 } };
/** A second expose, of this namespace, under web's names on another port: served whatever happens to web. */
export const LOCAL: ExposeInput = { ...WEB, name: "local", port: 8443, backend: { service: "local", port: 8080 } };

export const grantObject = (
  namespace: string,
  from: { group: string; kind: string; namespace: string }[],
  to: { group: string; kind: string; name?: string }[],
  name = "allow",
): K8sObject => ({
  apiVersion: GRANT_VERSION,
  kind: "ReferenceGrant",
  metadata: { name, namespace },
  spec: { from, to },
});

/** The grant that gives TailnetIngresses of monitoring Service other/<name> (every Service without a name). */
export const rightGrant = (name?: string) =>
  grantObject(
    OTHER,
    [{ group: "tailnet.internal", kind: "TailnetIngress", namespace: NS }],
    [{ group: "", kind: "Service", ...(name ? { name } : {}) }],
  );

export const route = (
  name: string,
  namespace: string,
  opts: { kind?: "HTTPRoute" | "GRPCRoute"; parent?: Record<string, unknown>; backendRefs?: unknown[] } = {},
): K8sObject => ({
  apiVersion: GW_V1,
  kind: opts.kind ?? "HTTPRoute",
  metadata: { name, namespace },
  spec: {
    parentRefs: [opts.parent ?? { name: "web", namespace: NS }],
    rules: [{ backendRefs: opts.backendRefs ?? [{ name: "grafana", namespace: OTHER, port: 3000 }] }],
  },
});

export const seen = (objects: K8sObject[], served = true): GrantsSeen => ({
  served,
  grants: objects.filter((o) => o.kind === "ReferenceGrant").map(readGrant),
  routes: objects.filter((o) => o.kind !== "ReferenceGrant").map(readRoute),
});

/** The ingress a Gateway `web` of monitoring controls (its ownerReference, forgeable by any editor of monitoring). */
export function gatewayOwned(
  backend: ExposeInput["backend"],
  owner: Record<string, unknown> = { name: "web", controller: true },
): K8sObject {
  const parent = ingress("grafana", { exposes: [{ ...WEB, backend }] });
  parent.metadata.ownerReferences = [
    { apiVersion: `${GW_GROUP}/v1`, kind: "Gateway", uid: "uid-gw", ...owner } as never,
  ];
  return parent;
}

/** A decide input over `parent` with the grants and routes seen (the spec read from it). */
export const withGrants = (
  input: (over: Partial<IngressDecideInput>) => IngressDecideInput,
  parent: K8sObject,
  grants: GrantsSeen,
): IngressDecideInput => ({ ...input({ parent, backendGrants: grants }), spec: readIngressSpec(parent) });

/** One row per reason the rule adds, for the reasons-table coverage (decide.test.ts). */
export function grantRows(input: (over: Partial<IngressDecideInput>) => IngressDecideInput) {
  const parent = ingress("grafana", { exposes: [FOREIGN_WEB] });
  return [
    { reason: "BackendNotPermitted", input: () => withGrants(input, parent, seen([])) },
    { reason: "GatewayAPIMissing", input: () => withGrants(input, parent, seen([rightGrant()], false)) },
  ];
}
