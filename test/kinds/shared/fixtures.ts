/**
 * Observation fixtures for the agent kinds' pure decisions (egress, ingress): Headscale nodes,
 * policies and failures as the view hands them over, and agent /status documents.
 */

import type { AgentStatus, DialPath } from "../../../src/contract/agent-status.js";
import type { Obs } from "../../../src/headscale/errors.js";
import { HeadscaleError, type HeadscaleErrorClassification } from "../../../src/headscale/errors.js";
import type { HsNode, HsPolicy, HsPreAuthKey } from "../../../src/headscale/types.js";

export const AT = new Date("2026-11-29T10:00:00Z");

export const ok = <T>(value: T): Obs<T> => ({ ok: true, value, at: AT });

/** A failed read, worded as the client words it ("Headscale GET /api/v1/node: 500 boom"). */
export function failed<T>(
  operation: string,
  detail: string,
  opts: { status?: number; classification?: HeadscaleErrorClassification } = {},
): Obs<T> {
  const error = new HeadscaleError({
    kind: opts.status === undefined ? "transport" : "http",
    operation,
    status: opts.status,
    detail,
    classification: opts.classification ?? "other",
  });
  return { ok: false, error, at: AT };
}

export function policy(tagOwners: Record<string, string[]>, extra = ""): HsPolicy {
  return {
    policy: `{\n  // managed\n  "tagOwners": ${JSON.stringify(tagOwners)},${extra}\n  "grants": [],\n}\n`,
    updatedAt: "2026-11-29T09:00:00Z",
  };
}

export interface NodeInput {
  id: string;
  name: string;
  ips?: string[];
  tags?: string[];
  availableRoutes?: string[];
  approvedRoutes?: string[];
  online?: boolean;
}

export function hsNode(n: NodeInput): HsNode {
  return {
    id: n.id,
    machineKey: `mkey:${n.id}`,
    nodeKey: `nodekey:${n.id}`,
    ipAddresses: n.ips ?? [`100.64.0.${n.id}`, `fd7a:115c:a1e0::${n.id}`],
    name: n.name,
    givenName: n.name,
    user: null,
    lastSeen: "2026-11-29T09:59:00Z",
    expiry: null,
    preAuthKey: null,
    createdAt: "2026-11-01T00:00:00Z",
    registerMethod: "REGISTER_METHOD_AUTH_KEY",
    online: n.online ?? true,
    approvedRoutes: n.approvedRoutes ?? [],
    availableRoutes: n.availableRoutes ?? [],
    subnetRoutes: [],
    tags: n.tags ?? [],
    shape: { hasTags: true, hasApprovedRoutes: true },
  };
}

export function preAuthKey(k: {
  id: string;
  aclTags: string[];
  expiration: string | null;
  used?: boolean;
}): HsPreAuthKey {
  return {
    user: null,
    id: k.id,
    key: `hskey-auth-prefix${k.id}-***`,
    reusable: false,
    ephemeral: true,
    used: k.used ?? false,
    expiration: k.expiration,
    createdAt: "2026-11-29T00:00:00Z",
    aclTags: k.aclTags,
  };
}

export interface PeerInput {
  hostName: string;
  ips: string[];
  primaryRoutes?: string[];
  online?: boolean;
}

/** An agent /status: peers as the netmap shows them, targets as the probe found them. */
export function agentStatus(input: {
  ready?: boolean;
  self?: { hostName: string; ips: string[] };
  peers?: PeerInput[];
  targets?: { name: string; address: string; reachable: boolean; error?: string; via?: DialPath }[];
}): AgentStatus {
  return {
    ready: input.ready ?? true,
    self: input.self
      ? { hostName: input.self.hostName, tailscaleIPs: input.self.ips, online: true }
      : { hostName: "", tailscaleIPs: [], online: false },
    peers: (input.peers ?? []).map((p) => ({
      hostName: p.hostName,
      dnsName: `${p.hostName}.ts.example.com.`,
      tailscaleIPs: p.ips,
      primaryRoutes: p.primaryRoutes ?? [],
      online: p.online ?? true,
    })),
    targets: (input.targets ?? []).map((t) => ({
      name: t.name,
      address: t.address,
      reachable: t.reachable,
      error: t.error ?? (t.reachable ? "" : "dial failed"),
      via: t.via ?? "unknown",
    })),
    exposes: [],
  };
}
