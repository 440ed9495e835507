/**
 * The TailnetGateway spec with api.md's defaults applied, and the names of its children. Everything
 * here is derived from the parent (and its Tailnet) alone, so every sync names the same objects.
 */
import type { K8sObject } from "../../k8s/objects.js";
import { parseDuration } from "../shared/workload.js";

export interface GatewaySpec {
  suspend: boolean;
  /** Tailscale hostname; default: the object's name as a DNS label. */
  hostname: string;
  /** Advertised routes, de-duplicated, in the order given. */
  routes: string[];
  /** spec.dns.zone (lower case, no trailing dot); undefined when unset. */
  zone?: string;
  clusterDNSForward: "Managed" | "External";
  staleNodes: "Delete" | "Keep";
  serviceType: "ClusterIP" | "LoadBalancer";
  bootstrapKeyTTLSeconds: number;
}

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec => (v && typeof v === "object" && !Array.isArray(v) ? (v as Rec) : {});
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

export function gatewaySpec(parent: K8sObject): GatewaySpec {
  const spec = rec(parent.spec);
  const dns = rec(spec.dns);
  const routes = Array.isArray(spec.routes) ? spec.routes.filter((r): r is string => typeof r === "string") : [];
  return {
    suspend: spec.suspend === true,
    hostname: typeof spec.hostname === "string" && spec.hostname ? spec.hostname : dnsLabel(parent.metadata.name),
    routes: [...new Set(routes)],
    zone: typeof dns.zone === "string" && normalizeZone(dns.zone) ? normalizeZone(dns.zone) : undefined,
    clusterDNSForward: dns.clusterDNSForward === "External" ? "External" : "Managed",
    staleNodes: spec.staleNodes === "Keep" ? "Keep" : "Delete",
    serviceType: rec(spec.service).type === "LoadBalancer" ? "LoadBalancer" : "ClusterIP",
    bootstrapKeyTTLSeconds:
      parseDuration(typeof spec.bootstrapKeyTTL === "string" ? spec.bootstrapKeyTTL : undefined) ??
      DEFAULT_BOOTSTRAP_TTL_SECONDS,
  };
}

/** The split-DNS domains tailnet clients resolve through the gateway (Tailnet spec.dns.splitDNS.domains). */
export function splitDNSDomains(tailnet: K8sObject | undefined): string[] {
  const domains = rec(rec(rec(tailnet?.spec).dns).splitDNS).domains;
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

export function acceptedNodeKey(parent: K8sObject): string | undefined {
  const v = parent.metadata.annotations?.[ACCEPT_NODE_KEY_ANNOTATION];
  return v?.trim() || undefined;
}
