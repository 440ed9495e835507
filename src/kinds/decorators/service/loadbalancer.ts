/**
 * LoadBalancer Services of our class (`spec.loadBalancerClass: tailnet.internal/tailnet`): exposed
 * exactly as `tailnet.internal/expose: "true"` exposes a Service (the same TailnetIngress attachment,
 * annotations, reasons), plus `status.loadBalancer.ingress` with the tailnet addresses and the
 * MagicDNS name, so `kubectl get svc` shows them as EXTERNAL-IP. Pure; docs/services.md.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { Annotation, isTailnetLoadBalancer, LOAD_BALANCER_CLASS, Written } from "./annotations.js";
import { type ReadSpec, readServiceSpec } from "./spec.js";

/** What a user may get wrong on a Service of our class, before the annotations are read. */
export function readLoadBalancerSpec(service: K8sObject): ReadSpec {
  const a = service.metadata.annotations ?? {};
  const refuse = (reason: "ConflictingAnnotations" | "UnsupportedField", message: string): ReadSpec => ({
    ok: false,
    refusal: { reason, message },
  });
  const cls = `spec.loadBalancerClass ${LOAD_BALANCER_CLASS}`;
  if (a[Annotation.target] !== undefined) {
    return refuse(
      "ConflictingAnnotations",
      `${Annotation.target} is set on a Service of ${cls}, which exposes it on the tailnet; a Service is either exposed or a way to a tailnet host, not both — remove the annotation`,
    );
  }
  const expose = a[Annotation.expose];
  if (expose !== undefined && expose !== "true") {
    return refuse(
      "ConflictingAnnotations",
      `${Annotation.expose}: "${expose.slice(0, 20)}" contradicts ${cls}, which exposes the Service (the class cannot be changed) — remove the annotation`,
    );
  }
  const spec = (service.spec ?? {}) as { loadBalancerSourceRanges?: unknown; loadBalancerIP?: unknown };
  // Refused rather than ignored: exposing wider than the Service asks for would be a silent surprise.
  if (Array.isArray(spec.loadBalancerSourceRanges) && spec.loadBalancerSourceRanges.length > 0) {
    return refuse(
      "UnsupportedField",
      `spec.loadBalancerSourceRanges cannot be enforced on the tailnet (the agent sees tailnet addresses, not the client's network); remove it and name who may connect with ${Annotation.allowFrom}`,
    );
  }
  if (typeof spec.loadBalancerIP === "string" && spec.loadBalancerIP !== "") {
    return refuse(
      "UnsupportedField",
      `spec.loadBalancerIP "${spec.loadBalancerIP.slice(0, 45)}" cannot be honoured: Headscale assigns the tailnet addresses; remove it`,
    );
  }
  return readServiceSpec(service, "expose");
}

/**
 * How a Service asks to be exposed, if it does: the class (which wins over the annotation) or the
 * annotation. Both decorators and the hostname rivalry (decide.ts olderRival) judge through this one rule.
 */
export function exposureOf(service: K8sObject, defaultClass: boolean): "class" | "annotation" | undefined {
  if (isTailnetLoadBalancer(service, defaultClass)) return "class";
  if (service.metadata.annotations?.[Annotation.expose] === "true") return "annotation";
  return undefined;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ipMode?: string;
}

interface IngressStatus {
  dnsName?: string;
  nodes?: { addresses?: string[] }[];
}

const isV4 = (ip: string) => !ip.includes(":");

/** Every tailnet address of the attachment's nodes (IPv4 first, each family sorted), then its MagicDNS name. */
export function ingressEntries(attachment: K8sObject | undefined): LoadBalancerIngress[] {
  const status = (attachment?.status ?? {}) as IngressStatus;
  const ips = [...new Set((status.nodes ?? []).flatMap((n) => (Array.isArray(n.addresses) ? n.addresses : [])))];
  const sorted = [...ips.filter(isV4).sort(), ...ips.filter((ip) => !isV4(ip)).sort()];
  return [
    ...sorted.map((ip) => ({ ip })),
    ...(typeof status.dnsName === "string" && status.dnsName ? [{ hostname: status.dnsName }] : []),
  ];
}

/** Entries compared without ipMode, which an API server ≥ 1.30 defaults to VIP on every ip entry. */
const sameEntries = (a: readonly LoadBalancerIngress[], b: readonly LoadBalancerIngress[]) =>
  a.length === b.length && a.every((x, i) => x.ip === b[i]?.ip && x.hostname === b[i]?.hostname);

/**
 * The Service's status with `loadBalancer` ours: the attachment's addresses once it is Ready; kept
 * while the attachment still holds them (a NotReady blip does not flap EXTERNAL-IP); `{}` otherwise.
 * Every other status field is the Service's own and returned as it is: Metacontroller writes the
 * answer's status wholesale through the status subresource (decorator/controller.go syncParentObject).
 */
export function loadBalancerStatus(
  service: K8sObject,
  ready: boolean,
  attachment: K8sObject | undefined,
): Record<string, unknown> {
  const status = (service.status ?? {}) as { loadBalancer?: { ingress?: LoadBalancerIngress[] } };
  const live = Array.isArray(status.loadBalancer?.ingress) ? status.loadBalancer.ingress : [];
  const held = ingressEntries(attachment);
  const want = ready || (live.length > 0 && sameEntries(live, held)) ? held : [];
  // the server's own bytes when they say the same (ipMode defaulted): no status write on every sync
  const ingress = sameEntries(live, want) ? live : want;
  return { ...status, loadBalancer: ingress.length ? { ingress } : {} };
}

/**
 * A Service the class decorator does not expose. Nothing at all — no label, annotation or status —
 * unless it carries the state this decorator wrote when it was ours (its type changed away from
 * LoadBalancer, the one way a Service leaves our class): then that state is removed, and the
 * addresses too while it is no LoadBalancer (no other controller writes them then). A Service
 * annotated `tailnet.internal/expose: "true"` is the annotation decorator's and left to it.
 */
export function leftAlone(service: K8sObject): {
  labels: Record<string, null>;
  annotations: Record<string, null>;
  status?: Record<string, unknown>;
} {
  const keys = Written.expose;
  const wrote = service.metadata.labels?.[keys.state] !== undefined;
  if (!wrote || service.metadata.annotations?.[Annotation.expose] === "true") return { labels: {}, annotations: {} };
  const status = (service.status ?? {}) as { loadBalancer?: { ingress?: unknown[] } };
  const type = (service.spec as { type?: string } | undefined)?.type;
  const stale = type !== "LoadBalancer" && (status.loadBalancer?.ingress?.length ?? 0) > 0;
  return {
    labels: { [keys.state]: null },
    annotations: { [keys.message]: null, [keys.address]: null },
    ...(stale ? { status: { ...status, loadBalancer: {} } } : {}),
  };
}
