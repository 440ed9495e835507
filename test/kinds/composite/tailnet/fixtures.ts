/**
 * Objects and observations for the Tailnet tests: a parent, its Secrets and base ConfigMap, one
 * workload object of each kind, Headscale observations (healthy by default) and typed errors in
 * the shapes the client produces.
 */
import type { Outcome } from "../../../../src/headscale/capabilities.js";
import type { Obs } from "../../../../src/headscale/errors.js";
import { HeadscaleError, type HeadscaleErrorInit } from "../../../../src/headscale/errors.js";
import type { HsApiKey, HsNode, HsPolicy, HsUser } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { HeadscaleObservations } from "../../../../src/kinds/composite/tailnet/observed.js";
import { parentObject } from "../../../fixtures/hooks.js";

export const NOW = new Date("2026-11-29T10:00:00Z");
export const NS = "tailnet-system";
export const API_KEY = "hskey-api-abcdefabcdef-0123456789012345678901234567890123456789012345678901234567890123";
export const URL = "https://headscale.example.com";
export const BASE = `// base policy
{
  "groups": { "group:eng": ["alice@"], "group:platform": ["bob@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] }, ],
}`;

export const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

export function tailnetSpec(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    headscale: {
      url: URL,
      apiKeySecretRef: { namespace: NS, name: "headscale-api-key" },
    },
    policy: {
      mode: "Apply",
      baseConfigMapRef: { namespace: NS, name: "tailnet-policy-base" },
      tagOwners: ["group:platform"],
    },
    allowedIngressSources: ["group:eng"],
    allowedEgressTargets: ["100.64.0.0/10"],
    reservedNetworks: ["10.96.0.0/12"],
    dns: { baseDomain: "ts.example.com" },
    ...extra,
  };
}

export function tailnet(spec = tailnetSpec(), status?: Record<string, unknown>): K8sObject {
  return parentObject("Tailnet", "home", spec, { uid: "11111111-1111-4111-8111-111111111111", status });
}

export const apiKeySecret = (key = API_KEY, name = "headscale-api-key"): K8sObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, namespace: NS },
  data: { apiKey: b64(key) },
});

export const caSecret = (pem: string): K8sObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "headscale-ca", namespace: NS },
  data: { "ca.crt": b64(pem) },
});

export const baseConfigMap = (text = BASE): K8sObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "tailnet-policy-base", namespace: NS },
  data: { "policy.hujson": text },
});

const workload = (kind: string, name: string, namespace: string, spec: Record<string, unknown>, extra = {}) =>
  parentObject(kind, name, { tailnetRef: { name: "home" }, ...spec }, { namespace, ...extra });

export const egress = (name = "db", namespace = "shop", host = "db-1") =>
  workload("TailnetEgress", name, namespace, {
    targets: [{ name: "postgres", host, ports: [{ port: 5432, protocol: "TCP" }] }],
  });

export const ingress = (name = "grafana", namespace = "monitoring", extra: Record<string, unknown> = {}) =>
  workload("TailnetIngress", name, namespace, {
    hostname: name,
    allowFrom: ["group:eng"],
    exposes: [{ name: "web", port: 443, backend: { service: name, port: 3000 } }],
    ...extra,
  });

export const site = (name = "lan", namespace = "net", prefixes = ["192.168.10.0/24"], creationTimestamp?: string) =>
  workload(
    "TailnetSite",
    name,
    namespace,
    { prefixes, advertiserTags: ["tag:router-home"], allowFrom: ["group:eng"] },
    creationTimestamp ? { creationTimestamp } : {},
  );

export const gateway = (dnsServiceIP?: string) =>
  workload(
    "TailnetGateway",
    "cluster-gw",
    "tailnet-system",
    { hostname: "cluster-gw", routes: ["10.96.0.0/12"] },
    dnsServiceIP ? { status: { dnsServiceIP } } : {},
  );

/** Every related object of a healthy Tailnet. */
export const healthyRelated = (): K8sObject[] => [
  apiKeySecret(),
  baseConfigMap(),
  egress(),
  ingress(),
  site(),
  gateway(),
];

export function hsNode(o: Partial<HsNode> & { id: string; givenName: string }): HsNode {
  return {
    machineKey: `mkey:${o.id}`,
    nodeKey: `nodekey:${o.id}`,
    ipAddresses: [`100.64.0.${o.id}`, `fd7a:115c:a1e0::${o.id}`],
    name: o.givenName,
    user: null,
    lastSeen: "2026-11-29T09:59:00Z",
    expiry: null,
    preAuthKey: null,
    createdAt: "2026-11-01T00:00:00Z",
    registerMethod: "REGISTER_METHOD_AUTH_KEY",
    online: true,
    approvedRoutes: [],
    availableRoutes: [],
    subnetRoutes: [],
    tags: [],
    shape: { hasTags: true, hasApprovedRoutes: true },
    ...o,
  };
}

/**
 * An agent node as the operator's agents register: with an agent-shaped pre-auth key (reusable, ephemeral, no
 * user, exactly the node's tags) minted after the fixtures' objects, so an object without status.preAuthKeyIds
 * adopts it (tenancy.ts ownKeyIds) — node-owners.ts counts only such nodes as an object's agents.
 */
export function agentNode(o: Partial<HsNode> & { id: string; givenName: string }): HsNode {
  return hsNode({
    preAuthKey: {
      user: null,
      id: `k${o.id}`,
      key: `hskey-auth-k${o.id}-***`,
      reusable: true,
      ephemeral: true,
      used: true,
      expiration: null,
      createdAt: "2026-11-29T00:00:00Z",
      aclTags: o.tags ?? [],
    },
    ...o,
  });
}

export const hsUser = (id: string, name: string, provider = ""): HsUser => ({
  id,
  name,
  createdAt: null,
  displayName: "",
  email: "",
  providerId: provider ? `https://idp.example.com/${id}` : "",
  provider,
  profilePicUrl: "",
});

export const ok = <T>(value: T): Obs<T> => ({ ok: true, value, at: NOW });
export const fail = <T>(error: HeadscaleError): Obs<T> => ({ ok: false, error, at: NOW });
export const checkOk: Outcome<void> = { ok: true, value: undefined };
export const checkFail = (error: HeadscaleError): Outcome<void> => ({ ok: false, error });

export const hsError = (init: Partial<HeadscaleErrorInit> & Pick<HeadscaleErrorInit, "operation">) =>
  new HeadscaleError({ kind: "http", detail: "", classification: "other", ...init });
export const refused = (operation: string) =>
  hsError({ kind: "transport", operation, detail: "connection refused", classification: "refused" });
export const timedOut = (operation: string) =>
  hsError({ kind: "transport", operation, detail: "timed out after 300ms", classification: "timeout" });
export const unauthorized = (operation: string) =>
  hsError({ kind: "unauthorized", operation, status: 401, detail: "Unauthorized" });
/** A 401 the client explained by GET /health failing (Headscale's database is down; http.ts). */
export const databaseDown401 = (operation: string) =>
  hsError({
    operation,
    status: 401,
    detail:
      'Unauthorized, and GET /health answers 500 {"status":"fail"}: Headscale\'s database is down, so it cannot check any API key',
    classification: "databaseDown",
  });
export const serverError = (operation: string, detail = "fault injected: 500") =>
  hsError({ operation, status: 500, grpcCode: 13, detail });

export const LIVE_POLICY: HsPolicy = { policy: '{"acls": []}', updatedAt: "2026-11-28T00:00:00Z" };

export const OWN_KEY: HsApiKey = {
  id: "1",
  prefix: "hskey-api-abcdefabcdef-***",
  expiration: "2027-02-27T10:00:00Z",
  createdAt: "2026-11-29T10:00:00Z",
};

/** A healthy 0.29 server in database mode: nodes for the egress target and the ingress, unique users. */
export function healthyHs(overrides: Partial<HeadscaleObservations> = {}): HeadscaleObservations {
  return {
    health: ok({ databaseConnectivity: true }),
    nodes: ok([
      hsNode({ id: "7", givenName: "db-1" }),
      hsNode({ id: "9", givenName: "grafana", tags: ["tag:k8s-monitoring-grafana"] }),
    ]),
    users: ok([hsUser("1", "alice"), hsUser("2", "bob")]),
    policy: ok(LIVE_POLICY),
    apiKeys: ok([OWN_KEY]),
    ...overrides,
  };
}

/** Every Headscale observation failing with the same error (the server is down, or the key is bad). */
export function failingHs(error: (op: string) => HeadscaleError): HeadscaleObservations {
  return {
    health: fail(error("GET /api/v1/health")),
    nodes: fail(error("GET /api/v1/node")),
    users: fail(error("GET /api/v1/user")),
    policy: fail(error("GET /api/v1/policy")),
    apiKeys: fail(error("GET /api/v1/apikey")),
  };
}
