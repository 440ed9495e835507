/** Builders for the Ingress-class tests: Ingresses, the IngressClass, and observations of one sync. */
import { API_VERSION } from "../../../../src/api/schemas.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { IngressClassObservation } from "../../../../src/kinds/decorators/ingress-class/observe.js";

export const NS = "monitoring";
export const BASE = "ts.example.com";

export const ingressClass = (name = "tailnet", controller = "tailnet.internal/ingress"): K8sObject => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "IngressClass",
  metadata: { name, uid: `class-${name}` },
  spec: { controller },
});

export const svcBackend = (name: string, port: number | string) => ({
  service: { name, port: typeof port === "number" ? { number: port } : { name: port } },
});

export function ingress(
  spec: Record<string, unknown>,
  opts: { name?: string; annotations?: Record<string, string>; labels?: Record<string, string>; status?: unknown } = {},
): K8sObject {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name: opts.name ?? "grafana",
      namespace: NS,
      uid: `uid-ing-${opts.name ?? "grafana"}`,
      creationTimestamp: "2026-11-01T00:00:00Z",
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
      ...(opts.labels ? { labels: opts.labels } : {}),
    },
    spec,
    ...(opts.status ? { status: opts.status } : {}),
  };
}

/** One host `grafana.<BASE>` → Service grafana:3000, TLS Secret grafana-tls. */
export const simpleSpec = (extra: Record<string, unknown> = {}) => ({
  ingressClassName: "tailnet",
  tls: [{ hosts: [`grafana.${BASE}`], secretName: "grafana-tls" }],
  rules: [
    {
      host: `grafana.${BASE}`,
      http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
    },
  ],
  ...extra,
});

export const tailnet = (name = "home"): K8sObject => ({
  apiVersion: API_VERSION,
  kind: "Tailnet",
  metadata: { name, uid: `tailnet-${name}`, creationTimestamp: "2026-10-01T00:00:00Z" },
  spec: { dns: { baseDomain: BASE } },
});

export function observe(ing: K8sObject, extra: Partial<IngressClassObservation> = {}): IngressClassObservation {
  return {
    ingress: ing,
    ingressClasses: [ingressClass()],
    tailnets: [tailnet()],
    tailnetIngresses: [],
    services: [],
    attachments: [],
    previousState: ing.metadata.labels?.["tailnet.internal/ingress-state"],
    ...extra,
  };
}
