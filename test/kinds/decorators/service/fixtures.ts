/** Builders for the annotated-Service tests: the Service, Tailnets, and the attachments as observed. */
import { API_VERSION } from "../../../../src/api/schemas.js";
import { goJson } from "../../../../src/emulator/metacontroller/apply.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { LAST_APPLIED } from "../../../../src/k8s/objects.js";
import type { ServiceObservation } from "../../../../src/kinds/decorators/service/observe.js";

export const NS = "monitoring";
export const UID = "svc-uid-1";

export interface ServiceOpts {
  name?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ports?: { name?: string; port: number; protocol?: string }[];
  type?: string;
  externalName?: string;
  uid?: string;
  /** More spec fields (loadBalancerClass, loadBalancerSourceRanges, …). */
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export function service(opts: ServiceOpts = {}): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: opts.name ?? "grafana",
      namespace: NS,
      uid: opts.uid ?? UID,
      creationTimestamp: "2026-11-01T00:00:00Z",
      annotations: opts.annotations ?? { "tailnet.internal/expose": "true" },
      ...(opts.labels ? { labels: opts.labels } : {}),
    },
    spec: {
      type: opts.type ?? "ClusterIP",
      ...(opts.externalName ? { externalName: opts.externalName } : {}),
      ports: opts.ports ?? [{ name: "http", port: 3000, protocol: "TCP" }],
      ...opts.spec,
    },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

/** A LoadBalancer Service of our class (no annotations unless given). */
export const lbService = (opts: ServiceOpts = {}): K8sObject =>
  service({
    annotations: {},
    ...opts,
    type: "LoadBalancer",
    spec: { loadBalancerClass: "tailnet.internal/tailnet", ...opts.spec },
  });

export function tailnet(name = "home", baseDomain = "ts.example.com"): K8sObject {
  return {
    apiVersion: API_VERSION,
    kind: "Tailnet",
    metadata: { name, uid: `tailnet-${name}`, creationTimestamp: "2026-10-01T00:00:00Z" },
    spec: { headscale: { url: "http://hs", apiKeySecretRef: { namespace: "x", name: "y" } }, dns: { baseDomain } },
  };
}

export interface ObservedOpts {
  name?: string;
  namespace?: string;
  spec: Record<string, unknown>;
  ownerUid?: string;
  created?: string;
  generation?: number;
  status?: Record<string, unknown>;
  /** Metacontroller's last-applied annotation holds this spec (default: the observed spec). */
  lastApplied?: Record<string, unknown> | false;
  deleting?: boolean;
}

/** An observed TailnetIngress/TailnetEgress as Metacontroller sends it. */
export function observed(kind: "TailnetIngress" | "TailnetEgress", o: ObservedOpts): K8sObject {
  const name = o.name ?? "grafana";
  const namespace = o.namespace ?? NS;
  const applied =
    o.lastApplied === false
      ? undefined
      : { apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec: o.lastApplied ?? o.spec };
  return {
    apiVersion: API_VERSION,
    kind,
    metadata: {
      name,
      namespace,
      uid: `${kind}-${namespace}-${name}`,
      generation: o.generation ?? 1,
      creationTimestamp: o.created ?? "2026-11-02T00:00:00Z",
      ...(o.deleting ? { deletionTimestamp: "2026-11-29T00:00:00Z" } : {}),
      ...(o.ownerUid === undefined
        ? {}
        : { ownerReferences: [{ apiVersion: "v1", kind: "Service", name, uid: o.ownerUid, controller: true }] }),
      annotations: {
        "metacontroller.k8s.io/decorator-controller": "tailnet-operator-service-expose",
        // as Metacontroller writes it: Go's json.Marshal of a map (sorted keys)
        ...(applied ? { [LAST_APPLIED]: goJson(applied) } : {}),
      },
    },
    spec: o.spec,
    ...(o.status ? { status: o.status } : {}),
  };
}

export const ready = (status: "True" | "False" | "Unknown", reason: string, message = "", generation = 1) => ({
  observedGeneration: generation,
  conditions: [{ type: "Ready", status, reason, message }],
});

export function input(o: Partial<ServiceObservation> = {}): ServiceObservation {
  return {
    service: o.service ?? service(),
    tailnets: o.tailnets ?? [tailnet()],
    ingresses: o.ingresses ?? [],
    egresses: o.egresses ?? [],
    services: o.services ?? [],
    attachments: o.attachments ?? [],
    ...(o.previousState ? { previousState: o.previousState } : {}),
  };
}

/** The TailnetIngress spec the operator makes for service() with default annotations. */
export const GRAFANA_INGRESS_SPEC = {
  tailnetRef: { name: "home" },
  hostname: "grafana",
  mode: "tcp",
  exposes: [{ name: "http", port: 3000, backend: { service: "grafana", port: 3000 } }],
};
