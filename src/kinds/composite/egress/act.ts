/**
 * The egress's Headscale writes, each guarded and each through the view's write methods (which settle into
 * an Outcome and drop the cached part they changed): the superseded agent nodes are deleted and a pre-auth
 * key is created only as planned, i.e. only from what this sync could read (a failed observation never
 * writes); the outcomes fold back into status. A refused egress (a withdrawn grant) has the keys it minted
 * expired instead. Finalize expires the egress's keys before deleting its nodes, so a pod still running
 * cannot register again in between.
 */

import type { Obs } from "../../../headscale/errors.js";
import type { HsNode } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { commonLabels } from "../../../k8s/labels.js";
import { reuseObserved } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { actReplicaNodes, logReplicaNodes, type ReplicaNodesOutcome } from "../../shared/agent-replicas.js";
import { type AuthKeyOutcome, ensureAuthKey, REPLICA_KEY_FLAGS } from "../../shared/authkey.js";
import { withdrawRefusedKeys } from "../../shared/withdraw.js";
import type { EgressObservation } from "./observe.js";
import type { CleanupPlan, EgressPlan } from "./plan.js";
import type { EgressSpec } from "./spec.js";

export interface EgressOutcome {
  /** The node list decide sees: as read, minus the nodes deleted now (undefined: nothing was read). */
  nodes?: Obs<HsNode[]>;
  /** The pre-auth key after act: reused, freshly created, or missing with the reason. */
  authKey: AuthKeyOutcome;
  /** The replicas' node writes (deleted, released removed replicas, renames). */
  replicaNodes?: ReplicaNodesOutcome;
}

const who = (req: HookRequest) => `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;

export async function actEgress(
  req: HookRequest,
  _spec: EgressSpec,
  observed: EgressObservation,
  plan: EgressPlan,
  deps: HookDeps,
): Promise<EgressOutcome> {
  // a withdrawn grant: the keys it minted are expired (shared/withdraw.ts)
  if (!observed.ok) await withdrawRefusedKeys(req, deps, observed.reason);
  if (!observed.ok || !plan.key) return { authKey: {} };
  const { view } = observed;
  const replicaNodes = plan.replicas ? await actReplicaNodes(view, observed.nodes, plan.replicas) : undefined;
  if (replicaNodes) logReplicaNodes(deps, who(req), replicaNodes);
  const superseded = { nodes: replicaNodes?.nodes ?? observed.nodes };
  // publish first, expire after: these keys are older than the one the observed Secret is proven to hold
  for (const id of plan.expireKeys) {
    const expired = await view.expirePreAuthKey(id);
    if (!expired.ok) deps.log.warn({ egress: who(req), keyId: id, error: expired.error.message }, "key not expired");
  }
  const { plan: key } = plan.key;
  if (plan.keyBlocked && key.action === "create") {
    // never drops the current Secret
    const current = key.current;
    return {
      nodes: superseded.nodes,
      ...(replicaNodes ? { replicaNodes } : {}),
      authKey: {
        secret: current ? reuseObserved(current.secret) : undefined,
        keyId: current?.keyId,
        expiresAt: current?.expiresAt,
        error: plan.keyBlocked,
      },
    };
  }
  const authKey = await ensureAuthKey(key, view, req.parent, {
    tags: [observed.tag],
    ...REPLICA_KEY_FLAGS,
    ttlSeconds: observed.settings.authKeyTTLSeconds,
    now: observed.now,
    labels: commonLabels(req.parent, "egress"),
    stable: true,
  });
  if (key.action === "create") {
    const why = plan.key.refresh ?? key.why;
    if (authKey.error) deps.log.warn({ egress: who(req), why, error: authKey.error }, "pre-auth key not created");
    else deps.log.info({ egress: who(req), why, keyId: authKey.keyId }, "pre-auth key created");
  }
  return { nodes: superseded.nodes, authKey, ...(replicaNodes ? { replicaNodes } : {}) };
}

/** Carries out a cleanup plan; returns the failures (named by operation, never by secret). */
export async function actCleanup(plan: CleanupPlan, view: HeadscaleView): Promise<string[]> {
  const errors: string[] = [];
  for (const id of plan.expireKeys) {
    const outcome = await view.expirePreAuthKey(id);
    if (!outcome.ok) errors.push(outcome.error.message);
  }
  for (const node of plan.deleteNodes) {
    const outcome = await view.deleteNode(node.id);
    if (!outcome.ok) errors.push(outcome.error.message);
  }
  return errors;
}
