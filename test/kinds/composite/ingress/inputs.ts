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
import type { ReplicaObservation } from "../../../../src/kinds/shared/agent-replicas.js";
import { type AuthKeyOutcome, authKeySecret } from "../../../../src/kinds/shared/authkey.js";
import { wantedLabel } from "../../../../src/kinds/shared/replica.js";
import { type NodeStatusItem, planReplicaNodes, type StateFact } from "../../../../src/kinds/shared/replica-nodes.js";
import { tailnetSettings } from "../../../../src/kinds/shared/workload.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../../../fakes/agent/pki.js";
import { AT, hsNode, ok, policy } from "../../shared/fixtures.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";
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
    true,
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

/** status.nodes[0] of the healthy ingress: replica 0 bound to node 9 (issue 32). */
export const AGENT_RECORD = {
  replica: 0,
  id: "9",
  name: "grafana",
  addresses: ["100.64.0.9", "fd7a:115c:a1e0::9"],
  nodeKey: "nodekey:9",
  machineKey: "mkey:9",
  preAuthKeyId: "k9",
  online: true,
};

/** Replica 0's state Secret names node 9 (ours: key k9), as recorded since an earlier sync: NodeIdentity Stable. */
export function boundReplicas(
  parent: K8sObject,
  nodes: readonly HsNode[] = [agentNode({ id: "9", name: "grafana", tags: [TAG] })],
  o: { facts?: StateFact[]; record?: NodeStatusItem[]; legacy?: boolean; startedAt?: Date } = {},
) {
  const replicas: ReplicaObservation = {
    ...observedReplicas(parent, 1),
    facts: o.facts ?? [{ index: 0, name: `${parent.metadata.name}-agent-0-state`, deviceId: "9", hasState: true }],
    record: o.record ?? [AGENT_RECORD],
    pods: o.startedAt ? [{ index: 0, startedAt: o.startedAt }] : [],
    ...(o.legacy ? { legacyDeployment: { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" } } } : {}),
  };
  const replicaPlan = planReplicaNodes({
    replicas: 1,
    facts: replicas.facts,
    running: new Set([0]),
    pods: replicas.pods,
    nodes,
    ownKeys: new Set(["k9", "k8"]),
    tag: TAG,
    record: replicas.record,
    now: AT,
    wanted: (i) => wantedLabel("grafana", i),
  });
  return { replicas, replicaPlan };
}

/** One decide input per NodeIdentity reason (issue 32), for the reasons-table coverage. */
export function identityInputs(good: IssuedCertificate): { reason: string; input: IngressDecideInput }[] {
  const parent = ingress();
  const x = agentNode({ id: "9", name: "grafana", tags: [TAG] });
  const y = {
    ...agentNode({ id: "8", name: "grafana-old", tags: [TAG] }),
    online: false,
    lastSeen: "2026-11-29T09:00:00Z",
  };
  const with_ = (nodes: HsNode[], o: Parameters<typeof boundReplicas>[2]) =>
    healthyInput(good, { parent, nodes: ok(nodes), ...boundReplicas(parent, nodes, o) });
  const fact = (deviceId?: string): StateFact => ({
    index: 0,
    name: "grafana-agent-0-state",
    ...(deviceId ? { deviceId } : {}),
    hasState: !!deviceId,
  });
  const rec = (n: HsNode, nodeKey = n.nodeKey): NodeStatusItem => ({ ...AGENT_RECORD, id: n.id, nodeKey });
  return [
    { reason: "Stable", input: with_([x], {}) },
    { reason: "Registering", input: with_([x], { facts: [fact()], record: [] }) },
    { reason: "Migrating", input: with_([x], { facts: [fact()], record: [], legacy: true }) },
    { reason: "IdentityChanged", input: with_([x], { record: [rec(x, "nodekey:old")] }) },
    { reason: "Reregistered", input: with_([x, y], { record: [rec(y)] }) },
    {
      reason: "StateLost",
      input: with_([x, y], { facts: [fact()], record: [rec(y)], startedAt: new Date("2026-11-29T09:00:00Z") }),
    },
    { reason: "ForeignNode", input: with_([x], { facts: [fact("3")] }) },
    {
      reason: "NotObserved",
      input: healthyInput(good, { nodes: { ok: false, error: new Error("x") as never, at: AT } }),
    },
  ];
}

/** A healthy http ingress: every condition good; each test breaks one thing. The spec is read from `parent`. */
export function healthyInput(good: IssuedCertificate, over: Over = {}): IngressDecideInput {
  const parent = over.parent ?? ingress();
  return {
    // replica 0 bound to node 9 of the node list given (or the default one)
    ...boundReplicas(parent, over.nodes?.ok ? over.nodes.value : undefined),
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
    backendGrants: { served: true, grants: [], routes: [] },
    authKey: keyOutcome(parent),
    now: AT,
    ...over,
  };
}

export const conditionsOf = (i: IngressDecideInput): Map<string, ConditionInput> =>
  new Map(decideIngress(i).conditions.map((c) => [c.type, c]));
