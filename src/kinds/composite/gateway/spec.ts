/**
 * The TailnetGateway spec with api.md's defaults applied, and the names of its children: the only reader of
 * the parent's spec (and of its accept-node-key annotation). Everything here is derived from the parent alone,
 * so every sync names the same objects; `gatewaySpecProblem` is what the CRD schema cannot catch.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { recordOf } from "../../../k8s/objects.js";
import { parseCidr } from "../../../net/cidr.js";
import { isExitRoute } from "../../../net/exit.js";
import { exitRouteProblem } from "../../shared/routes.js";
import { parseDuration } from "../../shared/workload.js";

export interface GatewaySpec {
  suspend: boolean;
  /** Tailscale hostname; default: the object's name as a DNS label. */
  hostname: string;
  /** Advertised routes, de-duplicated, in the order given. */
  routes: string[];
  /** spec.replicas: gateway pods, each its own node advertising the routes (Headscale elects one primary). */
  replicas: number;
  /** spec.exitNode: the gateway offers itself as an exit node; allowFrom may use it (autogroup:internet). */
  exitNode?: { allowFrom: string[] };
  /** spec.dns.zone (lower case, no trailing dot); undefined when unset. */
  zone?: string;
  clusterDNSForward: "Managed" | "External";
  staleNodes: "Delete" | "Keep";
  serviceType: "ClusterIP" | "LoadBalancer";
  bootstrapKeyTTLSeconds: number;
  /** The node key an administrator accepted with the tailnet.internal/accept-node-key annotation. */
  acceptedNodeKey?: string;
  names: GatewayNames;
}

const DEFAULT_BOOTSTRAP_TTL_SECONDS = 3600;

/** A name as a DNS-1035 label (letters, digits, '-', starting with a letter), at most `max` characters. */
export function dnsLabel(name: string, max = 63): string {
  let s = name.toLowerCase().replace(/[^a-z0-9-]/g, "-");
  if (!/^[a-z]/.test(s)) s = `gw-${s}`;
  return s.slice(0, max).replace(/-+$/, "");
}

export function normalizeZone(zone: string): string {
  return zone.trim().toLowerCase().replace(/\.+$/, "");
}

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isDnsName(name: string): boolean {
  return DNS_NAME.test(name);
}

export function readGatewaySpec(parent: K8sObject): GatewaySpec {
  const spec = recordOf(parent.spec);
  const dns = recordOf(spec.dns);
  const routes = Array.isArray(spec.routes) ? spec.routes.filter((r): r is string => typeof r === "string") : [];
  return {
    suspend: spec.suspend === true,
    hostname: typeof spec.hostname === "string" && spec.hostname ? spec.hostname : dnsLabel(parent.metadata.name),
    routes: [...new Set(routes)],
    replicas: replicasOf(spec.replicas),
    ...exitNodeOf(spec.exitNode),
    zone: typeof dns.zone === "string" && normalizeZone(dns.zone) ? normalizeZone(dns.zone) : undefined,
    clusterDNSForward: dns.clusterDNSForward === "External" ? "External" : "Managed",
    staleNodes: spec.staleNodes === "Keep" ? "Keep" : "Delete",
    serviceType: recordOf(spec.service).type === "LoadBalancer" ? "LoadBalancer" : "ClusterIP",
    bootstrapKeyTTLSeconds:
      parseDuration(typeof spec.bootstrapKeyTTL === "string" ? spec.bootstrapKeyTTL : undefined) ??
      DEFAULT_BOOTSTRAP_TTL_SECONDS,
    ...(acceptedNodeKey(parent) ? { acceptedNodeKey: acceptedNodeKey(parent) } : {}),
    names: gatewayNames(parent),
  };
}

/** The most gateway pods (the CRD's maximum); one pod is the default. */
export const MAX_GATEWAY_REPLICAS = 4;

function replicasOf(v: unknown): number {
  return typeof v === "number" && Number.isInteger(v) ? Math.min(MAX_GATEWAY_REPLICAS, Math.max(1, v)) : 1;
}

function exitNodeOf(v: unknown): { exitNode?: { allowFrom: string[] } } {
  if (!v || typeof v !== "object" || Array.isArray(v)) return {};
  const allowFrom = recordOf(v).allowFrom;
  const list = Array.isArray(allowFrom) ? allowFrom.filter((a): a is string => typeof a === "string" && !!a) : [];
  return { exitNode: { allowFrom: [...new Set(list)] } };
}

/**
 * What the CRD schema cannot catch (the hook answers InvalidSpec): a spec.dns.zone that is not a DNS name,
 * and a default route in spec.routes, literal or in pieces (routes whose union covers 0.0.0.0/0 or ::/0,
 * shared/routes.ts) — an exit node is spec.exitNode, which the Tailnet's tenancy admits.
 */
export function gatewaySpecProblem(parent: K8sObject): string | undefined {
  const spec = readGatewaySpec(parent);
  const exit = exitRouteProblem(spec.routes);
  if (exit) {
    const literal = exit.routes.every(isDefaultRoute);
    const what = literal
      ? `${exit.routes.join(", ")} is`
      : `${exit.routes.join(", ")} together cover ${exit.covers.join(", ")}:`;
    return `spec.routes: ${what} an exit route; set spec.exitNode to offer the gateway as an exit node (the Tailnet's spec.tenancy.exitNodes must select this namespace)`;
  }
  const zone = spec.zone;
  return zone && !isDnsName(zone) ? `spec.dns.zone: "${zone}" is not a DNS name` : undefined;
}

/** A default route (0.0.0.0/0, ::/0, however spelled): only spec.exitNode advertises those. */
export function isDefaultRoute(route: string): boolean {
  const r = parseCidr(route.trim());
  return r.ok && isExitRoute(r.cidr);
}

/** The zone the gateway serves: spec.dns.zone, else the Tailnet's base domain (which must be a DNS name). */
export function gatewayZone(
  spec: GatewaySpec,
  tailnet: { name: string; baseDomain?: string },
): { ok: true; zone: string } | { ok: false; message: string } {
  const zone = spec.zone ?? tailnet.baseDomain;
  if (!zone) {
    return {
      ok: false,
      message: `spec.dns.zone: required because Tailnet "${tailnet.name}" has no spec.dns.baseDomain`,
    };
  }
  return isDnsName(zone) ? { ok: true, zone } : { ok: false, message: `spec.dns.zone: "${zone}" is not a DNS name` };
}

/** The split-DNS domains tailnet clients resolve through the gateway (Tailnet spec.dns.splitDNS.domains). */
export function splitDNSDomains(tailnet: K8sObject | undefined): string[] {
  const domains = recordOf(recordOf(recordOf(tailnet?.spec).dns).splitDNS).domains;
  const list = Array.isArray(domains)
    ? domains.filter((d): d is string => typeof d === "string" && normalizeZone(d) !== "").map(normalizeZone)
    : [];
  return list.length ? [...new Set(list)].sort() : ["svc.cluster.local"];
}

export interface GatewayNames {
  deployment: string;
  networkPolicy: string;
  corefile: string;
  zone: string;
  /** The Headscale CA for tailscaled (only with a Tailnet caSecretRef). */
  ca: string;
  /** The DNS Service (a DNS-1035 label). */
  service: string;
}

export function gatewayNames(parent: K8sObject): GatewayNames {
  const n = parent.metadata.name;
  const base = `${n.slice(0, 253 - "-gateway-corefile".length)}-gateway`;
  return {
    deployment: base,
    networkPolicy: base,
    corefile: `${base}-corefile`,
    zone: `${base}-zone`,
    ca: `${base}-ca`,
    service: `${dnsLabel(n, 63 - "-dns".length)}-dns`,
  };
}

/** The annotation an administrator sets to accept a node key change (api.md § TailnetGateway). */
export const ACCEPT_NODE_KEY_ANNOTATION = "tailnet.internal/accept-node-key";

function acceptedNodeKey(parent: K8sObject): string | undefined {
  const v = parent.metadata.annotations?.[ACCEPT_NODE_KEY_ANNOTATION];
  return v?.trim() || undefined;
}
