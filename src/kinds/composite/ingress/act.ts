/**
 * act for a TailnetIngress: the only Headscale writes it makes, all through the view's write methods
 * (each invalidates what it changed). In sync, the plan's superseded agent nodes are deleted and the
 * pre-auth key is created or rotated (shared ensureAuthKey), only when this sync's reads allowed it (a
 * refused ingress — a withdrawn grant — has the keys it minted expired instead); in
 * finalize, the nodes registered with keys the ingress minted are deleted and those keys expired. Outcomes are
 * returned, never thrown, and fold back into status.
 */

import type { Obs } from "../../../headscale/errors.js";
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { commonLabels } from "../../../k8s/labels.js";
import { type K8sObject, reuseObserved } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { actReplicaNodes, logReplicaNodes, type ReplicaNodesOutcome } from "../../shared/agent-replicas.js";
import { type AuthKeyOutcome, type AuthKeyPlan, ensureAuthKey, REPLICA_KEY_FLAGS } from "../../shared/authkey.js";
import { nodeLabel } from "../../shared/node-names.js";
import { nodesMintedBy, ownKeyIds } from "../../shared/tenancy.js";
import { withdrawRefusedKeys } from "../../shared/withdraw.js";
import type { TailnetSettings } from "../../shared/workload.js";
import type { IngressObservation } from "./observe.js";
import type { IngressPlan } from "./plan.js";
import type { IngressSpec } from "./spec.js";

export interface IngressOutcome {
  /** The node list for decide: as observed, minus the nodes deleted now. */
  nodes?: Obs<HsNode[]>;
  authKey: AuthKeyOutcome;
  /** The replicas' node writes (deleted, released removed replicas, renames). */
  replicaNodes?: ReplicaNodesOutcome;
}

const qualified = (parent: K8sObject) => `${parent.metadata.namespace}/${parent.metadata.name}`;

export async function actIngress(
  req: HookRequest,
  _spec: IngressSpec,
  observed: IngressObservation,
  plan: IngressPlan,
  deps: HookDeps,
): Promise<IngressOutcome> {
  const { facts, view } = observed;
  // a withdrawn grant: the keys it minted are expired (shared/withdraw.ts)
  if (!facts.tailnet.ok) await withdrawRefusedKeys(req, deps, facts.tailnet.reason);
  let nodes = facts.nodes;
  let replicaNodes: ReplicaNodesOutcome | undefined;
  if (view && nodes && plan.replicas) {
    replicaNodes = await actReplicaNodes(view, nodes, plan.replicas);
    logReplicaNodes(deps, qualified(req.parent), replicaNodes);
    nodes = replicaNodes.nodes;
  }
  // publish first, expire after: these keys are older than the one the observed Secret is proven to hold
  for (const id of view ? plan.expireKeys : []) {
    const expired = await view?.expirePreAuthKey(id);
    if (expired && !expired.ok)
      deps.log.warn({ ingress: qualified(req.parent), keyId: id, error: expired.error.message }, "key not expired");
  }
  const settings = facts.tailnet.ok ? facts.tailnet.settings : undefined;
  const authKey =
    settings && plan.tag
      ? await settleAuthKey(plan.authKey, plan.write ? view : undefined, req.parent, {
          tag: plan.tag,
          settings,
          now: facts.now,
        })
      : {};
  if (authKey.error)
    deps.log.warn({ ingress: qualified(req.parent), error: authKey.error }, "pre-auth key not created");
  else if (plan.authKey.action === "create" && authKey.keyId && authKey.keyId !== plan.authKey.current?.keyId) {
    deps.log.info(
      { ingress: qualified(req.parent), keyId: authKey.keyId, why: plan.authKey.why },
      "created pre-auth key",
    );
  }
  return { ...(nodes ? { nodes } : {}), authKey, ...(replicaNodes ? { replicaNodes } : {}) };
}

/**
 * The key Secret to return: the current one while it is good or while Headscale may not be written
 * (no view); otherwise a fresh tagged key with REPLICA_KEY_FLAGS (reusable, not ephemeral) in the same
 * Secret `<parent>-authkey`. A failed creation keeps the current Secret (ensureAuthKey).
 */
async function settleAuthKey(
  plan: AuthKeyPlan,
  view: HeadscaleView | undefined,
  parent: K8sObject,
  opts: { tag: string; settings: TailnetSettings; now: Date },
): Promise<AuthKeyOutcome> {
  const keep = plan.current;
  if (plan.action === "reuse" || !view) {
    return keep ? { secret: reuseObserved(keep.secret), keyId: keep.keyId, expiresAt: keep.expiresAt } : {};
  }
  return ensureAuthKey(plan, view, parent, {
    tags: [opts.tag],
    ...REPLICA_KEY_FLAGS,
    ttlSeconds: opts.settings.authKeyTTLSeconds,
    now: opts.now,
    labels: commonLabels(parent, "ingress"),
    stable: true,
  });
}

export interface CleanupOutcome {
  done: boolean;
  deletedNodes: string[];
  expiredKeys: string[];
  /** The first failure (names the operation, never a key). */
  error?: string;
}

/** A key that can still register a node: no expiration recorded, or one in the future (not year 0001). */
function stillValid(key: HsPreAuthKey, now: Date): boolean {
  if (!key.expiration) return true;
  const at = new Date(key.expiration);
  return Number.isNaN(at.getTime()) || at.getTime() > now.getTime();
}

/**
 * Finalize: delete the nodes registered with keys this ingress minted and expire those keys that are
 * still valid (tenancy.ts ownKeyIds: status.preAuthKeyIds, the key Secrets' ids) — never whatever carries
 * the tag, which an admin's node may. The key list is read fresh; the node list from the view (dropped
 * by every node deletion). Idempotent, so a retry after a partial failure finishes the job.
 */
export async function cleanupIngress(
  view: HeadscaleView,
  parent: K8sObject,
  tag: string,
  secretKeyIds: readonly string[],
  granted: { ttlSeconds: number } | undefined,
  now: Date,
): Promise<CleanupOutcome> {
  const [nodes, keys] = await Promise.all([view.nodes(), view.freshPreAuthKeys()]);
  const out: CleanupOutcome = { done: false, deletedNodes: [], expiredKeys: [] };
  if (!nodes.ok) return { ...out, error: nodes.error.message };
  if (!keys.ok) return { ...out, error: keys.error.message };
  const own = ownKeyIds(parent, tag, secretKeyIds, keys.value, granted);
  for (const node of nodesMintedBy(nodes.value, own)) {
    const deleted = await view.deleteNode(node.id);
    // a node already gone (a cached list, another replica) is what we wanted
    const gone = deleted.ok || deleted.error.classification === "notFound" || deleted.error.status === 404;
    if (!gone) return { ...out, error: deleted.error.message };
    out.deletedNodes.push(nodeLabel(node));
  }
  for (const key of keys.value) {
    if (!own.has(key.id) || !stillValid(key, now)) continue;
    const expired = await view.expirePreAuthKey(key.id);
    if (!expired.ok) return { ...out, error: expired.error.message };
    out.expiredKeys.push(key.id);
  }
  return { ...out, done: true };
}
