/**
 * Builders shared by the TailnetIngress tests: the ingress, its Tailnet and credentials, TLS
 * Secrets from the test PKI, backend Services and agent scrapes.
 */
import { API_VERSION } from "../../../../src/api/schemas.js";
import type { NameAnswer } from "../../../../src/contract/agent-status.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { ScrapeResult } from "../../../../src/pipeline/types.js";
import { parentObject } from "../../../fixtures/hooks.js";

export const NS = "monitoring";
export const TAG = "tag:k8s-monitoring-grafana";
export const BASE = "ts.example.com";
export const LOGIN = "https://hs.example.com";

export interface ExposeInput {
  name: string;
  port: number;
  backend: { service: string; port: number; namespace?: string; route?: Record<string, string> };
  paths?: Record<string, unknown>[];
  host?: string;
  aliases?: string[];
  tls?: { secretName?: string; issuerRef?: { name: string; kind?: string; group?: string } };
}

export const WEB: ExposeInput = {
  name: "web",
  port: 443,
  backend: { service: "grafana", port: 3000 },
  host: "dash",
  aliases: ["grafana-eu"],
  tls: { secretName: "grafana-tls" },
};

export interface IngressOpts {
  namespace?: string;
  hostname?: string;
  mode?: "tcp" | "http" | "kube-api";
  allowFrom?: string[];
  exposes?: ExposeInput[];
  tag?: string;
  replicas?: number;
  proxyClassName?: string;
  tailnet?: string;
  created?: string;
  uid?: string;
  deleting?: boolean;
}

export function ingress(name = "grafana", opts: IngressOpts = {}): K8sObject {
  const o = parentObject(
    "TailnetIngress",
    name,
    {
      tailnetRef: { name: opts.tailnet ?? "home" },
      hostname: opts.hostname ?? name,
      mode: opts.mode ?? "http",
      allowFrom: opts.allowFrom ?? ["group:eng"],
      exposes: opts.exposes ?? [WEB],
      ...(opts.tag ? { tag: opts.tag } : {}),
      ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
      ...(opts.proxyClassName ? { proxyClassName: opts.proxyClassName } : {}),
    },
    {
      namespace: opts.namespace ?? NS,
      creationTimestamp: opts.created ?? "2026-11-01T00:00:00Z",
      ...(opts.uid ? { uid: opts.uid } : {}),
    },
  );
  if (opts.deleting) o.metadata.deletionTimestamp = "2026-11-29T12:00:00Z";
  return o;
}

/** A tcp-mode ingress: one raw TCP expose (no names beyond the hostname, no TLS). */
export function tcpIngress(name = "pg", opts: IngressOpts = {}): K8sObject {
  return ingress(name, {
    mode: "tcp",
    exposes: [{ name: "postgres", port: 5432, backend: { service: "postgres", port: 5432 } }],
    ...opts,
  });
}

export function tailnet(name = "home", spec: Record<string, unknown> = {}): K8sObject {
  return parentObject("Tailnet", name, {
    headscale: { url: LOGIN, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
    policy: { mode: "Apply" },
    allowedIngressSources: ["group:eng", "tag:ci"],
    dns: { baseDomain: BASE },
    ...spec,
  });
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** The Secret the Tailnet publishes for the workload kinds (url + apiKey). */
export function credentials(url: string, apiKey: string, tailnetName = "home"): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `tailnet-${tailnetName}-credentials`, namespace: "tailnet-system" },
    type: "Opaque",
    data: { url: b64(url), apiKey: b64(apiKey) },
  };
}

export function tlsSecret(
  name: string,
  pair: { certPem?: string; keyPem?: string },
  opts: { namespace?: string; type?: string } = {},
): K8sObject {
  const data: Record<string, string> = {};
  if (pair.certPem !== undefined) data["tls.crt"] = b64(pair.certPem);
  if (pair.keyPem !== undefined) data["tls.key"] = b64(pair.keyPem);
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: opts.namespace ?? NS },
    type: opts.type ?? "kubernetes.io/tls",
    data,
  };
}

export function service(name: string, namespace = NS): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace },
    spec: { selector: { app: name }, ports: [{ port: 3000 }] },
  };
}

/** A successful scrape of one agent pod reporting these exposes. */
/** The labels the fixtures' ingresses publish under BASE: what a served records file holds. */
const FIXTURE_LABELS = ["grafana", "dash", "grafana-eu", "pg", "old"];

/** quad-100's answers when Headscale serves the records file: every fixture name, at the agent's address. */
export const SERVED: NameAnswer[] = FIXTURE_LABELS.map((l) => ({
  name: `${l}.${BASE}`,
  addresses: ["100.64.0.9"],
  rcode: "NOERROR",
  error: "",
}));

/** The same names unanswered: Headscale does not read the records file. */
export const NOT_SERVED: NameAnswer[] = SERVED.map((a) => ({ ...a, addresses: [], rcode: "NXDOMAIN" }));

export function scraped(
  exposes: { name: string; reachable: boolean; error?: string }[],
  pod = "grafana-agent-0",
  names: NameAnswer[] | null = SERVED,
): ScrapeResult {
  return {
    ok: true,
    pod,
    status: {
      ready: true,
      self: { hostName: "grafana", tailscaleIPs: ["100.64.0.9"], online: true },
      peers: [],
      targets: [],
      exposes: exposes.map((e) => ({
        name: e.name,
        backendReachable: e.reachable,
        error: e.error ?? (e.reachable ? "" : "dial failed"),
      })),
      ...(names ? { names } : {}),
    },
  };
}

export const isIngress = (o: K8sObject) => o.apiVersion === API_VERSION && o.kind === "TailnetIngress";
