/**
 * The egress's plans (pure): which Headscale writes a sync wants — which node each replica is, and the
 * predecessors, unbound nodes and removed replicas' nodes to delete and the renames (replica-nodes.ts); reuse,
 * create or retire the pre-auth key (publish first, expire after proof) — and what finalize has left to clean.
 * Writes are wanted only from what this sync could read: a failed observation plans none.
 */
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { planAgentReplicas } from "../../shared/agent-replicas.js";
import { expirableKeyIds } from "../../shared/authkey.js";
import { nodeLabel } from "../../shared/node-names.js";
import type { ReplicaNodesPlan } from "../../shared/replica-nodes.js";
import { nodesMintedBy } from "../../shared/tenancy.js";
import { egressHostname } from "./children.js";
import { type EgressKeyPlan, keyExpired, planEgressKey } from "./keys.js";
import type { EgressObservation } from "./observe.js";
import type { EgressSpec } from "./spec.js";

export interface EgressPlan {
  /** Which node each replica is, and the node writes that follows from it; none without a Tailnet. */
  replicas?: ReplicaNodesPlan;
  /** Older keys of this egress to expire: the stable Secret is proven to hold a newer one (expirableKeyIds). */
  expireKeys: string[];
  /** The pre-auth key; undefined without a Tailnet (nothing is wanted). */
  key?: EgressKeyPlan;
  /** Why a key that should be created is not, this round (Headscale could not be read). */
  keyBlocked?: string;
}

export function planEgress(parent: K8sObject, spec: EgressSpec, observed: EgressObservation): EgressPlan {
  if (!observed.ok) return { expireKeys: [] };
  const { nodes, tag, now, keys } = observed;
  const replicas = planAgentReplicas(observed.replicas, {
    replicas: spec.replicas,
    nodes,
    ownKeys: observed.ownKeys,
    tag,
    now,
    hostname: egressHostname(parent),
  });
  const key = planEgressKey({ keySecrets: observed.keySecrets, now, keys, nodes, tag, replicas: spec.replicas });
  const expireKeys = keys.ok ? expirableKeyIds(observed.keySecrets[0]?.secret, observed.ownKeys, keys.value, now) : [];
  // the key list only refines the plan (keys.ts); without it the plan rests on the Secrets alone
  const failed = key.plan.action === "create" ? [observed.policy, nodes].find((o) => !o.ok) : undefined;
  return {
    replicas,
    expireKeys,
    key,
    ...(failed && !failed.ok
      ? { keyBlocked: `not created while Headscale cannot be read (${failed.error.message})` }
      : {}),
  };
}

/** What finalize has left to do in Headscale. */
export interface CleanupPlan {
  expireKeys: string[];
  deleteNodes: { id: string; name: string }[];
}

/**
 * Pure: what is left to clean up: the keys this egress minted (`ownKeys`, tenancy.ts ownKeyIds) and the nodes
 * registered with them — never whatever carries its tag, which an admin's node may.
 */
export function planCleanup(
  nodes: readonly HsNode[],
  keys: readonly HsPreAuthKey[],
  ownKeys: ReadonlySet<string>,
  now: Date,
): CleanupPlan {
  const byId = (a: { id: string }, b: { id: string }) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id);
  return {
    expireKeys: keys
      .filter((k) => ownKeys.has(k.id) && !keyExpired(k, now))
      .sort(byId)
      .map((k) => k.id),
    deleteNodes: nodesMintedBy(nodes, ownKeys)
      .sort(byId)
      .map((n) => ({ id: n.id, name: nodeLabel(n) })),
  };
}

export const cleanupDone = (p: CleanupPlan) => p.expireKeys.length === 0 && p.deleteNodes.length === 0;
