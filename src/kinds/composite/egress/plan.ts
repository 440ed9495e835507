/**
 * The egress's plans (pure): which Headscale writes a sync wants — delete the agent nodes a newer pod
 * superseded, reuse or create the pre-auth key — and what finalize has left to clean. Writes are wanted
 * only from what this sync could read: a failed observation plans none.
 */
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import { nodeLabel } from "../../shared/node-names.js";
import { supersededNodes } from "../../shared/superseded.js";
import { nodesMintedBy } from "../../shared/tenancy.js";
import { type EgressKeyPlan, keyExpired, planEgressKey } from "./keys.js";
import type { EgressObservation } from "./observe.js";
import type { EgressSpec } from "./spec.js";

export interface EgressPlan {
  /** Superseded agent nodes to delete (supersededNodes); none without a node list read this sync. */
  deleteNodes: HsNode[];
  /** The pre-auth key; undefined without a Tailnet (nothing is wanted). */
  key?: EgressKeyPlan;
  /** Why a key that should be created is not, this round (Headscale could not be read). */
  keyBlocked?: string;
}

export function planEgress(spec: EgressSpec, observed: EgressObservation): EgressPlan {
  if (!observed.ok) return { deleteNodes: [] };
  const { nodes, tag, now } = observed;
  const deleteNodes = nodes.ok ? supersededNodes(nodes.value, tag, observed.ownKeys, spec.replicas, now) : [];
  const gone = new Set(deleteNodes.map((n) => n.id));
  // the key is planned on the node list as it will be once the superseded nodes are gone
  const remaining = nodes.ok && gone.size ? { ...nodes, value: nodes.value.filter((n) => !gone.has(n.id)) } : nodes;
  const key = planEgressKey({
    keySecrets: observed.keySecrets,
    now,
    keys: observed.keys,
    nodes: remaining,
    tag,
    replicas: spec.replicas,
  });
  // the key list only refines the plan (keys.ts); without it the plan rests on the Secrets alone
  const failed = key.plan.action === "create" ? [observed.policy, nodes].find((o) => !o.ok) : undefined;
  return {
    deleteNodes,
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
