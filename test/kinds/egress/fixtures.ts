/**
 * A healthy egress world for the pure decision, built from a base plus overrides (Kubeflow's
 * DATA_* style): egress shop/db with a node target (postgres → db-1) and a subnet target
 * (printer → 192.168.1.10 behind router's 192.168.1.0/24).
 */
import { configFrom } from "../../../src/config.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import type { EgressDecisionInput, EgressObservations } from "../../../src/kinds/egress/decide.js";
import type { AgentObservation } from "../../../src/kinds/egress/targets.js";
import { authKeySecret } from "../../../src/kinds/shared/authkey.js";
import { tailnetSettings } from "../../../src/kinds/shared/workload.js";
import { parentObject, toMaps } from "../../fixtures/hooks.js";
import { AT, agentStatus, failed, hsNode, type NodeInput, ok, type PeerInput, policy } from "../shared/fixtures.js";

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

export interface World {
  parent: K8sObject;
  children: K8sObject[];
  related: K8sObject[];
  tagOwners: Record<string, string[]>;
  nodes: NodeInput[] | "fail";
  policy: "fail" | "none" | "ok";
  peers: PeerInput[];
  probes: Record<string, { reachable: boolean; error?: string; via?: string }>;
  agents: "ok" | AgentObservation;
  key: "reuse" | "none";
  now: Date;
}

export function healthyWorld(): World {
  return {
    parent: egressParent(),
    children: [],
    related: [],
    tagOwners: { [TAG]: [] },
    nodes: structuredClone(NODES),
    policy: "ok",
    peers: structuredClone(PEERS),
    probes: { postgres: { reachable: true }, printer: { reachable: true } },
    agents: "ok",
    key: "reuse",
    now: AT,
  };
}

const ADDRESSES: Record<string, string> = { postgres: "100.64.0.7", printer: "192.168.1.10" };

export function observationsOf(w: World): EgressObservations {
  const agents: AgentObservation =
    w.agents === "ok"
      ? {
          ok: true,
          agents: [
            {
              pod: "db-agent-0",
              status: agentStatus({
                self: { hostName: "shop-db", ips: ["100.64.0.9"] },
                peers: w.peers,
                targets: Object.entries(w.probes).map(([name, p]) => ({
                  name,
                  address: ADDRESSES[name] ?? name,
                  reachable: p.reachable,
                  error: p.error,
                  via: p.via,
                })),
              }),
            },
          ],
        }
      : w.agents;
  const secret = keySecret(w.parent);
  return {
    policy:
      w.policy === "fail"
        ? failed("GET /api/v1/policy", "ECONNREFUSED")
        : ok(w.policy === "none" ? null : policy(w.tagOwners)),
    nodes: w.nodes === "fail" ? failed("GET /api/v1/node", "ECONNREFUSED") : ok(w.nodes.map(hsNode)),
    agents,
    authKey:
      w.key === "reuse"
        ? { secret, keyId: "7", expiresAt: KEY_EXPIRES }
        : { error: "Headscale POST /api/v1/preauthkey: 500 fault injected: 500" },
  };
}

export function decisionInput(w: World): EgressDecisionInput {
  return {
    parent: w.parent,
    children: toMaps(w.children),
    related: toMaps(w.related),
    config,
    settings,
    observations: observationsOf(w),
    now: w.now,
  };
}
