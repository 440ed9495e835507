/**
 * act for a TailnetIngress: the only Headscale writes it makes. In sync, the pre-auth key (created
 * or rotated through the shared ensureAuthKey, only when this sync's reads succeeded); in finalize,
 * deleting the nodes that carry exactly the ingress's tag and expiring its keys. Outcomes are
 * returned, never thrown, and fold back into status.
 */
import { HeadscaleError } from "../../headscale/errors.js";
import type { HsNode, HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { commonLabels } from "../../k8s/labels.js";
import { type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { nodeLabel, nodesOwnedByTag } from "../shared/agent.js";
import { AGENT_KEY_FLAGS, type AuthKeyOutcome, type AuthKeyPlan, ensureAuthKey } from "../shared/authkey.js";

/**
 * The key Secret to return: the current one while it is good or while Headscale may not be
 * written; otherwise a fresh tagged key with AGENT_KEY_FLAGS (reusable, ephemeral). A failed creation keeps the current Secret (ensureAuthKey).
 */
export async function settleAuthKey(
  plan: AuthKeyPlan,
  write: boolean,
  view: HeadscaleView | undefined,
  parent: K8sObject,
  opts: { tag: string; ttlSeconds: number; now: Date; replicas?: number },
): Promise<AuthKeyOutcome> {
  const keep = plan.current;
  if (plan.action === "reuse" || !write || !view) {
    return keep ? { secret: reuseObserved(keep.secret), keyId: keep.keyId, expiresAt: keep.expiresAt } : {};
  }
  const outcome = await ensureAuthKey(plan, view.client, parent, {
    tags: [opts.tag],
    ...AGENT_KEY_FLAGS,
    ttlSeconds: opts.ttlSeconds,
    now: opts.now,
    labels: commonLabels(parent, "ingress"),
  });
  if (!outcome.error) view.invalidate("preAuthKeys");
  return outcome;
}

export interface CleanupOutcome {
  done: boolean;
  deletedNodes: string[];
  expiredKeys: string[];
  /** The first failure (names the operation, never a key). */
  error?: string;
}

const message = (e: unknown) => (e instanceof HeadscaleError ? e.message : "Headscale request failed");

/** A key that can still register a node: no expiration recorded, or one in the future (not year 0001). */
function stillValid(key: HsPreAuthKey, now: Date): boolean {
  if (!key.expiration) return true;
  const at = new Date(key.expiration);
  return Number.isNaN(at.getTime()) || at.getTime() > now.getTime();
}

/**
 * Finalize: delete every node carrying exactly `tag` (a node with more tags is someone else's too)
 * and expire every still-valid key tagged exactly `tag`. Reads are fresh (the cache is dropped
 * first); idempotent, so a retry after a partial failure finishes the job.
 */
export async function cleanupIngress(view: HeadscaleView, tag: string, now: Date): Promise<CleanupOutcome> {
  view.invalidate("nodes");
  view.invalidate("preAuthKeys");
  const [nodes, keys] = await Promise.all([view.nodes(), view.preAuthKeys()]);
  const out: CleanupOutcome = { done: false, deletedNodes: [], expiredKeys: [] };
  if (!nodes.ok) return { ...out, error: nodes.error.message };
  if (!keys.ok) return { ...out, error: keys.error.message };
  const mine: HsNode[] = nodesOwnedByTag(nodes.value, tag);
  try {
    for (const node of mine) {
      await view.client.nodes.delete(node.id);
      out.deletedNodes.push(nodeLabel(node));
    }
    for (const key of keys.value) {
      if (key.aclTags.length !== 1 || key.aclTags[0] !== tag || !stillValid(key, now)) continue;
      await view.client.preAuthKeys.expire(key.id);
      out.expiredKeys.push(key.id);
    }
  } catch (e) {
    out.error = message(e);
  } finally {
    if (out.deletedNodes.length) view.invalidate("nodes");
    if (out.expiredKeys.length) view.invalidate("preAuthKeys");
  }
  return { ...out, done: out.error === undefined };
}
