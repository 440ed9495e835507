/**
 * Named builders over the real egress decide input (EgressDecideInput): egress shop/db with a node target
 * (postgres → db-1) and a subnet target (printer → 192.168.1.10 behind router's 192.168.1.0/24), healthy by
 * default; each builder takes the part of the input a scenario changes.
 */

import { configFrom } from "../../../../src/config.js";
import type { DialPath } from "../../../../src/contract/agent-status.js";
import type { HsNode, HsPolicy } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { EgressDecideInput, EgressTailnet } from "../../../../src/kinds/composite/egress/decide.js";
import { readEgressSpec } from "../../../../src/kinds/composite/egress/spec.js";
import type { AgentObservation } from "../../../../src/kinds/composite/egress/targets.js";
import { authKeySecret, observedKeys } from "../../../../src/kinds/shared/authkey.js";
import { wantedLabel } from "../../../../src/kinds/shared/replica.js";
import { planReplicaNodes } from "../../../../src/kinds/shared/replica-nodes.js";
import { tailnetSettings } from "../../../../src/kinds/shared/workload.js";
import { parentObject, toMaps } from "../../../fixtures/hooks.js";
import {
  AT,
  agentStatus,
  failed,
  hsNode,
  type NodeInput,
  ok,
  type PeerInput,
  policy,
  preAuthKey,
} from "../../shared/fixtures.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";

export const TAG = "tag:k8s-shop-db";
export const UID = "0e9e0000-0000-4000-8000-00000000e9e5";
export const config = configFrom({
  images: { agent: "registry.example/tailnet-operator:1.0.0", tailscale: "tailscale/tailscale:v1.90.6" },
});

export const tailnet = parentObject("Tailnet", "home", {
  headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
  authKeyTTL: "24h",
  dns: { baseDomain: "ts.example.com" },
});
export const settings = tailnetSettings(tailnet);

export const TARGETS = [
  { name: "postgres", host: "db-1", ports: [{ port: 5432 }] },
  { name: "printer", host: "192.168.1.10", ports: [{ port: 9100 }, { port: 631 }] },
];

export function egressParent(spec: Record<string, unknown> = {}, status?: Record<string, unknown>): K8sObject {
  return parentObject(
    "TailnetEgress",
    "db",
    { tailnetRef: { name: "home" }, replicas: 1, targets: TARGETS, ...spec },
    { namespace: "shop", uid: UID, ...(status ? { status } : {}) },
  );
}

export const KEY_CREATED = new Date("2026-11-29T08:00:00Z");
export const KEY_EXPIRES = new Date("2026-11-30T08:00:00Z");

export function keySecret(parent: K8sObject = egressParent(), id = "7"): K8sObject {
  return authKeySecret(
    parent,
    { id, key: `hskey-auth-abc${id}-secretsecret`, createdAt: KEY_CREATED, expiresAt: KEY_EXPIRES },
    { "tailnet.internal/owner-uid": UID },
    true,
  );
}

export const NODES: NodeInput[] = [
  {
    id: "3",
    name: "router",
    tags: ["tag:router"],
    availableRoutes: ["192.168.1.0/24"],
    approvedRoutes: ["192.168.1.0/24"],
  },
  { id: "7", name: "db-1" },
  { id: "9", name: "shop-db", tags: [TAG] },
];

export const PEERS: PeerInput[] = [
  { hostName: "db-1", ips: ["100.64.0.7", "fd7a:115c:a1e0::7"] },
  { hostName: "router", ips: ["100.64.0.3"], primaryRoutes: ["192.168.1.0/24"] },
];

export type Probe = { reachable: boolean; error?: string; via?: DialPath };
export const PROBES: Record<string, Probe> = { postgres: { reachable: true }, printer: { reachable: true } };
const ADDRESSES: Record<string, string> = { postgres: "100.64.0.7", printer: "192.168.1.10" };

/** The agent pod db-agent-0 scraped: its netmap holds `peers`, its probes found `probes`. */
export function scraped(o: { peers?: PeerInput[]; probes?: Record<string, Probe> } = {}): AgentObservation {
  const probes = o.probes ?? PROBES;
  const status = agentStatus({
    self: { hostName: "shop-db", ips: ["100.64.0.9"] },
    peers: o.peers ?? PEERS,
    targets: Object.entries(probes).map(([name, p]) => ({
      name,
      address: ADDRESSES[name] ?? name,
      reachable: p.reachable,
      error: p.error,
      via: p.via,
    })),
  });
  return { ok: true, agents: [{ pod: "db-agent-0", status }] };
}

/** PROBES with some targets' answers replaced (or removed: `undefined`, the agent does not serve it yet). */
export function probes(over: Record<string, Probe | undefined>): Record<string, Probe> {
  const out: Record<string, Probe> = {};
  for (const [name, p] of Object.entries({ ...PROBES, ...over })) if (p) out[name] = p;
  return out;
}

/** The healthy read side: the policy owns the tag, db-1 and the router are nodes, the agent is registered. */
export type TailnetRead = Extract<EgressTailnet, { ok: true }>;
export function tailnetRead(over: Partial<TailnetRead> = {}): TailnetRead {
  return {
    ok: true,
    settings,
    tag: TAG,
    policy: ok(policy({ [TAG]: [] })),
    nodes: ok(NODES.map(hsNode)),
    agents: scraped(),
    ownKeys: new Set(["7"]),
    authKey: { secret: keySecret(), keyId: "7", expiresAt: KEY_EXPIRES },
    replicas: stableReplicas(),
    ...over,
  };
}

/** The agent's node 9 (NODES' shop-db) as registered with the egress's key 7. */
export const AGENT_NODE: HsNode = {
  ...hsNode({ id: "9", name: "shop-db", tags: [TAG] }),
  preAuthKey: preAuthKey({ id: "7", aclTags: [TAG], expiration: null }),
};

/** Replica 0 bound to node 9 since an earlier sync: NodeIdentity Stable, no node write. */
export function stableReplicas(): TailnetRead["replicas"] {
  const observed = {
    ...observedReplicas(egressParent(), 1),
    facts: [{ index: 0, name: "db-agent-0-state", deviceId: "9", hasState: true }],
    record: [AGENT_RECORD],
  };
  const plan = planReplicaNodes({
    replicas: 1,
    facts: observed.facts,
    running: new Set([0]),
    pods: [],
    nodes: [AGENT_NODE],
    ownKeys: new Set(["7"]),
    tag: TAG,
    record: observed.record,
    now: AT,
    wanted: (i) => wantedLabel("shop-db", i),
  });
  return { observed, replicas: plan };
}

/** status.nodes[0] for AGENT_NODE. */
export const AGENT_RECORD = {
  replica: 0,
  id: "9",
  name: "shop-db",
  addresses: ["100.64.0.9", "fd7a:115c:a1e0::9"],
  nodeKey: "nodekey:9",
  machineKey: "mkey:9",
  preAuthKeyId: "7",
  online: true,
};

export const NO_TAILNET: EgressTailnet = { ok: false, reason: "NoTailnet", message: 'Tailnet "home" not found' };
export const NO_API_KEY: EgressTailnet = {
  ok: false,
  reason: "NoAPIKey",
  message: "Secret tailnet-system/tailnet-home-credentials not found yet",
  tag: TAG,
};

export const failedPolicy = () => failed<HsPolicy | null>("GET /api/v1/policy", "ECONNREFUSED");
export const failedNodes = () => failed<HsNode[]>("GET /api/v1/node", "ECONNREFUSED");
export const nodes = (list: NodeInput[]) => ok(list.map(hsNode));

/**
 * The real decide input: egress shop/db whose observed children hold its key Secret (id 7), read at AT;
 * by default the healthy tailnet side (tailnetRead()).
 */
export function input(
  o: { parent?: K8sObject; children?: K8sObject[]; related?: K8sObject[]; tailnet?: EgressTailnet; now?: Date } = {},
): EgressDecideInput {
  const parent = o.parent ?? egressParent();
  const children = o.children ?? [keySecret(parent)];
  return {
    parent,
    children: toMaps(children),
    related: toMaps(o.related ?? []),
    config,
    spec: readEgressSpec(parent),
    keySecrets: observedKeys(children),
    tailnet: o.tailnet ?? tailnetRead(),
    now: o.now ?? AT,
  };
}
