/**
 * Inputs for the pure decide tests: a healthy http ingress (every condition good) that each test
 * breaks in one place, with certificates from the test PKI valid around AT.
 */
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngress, type IngressDecideInput } from "../../../../src/kinds/composite/ingress/decide.js";
import type { TailnetView } from "../../../../src/kinds/composite/ingress/facts.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { type AuthKeyOutcome, authKeySecret } from "../../../../src/kinds/shared/authkey.js";
import { tailnetSettings } from "../../../../src/kinds/shared/workload.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../../../fakes/agent/pki.js";
import { AT, hsNode, ok, policy } from "../../shared/fixtures.js";
import { ingress, LOGIN, scraped, TAG, tailnet, tlsSecret } from "./fixtures.js";

export const VALIDITY = { notBefore: new Date("2026-11-01T00:00:00Z"), notAfter: new Date("2027-01-01T00:00:00Z") };

export interface Certificates {
  pki: TestPki;
  /** dash + grafana-eu, valid around AT. */
  good: IssuedCertificate;
  /** dash only. */
  dashOnly: IssuedCertificate;
  /** dash + grafana-eu, expired the day before AT. */
  expired: IssuedCertificate;
}

export async function certificates(): Promise<Certificates> {
  const pki = await createTestPki();
  const both = ["dash.ts.example.com", "grafana-eu.ts.example.com"];
  return {
    pki,
    good: await pki.issue({ names: both, ...VALIDITY }),
    dashOnly: await pki.issue({ names: ["dash.ts.example.com"], ...VALIDITY }),
    expired: await pki.issue({
      names: both,
      notBefore: new Date("2026-10-01T00:00:00Z"),
      notAfter: new Date("2026-11-28T00:00:00Z"),
    }),
  };
}

const KEY_CREATED = new Date("2026-11-29T06:00:00Z");
const KEY_EXPIRES = new Date("2026-11-30T06:00:00Z");

/** A key Secret created at 06:00 for a day: half-life at 18:00, 8 h after AT. */
export function keyOutcome(parent: K8sObject): AuthKeyOutcome {
  const secret = authKeySecret(
    parent,
    { id: "4", key: "hskey-auth-abc-secret", createdAt: KEY_CREATED, expiresAt: KEY_EXPIRES },
    {},
  );
  return { secret, keyId: "4", expiresAt: KEY_EXPIRES };
}

export type Over = Partial<Omit<IngressDecideInput, "spec">>;

/** The Tailnet resolved, as observe reports it. */
export const resolved = (spec: Record<string, unknown> = {}): TailnetView => ({
  ok: true,
  settings: tailnetSettings(tailnet("home", spec)),
  loginServer: LOGIN,
});

/** No Tailnet: nothing read from Headscale, no key. */
export const NO_TAILNET: Over = {
  tailnet: { ok: false, reason: "NoTailnet", message: 'Tailnet "home" not found' },
  policy: undefined,
  nodes: undefined,
  authKey: {},
};

/** The Tailnet exists but has not published its credentials: its settings are known, Headscale was not read. */
export const NO_API_KEY: Over = {
  tailnet: {
    ok: false,
    reason: "NoAPIKey",
    message: "Secret tailnet-system/tailnet-home-credentials not found yet",
    settings: tailnetSettings(tailnet()),
  },
  policy: undefined,
  nodes: undefined,
  authKey: {},
};

/** spec.proxyClassName names a class that does not exist: held like NoAPIKey (settings known, nothing read). */
export const NO_PROXY_CLASS: Over = {
  tailnet: {
    ok: false,
    reason: "ProxyClassMissing",
    message: "TailnetProxyClass edge does not exist; the agent pods keep their current settings until it does",
    settings: tailnetSettings(tailnet()),
  },
  policy: undefined,
  nodes: undefined,
  authKey: {},
};

/**
 * A node of the ingress's agent: registered with an agent-shaped key of its tag (reusable, ephemeral, no user,
 * minted after the ingress), which an ingress without status.preAuthKeyIds adopts (tenancy.ts ownKeyIds), so
 * node-owners.ts counts it as the ingress's own (the agent's own hostname label is then no conflict).
 */
export function agentNode(n: Parameters<typeof hsNode>[0]): HsNode {
  const tags = n.tags ?? [];
  return {
    ...hsNode(n),
    preAuthKey: {
      user: null,
      id: `k${n.id}`,
      key: `hskey-auth-k${n.id}-***`,
      reusable: true,
      ephemeral: true,
      used: true,
      expiration: null,
      createdAt: "2026-11-29T00:00:00Z",
      aclTags: tags,
    },
  };
}

/** A healthy http ingress: every condition good; each test breaks one thing. The spec is read from `parent`. */
export function healthyInput(good: IssuedCertificate, over: Over = {}): IngressDecideInput {
  const parent = over.parent ?? ingress();
  return {
    parent,
    config: DEFAULT_CONFIG,
    spec: readIngressSpec(parent),
    children: [],
    tailnet: resolved(),
    policy: ok(policy({ [TAG]: ["group:ops"] })),
    nodes: ok([agentNode({ id: "9", name: "grafana", tags: [TAG] })]),
    scrapes: [scraped([{ name: "web", reachable: true }])],
    tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", good)]]),
    services: new Set(["grafana"]),
    ingresses: [parent],
    authKey: keyOutcome(parent),
    now: AT,
    ...over,
  };
}

export const conditionsOf = (i: IngressDecideInput): Map<string, ConditionInput> =>
  new Map(decideIngress(i).conditions.map((c) => [c.type, c]));
