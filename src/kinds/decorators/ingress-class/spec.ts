/**
 * A networking.k8s.io/v1 Ingress read once and checked (pure): is it ours (its class names an
 * IngressClass whose controller is ours), and what the agent can serve of it. The agent serves each
 * host over https on port 443 (an http TailnetIngress expose), routing each request by its path; what it
 * cannot honour exactly — a path it could not match as written, a host with no backend for unmatched paths,
 * a resource backend, a wildcard host — is refused here with the field named, never served differently.
 */

import { MAX_RULES, ruleKey, rulePathProblem } from "../../../contract/paths.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { recordOf } from "../../../k8s/objects.js";
import { WorkloadAnnotation as Annotation } from "../../shared/annotations.js";
import { type IssuerRef, readIssuerRef } from "../../shared/certificates.js";
import { type Exposure, exposureAnnotations, isDns1035Label, isTag, isTailnetName } from "../annotations.js";

/** IngressClass.spec.controller of the classes this operator implements. */
export const INGRESS_CONTROLLER = "tailnet.internal/ingress";
/** The deprecated class annotation (still honoured by ingress-nginx and the Tailscale operator). */
export const CLASS_ANNOTATION = "kubernetes.io/ingress.class";
/** TailnetIngress.spec.exposes allows at most this many (one expose per host). */
export const MAX_HOSTS = 32;

/** A Service port by number, or by the name of a port of that Service (resolved in plan). */
export interface BackendRef {
  service: string;
  port: number | string;
}

export interface HostRoute {
  /** The rule's host, lower-cased; undefined for rules without host and the default backend. */
  host?: string;
  /** What no path matches goes to. */
  backend: BackendRef;
  /** Where the backend came from, for messages: `spec.rules[0].http.paths[1]`, `spec.defaultBackend`. */
  field: string;
  /** The host's other paths, each to its backend (per request, src/agent/routes.ts). */
  paths: RoutePath[];
}

export interface TlsEntry {
  hosts: string[];
  secretName?: string;
  index: number;
}

export interface IngressClassSpec extends Exposure {
  routes: HostRoute[];
  tls: TlsEntry[];
  /**
   * cert-manager's own annotations (cert-manager.io/issuer, cert-manager.io/cluster-issuer, cert-manager.io/issuer-group):
   * the issuer of the hosts no spec.tls Secret covers (attachment.ts, docs/ingress-class.md).
   */
  issuer?: IssuerRef;
}

/** cert-manager's Ingress annotations (cert-manager/cert-manager pkg/apis/certmanager/v1 types.go). */
export const CERT_MANAGER_ANNOTATIONS = {
  issuer: "cert-manager.io/issuer",
  clusterIssuer: "cert-manager.io/cluster-issuer",
  group: "cert-manager.io/issuer-group",
} as const;

/** The issuer cert-manager's annotations name, or why they cannot be used (both kinds at once, as cert-manager refuses). */
function issuerOf(a: Record<string, string>): IssuerRef | SpecRefusal | undefined {
  const A = CERT_MANAGER_ANNOTATIONS;
  const issuer = str(a[A.issuer]);
  const cluster = str(a[A.clusterIssuer]);
  if (issuer && cluster)
    return { reason: "InvalidAnnotation", message: `${A.issuer} and ${A.clusterIssuer} are both set: name one issuer` };
  const name = issuer ?? cluster;
  if (!name) return undefined;
  const ref = readIssuerRef({ name, kind: cluster ? "ClusterIssuer" : "Issuer", group: str(a[A.group]) });
  if (!ref || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(ref.name) || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(ref.group))
    return {
      reason: "InvalidAnnotation",
      message: `${issuer ? A.issuer : A.clusterIssuer}: "${cut(name)}" is not an issuer name`,
    };
  return ref;
}

export type SpecRefusal = {
  reason: "InvalidAnnotation" | "UnsupportedHost" | "UnsupportedBackend" | "UnsupportedPaths" | "NoBackend";
  message: string;
};

export type ReadIngress = { ok: true; spec: IngressClassSpec } | { ok: false; refusal: SpecRefusal };

const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const cut = (s: string) => s.slice(0, 100);

/** The class an Ingress asks for: spec.ingressClassName, else the deprecated annotation. */
export function ingressClassOf(ingress: K8sObject): string | undefined {
  return str(recordOf(ingress.spec).ingressClassName) ?? str(ingress.metadata.annotations?.[CLASS_ANNOTATION]);
}

/** The names of the IngressClasses this operator implements (spec.controller is ours), sorted. */
export function ourClasses(ingressClasses: readonly K8sObject[]): string[] {
  return ingressClasses
    .filter((c) => recordOf(c.spec).controller === INGRESS_CONTROLLER && !c.metadata.deletionTimestamp)
    .map((c) => c.metadata.name)
    .sort();
}

const refuse = (reason: SpecRefusal["reason"], message: string): ReadIngress => ({
  ok: false,
  refusal: { reason, message },
});

/** A backend as the agent can forward to it: a Service port; a resource backend is refused. */
function backendOf(raw: unknown, field: string): BackendRef | SpecRefusal {
  const b = recordOf(raw);
  if (b.resource !== undefined) {
    const r = recordOf(b.resource);
    return {
      reason: "UnsupportedBackend",
      message: `${field}.resource: ${cut(`${str(r.kind) ?? "?"} ${str(r.name) ?? "?"}`)} is not a Service; the tailnet agent forwards to Services only`,
    };
  }
  const s = recordOf(b.service);
  const service = str(s.name);
  const port = recordOf(s.port);
  if (!service) return { reason: "UnsupportedBackend", message: `${field}.service.name: required` };
  if (Number.isInteger(port.number)) return { service, port: port.number as number };
  if (str(port.name)) return { service, port: port.name as string };
  return { reason: "UnsupportedBackend", message: `${field}.service.port: a number or a name is required` };
}

const isRefusal = (v: BackendRef | SpecRefusal): v is SpecRefusal => "reason" in v;
const sameBackend = (a: BackendRef, b: BackendRef) => a.service === b.service && a.port === b.port;
const showBackend = (b: BackendRef) => `${b.service}:${b.port}`;

interface PathEntry {
  path: string;
  pathType: string;
  backend: BackendRef;
  field: string;
}

/** A path of a host as the agent routes it: ImplementationSpecific is read as Prefix. */
export interface RoutePath {
  path: string;
  pathType: "Exact" | "Prefix";
  backend: BackendRef;
  field: string;
}

type HostBackends = { backend: BackendRef; field: string; paths: RoutePath[] };

const pathsRefusal = (message: string): SpecRefusal => ({ reason: "UnsupportedPaths", message });

/**
 * One host's routes for the agent (src/agent/routes.ts): its paths, and the backend of what no path matches —
 * the `/` Prefix path's (which matches everything), else spec.defaultBackend. ImplementationSpecific is read
 * as Prefix (as ingress-nginx reads it without its regex annotation). Refused: a path the agent's matcher
 * could never serve as written, one path to two backends, and a host without a backend for unmatched paths
 * (the agent has no 404 backend of its own).
 */
function hostBackends(
  host: string | undefined,
  paths: PathEntry[],
  fallback: { backend: BackendRef; field: string } | undefined,
): HostBackends | SpecRefusal {
  const who = host ? `host ${host}` : "the rules without host";
  if (paths.length === 0) {
    if (fallback) return { ...fallback, paths: [] };
    return { reason: "NoBackend", message: `${who} has no http paths and the Ingress has no spec.defaultBackend` };
  }
  const seen = new Map<string, PathEntry>();
  const kept: RoutePath[] = [];
  let all: PathEntry | undefined;
  for (const p of paths) {
    const pathType = p.pathType === "Exact" ? "Exact" : "Prefix";
    const problem = rulePathProblem(p.path);
    if (problem) {
      return pathsRefusal(
        `${p.field}.path: "${cut(p.path)}" ${problem}; the tailnet agent matches the raw request path and refuses requests with such paths`,
      );
    }
    const key = ruleKey(p.path, pathType);
    const first = seen.get(key);
    if (first) {
      if (sameBackend(first.backend, p.backend)) continue;
      return pathsRefusal(
        `${p.field} and ${first.field} are both ${key}, to ${showBackend(p.backend)} and ${showBackend(first.backend)}`,
      );
    }
    seen.set(key, p);
    if (pathType === "Prefix" && p.path === "/") all = p;
    else kept.push({ path: p.path, pathType, backend: p.backend, field: p.field });
  }
  const fallbackOf = all ? { backend: all.backend, field: all.field } : fallback;
  if (!fallbackOf) {
    const shown = paths.map((p) => `${p.path} (${p.pathType})`).join(", ");
    return pathsRefusal(
      `${who} routes only ${cut(shown)}; the tailnet agent needs a backend for the other paths — add path / (Prefix), or set spec.defaultBackend`,
    );
  }
  if (kept.length > MAX_RULES)
    return pathsRefusal(`${who} has ${kept.length} paths; the agent routes at most ${MAX_RULES}`);
  return { ...fallbackOf, paths: kept };
}

export function readIngress(ingress: K8sObject): ReadIngress {
  const a = ingress.metadata.annotations ?? {};
  const name = ingress.metadata.name;
  const namespace = ingress.metadata.namespace ?? "default";
  const { tailnet, tags, allowFrom, hostname } = exposureAnnotations(ingress);
  if (tailnet !== undefined && !isTailnetName(tailnet)) {
    return refuse("InvalidAnnotation", `${Annotation.tailnet}: "${cut(tailnet)}" is not a Tailnet name`);
  }
  if (tags.length > 1) return refuse("InvalidAnnotation", `${Annotation.tags}: one tag only, got ${tags.length}`);
  if (tags.length === 1 && !isTag(tags[0])) {
    return refuse("InvalidAnnotation", `${Annotation.tags}: "${cut(tags[0])}" is not a tag (tag:[a-z][a-z0-9-]*)`);
  }
  if (!isDns1035Label(hostname)) {
    const from = a[Annotation.hostname] ? Annotation.hostname : `the Ingress name (set ${Annotation.hostname})`;
    return refuse("InvalidAnnotation", `${from}: "${cut(hostname)}" is not a DNS-1035 label (the tailnet node name)`);
  }

  const issuer = issuerOf(a);
  if (issuer && "reason" in issuer) return { ok: false, refusal: issuer };
  const spec = recordOf(ingress.spec);
  let fallback: { backend: BackendRef; field: string } | undefined;
  if (spec.defaultBackend !== undefined) {
    const b = backendOf(spec.defaultBackend, "spec.defaultBackend");
    if (isRefusal(b)) return { ok: false, refusal: b };
    fallback = { backend: b, field: "spec.defaultBackend" };
  }
  // Rules with the same host merge (Kubernetes allows it); their order is the rules' order.
  const byHost = new Map<string | undefined, PathEntry[]>();
  for (const [i, rawRule] of arr(spec.rules).entries()) {
    const rule = recordOf(rawRule);
    const host = str(rule.host)?.toLowerCase();
    if (host?.startsWith("*")) {
      return refuse(
        "UnsupportedHost",
        `spec.rules[${i}].host: "${cut(host)}" is a wildcard; a tailnet name is one DNS label, published one by one`,
      );
    }
    const entries = byHost.get(host) ?? [];
    byHost.set(host, entries);
    for (const [j, rawPath] of arr(recordOf(rule.http).paths).entries()) {
      const p = recordOf(rawPath);
      const field = `spec.rules[${i}].http.paths[${j}]`;
      const backend = backendOf(p.backend, `${field}.backend`);
      if (isRefusal(backend)) return { ok: false, refusal: backend };
      const pathType = str(p.pathType) ?? "ImplementationSpecific";
      entries.push({ path: str(p.path) ?? "/", pathType, backend, field });
    }
  }
  if (fallback && !byHost.has(undefined)) byHost.set(undefined, []);
  if (byHost.size === 0) {
    return refuse("NoBackend", "the Ingress has no rules and no spec.defaultBackend: nothing to expose");
  }
  if (byHost.size > MAX_HOSTS) {
    return refuse("UnsupportedHost", `${byHost.size} hosts; one Ingress of this class serves at most ${MAX_HOSTS}`);
  }
  const routes: HostRoute[] = [];
  for (const [host, paths] of byHost) {
    const b = hostBackends(host, paths, fallback);
    if ("reason" in b) return { ok: false, refusal: b };
    routes.push({ ...(host ? { host } : {}), backend: b.backend, field: b.field, paths: b.paths });
  }
  const tls = arr(spec.tls).map((raw, index) => {
    const t = recordOf(raw);
    const hosts = arr(t.hosts)
      .filter((h): h is string => typeof h === "string")
      .map((h) => h.toLowerCase());
    return { hosts, index, ...(str(t.secretName) ? { secretName: str(t.secretName) } : {}) };
  });
  return {
    ok: true,
    spec: {
      namespace,
      name,
      ...(tailnet ? { tailnet } : {}),
      hostname,
      ...(tags.length ? { tag: tags[0] } : {}),
      allowFrom,
      routes,
      tls,
      ...(issuer ? { issuer } : {}),
    },
  };
}
