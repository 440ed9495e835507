/**
 * The annotations of one Service, read once and checked: what a user may get wrong on a Service is
 * refused here with the annotation named (InvalidAnnotation, ConflictingAnnotations,
 * UnsupportedPorts), before anything is observed. Pure.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { type Exposure, exposureAnnotations, isDns1035Label, isTag, isTailnetName } from "../annotations.js";
import { Annotation, type Role } from "./annotations.js";

/** TailnetIngress.spec.exposes and TailnetEgress.spec.targets[].ports allow at most this many. */
export const MAX_PORTS: Record<Role, number> = { expose: 32, target: 16 };

export interface ServicePort {
  /** The Service port's name when it is a DNS-1035 label, otherwise `port-<port>`. */
  name: string;
  port: number;
}

/** `hostname` is the tailnet node name of an exposure. */
export interface ServiceSpec extends Exposure {
  role: Role;
  /** target: the tailnet host. */
  target?: string;
  /** The TCP ports, in Service order. */
  ports: ServicePort[];
  /** `spec.type` and `spec.externalName` (target: an ExternalName Service must point at the egress Service). */
  type: string;
  externalName?: string;
}

export type SpecRefusal = {
  reason: "ConflictingAnnotations" | "InvalidAnnotation" | "UnsupportedPorts" | "UnsupportedField";
  message: string;
};

export type ReadSpec = { ok: true; spec: ServiceSpec } | { ok: false; refusal: SpecRefusal };

/** A node name, MagicDNS name, IPv4 or IPv6 address: no spaces, commas or slashes. */
const HOST = /^[A-Za-z0-9]([-A-Za-z0-9.:]{0,251}[A-Za-z0-9])?$/;

const invalid = (key: string, message: string): ReadSpec => ({
  ok: false,
  refusal: { reason: "InvalidAnnotation", message: `${key}: ${message}` },
});

export function readServiceSpec(service: K8sObject, role: Role): ReadSpec {
  const a = service.metadata.annotations ?? {};
  const exposing = a[Annotation.expose] === "true";
  const target = a[Annotation.target]?.trim();
  if (exposing && target) {
    return {
      ok: false,
      refusal: {
        reason: "ConflictingAnnotations",
        message: `${Annotation.expose}: "true" and ${Annotation.target}: "${target.slice(0, 100)}" are both set; a Service is either exposed on the tailnet or a way to a tailnet host, not both — remove one`,
      },
    };
  }
  const { tailnet, tags, allowFrom, hostname } = exposureAnnotations(service);
  if (tailnet !== undefined && !isTailnetName(tailnet)) {
    return invalid(Annotation.tailnet, `"${tailnet.slice(0, 100)}" is not a Tailnet name (a DNS-1123 subdomain)`);
  }
  if (tags.length > 1) {
    return invalid(Annotation.tags, `one tag only (the agent node carries exactly one), got ${tags.length}`);
  }
  if (tags.length === 1 && !isTag(tags[0])) {
    return invalid(
      Annotation.tags,
      `"${tags[0].slice(0, 100)}" is not a tag (tag:[a-z][a-z0-9-]*, at most 63 characters after tag:)`,
    );
  }
  if (role === "expose") {
    if (!isDns1035Label(hostname)) {
      return invalid(
        Annotation.hostname,
        `"${hostname.slice(0, 100)}" is not a DNS-1035 label (the tailnet node name)`,
      );
    }
  } else {
    if (!target || !HOST.test(target)) {
      return invalid(
        Annotation.target,
        `"${(target ?? "").slice(0, 100)}" is not a tailnet node name, MagicDNS name or IP address`,
      );
    }
    if (allowFrom.length) return invalid(Annotation.allowFrom, `applies to ${Annotation.expose} only`);
    if (a[Annotation.hostname] !== undefined)
      return invalid(Annotation.hostname, `applies to ${Annotation.expose} only`);
  }
  const ports = readPorts(service, role);
  if (!Array.isArray(ports)) return { ok: false, refusal: ports };
  const spec = (service.spec ?? {}) as { type?: string; externalName?: string };
  return {
    ok: true,
    spec: {
      role,
      namespace: service.metadata.namespace ?? "default",
      name: service.metadata.name,
      ...(tailnet ? { tailnet } : {}),
      hostname,
      ...(tags.length ? { tag: tags[0] } : {}),
      allowFrom,
      ...(role === "target" ? { target } : {}),
      ports,
      type: spec.type ?? "ClusterIP",
      ...(spec.externalName ? { externalName: spec.externalName } : {}),
    },
  };
}

/** The Service's TCP ports, in Service order, or why there are none the role can carry. */
function readPorts(service: K8sObject, role: Role): ServicePort[] | SpecRefusal {
  const spec = (service.spec ?? {}) as { ports?: { name?: string; port?: number; protocol?: string }[] };
  const all = Array.isArray(spec.ports) ? spec.ports : [];
  const tcp = all.filter((p) => (p.protocol ?? "TCP") === "TCP" && Number.isInteger(p.port));
  const ports = tcp.map((p) => ({
    name: p.name && isDns1035Label(p.name) ? p.name : `port-${p.port}`,
    port: p.port as number,
  }));
  if (ports.length === 0) {
    return {
      reason: "UnsupportedPorts",
      message: `spec.ports: no TCP port${all.length ? ` (${all.length} of other protocols; the tailnet agents forward TCP only)` : ""}`,
    };
  }
  if (ports.length > MAX_PORTS[role]) {
    return {
      reason: "UnsupportedPorts",
      message: `spec.ports: ${ports.length} TCP ports, at most ${MAX_PORTS[role]} can be ${role === "expose" ? "exposed" : "forwarded"}`,
    };
  }
  return ports;
}
