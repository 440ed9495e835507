/**
 * The attachments of an annotated Service (pure builders): a TailnetIngress exposing its TCP ports
 * (mode tcp, each expose forwarding to the Service itself), or a TailnetEgress whose one target is the
 * annotated host on the same ports. Both are named after the Service, in its namespace; Metacontroller
 * adds the Service as their controller owner.
 */
import { API_VERSION, GROUP } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { ServiceSpec } from "./spec.js";

/** On every attachment: the Service it was made for (`kubectl get tni,tne -l tailnet.internal/service`). */
export const SERVICE_LABEL = `${GROUP}/service`;

export const attachmentKind = (spec: Pick<ServiceSpec, "role">) =>
  spec.role === "expose" ? "TailnetIngress" : "TailnetEgress";

/** The egress's target Service (DNS-1035, at most 63): `<service>-tailnet`, the Service name cut to fit. */
export function targetServiceName(service: string): string {
  const base = service.length > 55 ? service.slice(0, 55).replace(/-+$/, "") : service;
  return `${base}-tailnet`;
}

/** Where cluster clients reach the tailnet host: the egress's target Service. */
export const targetAddress = (spec: Pick<ServiceSpec, "name" | "namespace">) =>
  `${targetServiceName(spec.name)}.${spec.namespace}.svc.cluster.local`;

export function serviceAttachment(spec: ServiceSpec, tailnet: string): K8sObject {
  const metadata = { name: spec.name, namespace: spec.namespace, labels: { [SERVICE_LABEL]: spec.name } };
  const common = { tailnetRef: { name: tailnet }, ...(spec.tag ? { tag: spec.tag } : {}) };
  if (spec.role === "expose") {
    return {
      apiVersion: API_VERSION,
      kind: "TailnetIngress",
      metadata,
      spec: {
        ...common,
        hostname: spec.hostname,
        mode: "tcp",
        ...(spec.allowFrom.length ? { allowFrom: spec.allowFrom } : {}),
        exposes: spec.ports.map((p) => ({ name: p.name, port: p.port, backend: { service: spec.name, port: p.port } })),
      },
    };
  }
  return {
    apiVersion: API_VERSION,
    kind: "TailnetEgress",
    metadata,
    spec: {
      ...common,
      targets: [
        {
          name: targetServiceName(spec.name),
          host: spec.target ?? "",
          ports: spec.ports.map((p) => ({ port: p.port, protocol: "TCP" })),
        },
      ],
    },
  };
}
