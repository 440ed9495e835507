/**
 * The TailnetIngress spec as the kind reads it (CRD defaults applied): the only place the ingress kind
 * reads `parent.spec`. Also the checks the CRD schema cannot express (`ingressSpecProblem`, the kind
 * module's `specProblem`: InvalidSpec naming the field) and the local listen port of every expose.
 */

import { TLS_REQUIRED_WORDS } from "../../../api/cel.js";
import { pathsProblem } from "../../../contract/paths.js";
import { ingressListenPort } from "../../../contract/ports.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { recordOf } from "../../../k8s/objects.js";
import { type IssuerRef, readIssuerRef } from "../../shared/certificates.js";
import { type ExposePath, type PathBackend, readBackend, readPaths } from "../../shared/expose-paths.js";
import { exposePort } from "../../shared/expose-port.js";

export type { ExposePath } from "../../shared/expose-paths.js";

export type IngressMode = "tcp" | "http" | "kube-api";

/**
 * mode kube-api: the agent forwards to the cluster's API server (the `kubernetes` Service in `default`,
 * whose certificate names kubernetes.default.svc) with the pod's own ServiceAccount token, impersonating the
 * tailnet peer (src/agent/kube-api.ts, docs/kube-api.md).
 */
export const KUBE_API_BACKEND = { host: "kubernetes.default.svc", port: 443 } as const;
/** Where the agent container (only it) mounts its projected token and the cluster CA in mode kube-api. */
export const KUBE_API_DIR = "/var/run/tailnet/kube-api";
export const KUBE_API_FILES = { caFile: `${KUBE_API_DIR}/ca.crt`, tokenFile: `${KUBE_API_DIR}/token` } as const;

export interface ExposeSpec {
  /** Position in spec.exposes (field paths and listen ports use it). */
  index: number;
  name: string;
  /** Port on the tailnet node. */
  port: number;
  /** Empty service when absent (mode kube-api, where it must be); namespace: default the ingress's. */
  backend: PathBackend;
  /** http only: per-request routes by path (src/agent/routes.ts); the rest go to `backend`. */
  paths: ExposePath[];
  /** http only, with paths: a request no path matches is answered 404 (a Gateway's host) instead of going to backend. */
  unmatched?: "notFound";
  /** http only: DNS label of the expose's name (default: the ingress hostname). */
  host?: string;
  aliases: string[];
  /** http and kube-api: whether the expose has `tls` at all (`{}`: the Tailnet's default issuer). */
  hasTls: boolean;
  /** tls.secretName: the kubernetes.io/tls Secret in the ingress's namespace. */
  tlsSecret?: string;
  /** tls.issuerRef: the cert-manager issuer of the expose's Certificate (certificate.ts). */
  tlsIssuer?: IssuerRef;
}

export interface IngressSpec {
  /** spec.tag, when set (else the effective tag is derived from the Tailnet's tagPrefix). */
  tag?: string;
  hostname: string;
  mode: IngressMode;
  allowFrom: string[];
  exposes: ExposeSpec[];
  /** spec.replicas (default 1): agent pods, each its own tailnet node answering for the same names. */
  replicas: number;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

export function readIngressSpec(parent: K8sObject): IngressSpec {
  const spec = recordOf(parent.spec);
  const list = Array.isArray(spec.exposes) ? spec.exposes : [];
  const replicas = Number(spec.replicas);
  return {
    ...(str(spec.tag) ? { tag: str(spec.tag) } : {}),
    hostname: str(spec.hostname) ?? parent.metadata.name,
    mode: spec.mode === "http" || spec.mode === "kube-api" ? spec.mode : "tcp",
    allowFrom: strings(spec.allowFrom),
    exposes: list.map((raw, index) => {
      const e = recordOf(raw);
      return {
        index,
        name: str(e.name) ?? "",
        port: exposePort(spec.mode, e.port),
        backend: readBackend(e.backend),
        paths: readPaths(e.paths),
        ...(e.unmatched === "notFound" ? { unmatched: "notFound" as const } : {}),
        host: str(e.host),
        aliases: strings(e.aliases),
        hasTls: e.tls !== undefined && e.tls !== null,
        tlsSecret: str(recordOf(e.tls).secretName),
        tlsIssuer: readIssuerRef(recordOf(e.tls).issuerRef),
      };
    }),
    replicas: Number.isInteger(replicas) && replicas >= 0 ? replicas : 1,
  };
}

/** The DNS labels an http expose answers for (its host, else the hostname, then its aliases), lower-cased. */
const exposeLabels = (spec: IngressSpec, e: ExposeSpec) =>
  [e.host ?? spec.hostname, ...e.aliases].map((l) => l.toLowerCase());

/**
 * The first problem the schema cannot catch, naming the field; undefined when the spec is usable.
 * tcp: one expose per tailnet port (tailscaled forwards a port to one listener). http: every expose
 * needs a TLS Secret, and exposes sharing a port share one TLS listener, so their names must differ
 * (SNI picks the expose). kube-api: one expose, no backend or names of its own (kubeApiProblem).
 */
export function ingressSpecProblem(parent: K8sObject): string | undefined {
  const spec = readIngressSpec(parent);
  if (spec.mode === "kube-api") return kubeApiProblem(spec);
  const byPort = new Map<number, ExposeSpec[]>();
  for (const e of spec.exposes) {
    const f = `spec.exposes[${e.index}]`;
    if (!e.backend.service) return `${f}.backend: required in mode ${spec.mode}`;
    if (spec.mode === "http" && !e.hasTls) return `${f}.tls: ${TLS_REQUIRED_WORDS}`;
    if (e.tlsSecret && e.tlsIssuer) return `${f}.tls: secretName or issuerRef, not both`;
    if (!Number.isInteger(e.port)) return `${f}.port: required in mode tcp`;
    if (e.paths.length > 0 && spec.mode !== "http") return `${f}.paths: only in mode http (routing is per request)`;
    if (e.backend.protocol && spec.mode !== "http")
      return `${f}.backend.protocol: only in mode http (mode tcp passes bytes as they come)`;
    const bad = pathsProblem(e.paths);
    if (bad) return `${f}.paths[${bad.index}]: ${bad.problem}`;
    if (e.unmatched && e.paths.length === 0) return `${f}.unmatched: only with paths`;
    const earlier = byPort.get(e.port) ?? [];
    if (spec.mode === "tcp" && earlier.length > 0) {
      return `${f}.port: ${e.port} is already used by spec.exposes[${earlier[0].index}] (one expose per port in mode tcp)`;
    }
    if (spec.mode === "http") {
      const mine = exposeLabels(spec, e);
      for (const other of earlier) {
        const shared = mine.find((l) => exposeLabels(spec, other).includes(l));
        if (shared !== undefined) {
          return `${f}: name "${shared}" is already served on port ${e.port} by spec.exposes[${other.index}]`;
        }
      }
    }
    byPort.set(e.port, [...earlier, e]);
  }
  return undefined;
}

/**
 * mode kube-api: the one expose is the API server; plain HTTP inside WireGuard, or HTTPS when the expose has
 * `tls` (a Secret or a cert-manager issuer: clients then verify the name, docs/kube-api.md).
 */
function kubeApiProblem(spec: IngressSpec): string | undefined {
  for (const e of spec.exposes) {
    const f = `spec.exposes[${e.index}]`;
    if (e.index > 0) return `${f}: mode kube-api serves the API server on one port (one expose)`;
    if (!Number.isInteger(e.port)) return `${f}.port: required in mode kube-api`;
    if (e.paths.length > 0) return `${f}.paths: not allowed in mode kube-api`;
    if (e.backend.service)
      return `${f}.backend: not allowed in mode kube-api (the backend is the cluster's API server)`;
    if (e.tlsSecret && e.tlsIssuer) return `${f}.tls: secretName or issuerRef, not both`;
    if (e.host || e.aliases.length > 0)
      return `${f}.${e.host ? "host" : "aliases"}: not allowed in mode kube-api (the API server answers on spec.hostname)`;
  }
  return undefined;
}

/**
 * Local listen port of every expose, in spec order: ingressListenPort(i), except that http exposes
 * sharing a tailnet port share the TLS listener of the first of them (SNI picks the expose).
 */
export function exposeListenPorts(spec: IngressSpec): number[] {
  const first = new Map<number, number>();
  return spec.exposes.map((e) => {
    if (spec.mode === "http") {
      const shared = first.get(e.port);
      if (shared !== undefined) return shared;
      first.set(e.port, ingressListenPort(e.index));
    }
    return ingressListenPort(e.index);
  });
}
