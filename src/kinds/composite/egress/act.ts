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
import { AGENT_KEY_FLAGS, type AuthKeyOutcome, ensureAuthKey } from "../../shared/authkey.js";
import { deleteSuperseded, logSuperseded } from "../../shared/superseded.js";
import { withdrawRefusedKeys } from "../../shared/withdraw.js";
import type { EgressObservation } from "./observe.js";
import type { CleanupPlan, EgressPlan } from "./plan.js";
import type { EgressSpec } from "./spec.js";

export interface EgressOutcome {
  /** The node list decide sees: as read, minus the nodes deleted now (undefined: nothing was read). */
  nodes?: Obs<HsNode[]>;
  /** The pre-auth key after act: reused, freshly created, or missing with the reason. */
  authKey: AuthKeyOutcome;
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
  const superseded = await deleteSuperseded(view, observed.nodes, plan.deleteNodes);
  logSuperseded(deps, who(req), superseded);
  const { plan: key } = plan.key;
  if (plan.keyBlocked && key.action === "create") {
    // never drops the current Secret
    const current = key.current;
    return {
      nodes: superseded.nodes,
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
    ...AGENT_KEY_FLAGS,
    ttlSeconds: observed.settings.authKeyTTLSeconds,
    now: observed.now,
    labels: commonLabels(req.parent, "egress"),
  });
  if (key.action === "create") {
    const why = plan.key.refresh ?? key.why;
    if (authKey.error) deps.log.warn({ egress: who(req), why, error: authKey.error }, "pre-auth key not created");
    else deps.log.info({ egress: who(req), why, keyId: authKey.keyId }, "pre-auth key created");
  }
  return { nodes: superseded.nodes, authKey };
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
