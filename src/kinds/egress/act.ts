/**
 * The egress's Headscale writes, each guarded: a pre-auth key is created only when Headscale
 * could be read this round (a failed observation never writes), and the outcome folds back into
 * status. Finalize expires the egress's keys before deleting its nodes, so a pod still running
 * cannot register again in between.
 */
import type { HeadscaleError } from "../../headscale/errors.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { commonLabels } from "../../k8s/labels.js";
import { type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { AGENT_KEY_FLAGS, type AuthKeyOutcome, ensureAuthKey } from "../shared/authkey.js";
import type { HookDeps } from "../types.js";
import type { CleanupPlan } from "./finalize.js";
import type { EgressKeyPlan } from "./keys.js";
import type { EgressReads } from "./observe.js";

export interface AuthKeyActInputs {
  parent: K8sObject;
  tag: string;
  replicas: number;
  ttlSeconds: number;
  now: Date;
}

/** Reuse, create or (when Headscale was not readable) keep the key; never drops the current Secret. */
export async function actAuthKey(
  keyPlan: EgressKeyPlan,
  view: HeadscaleView,
  reads: Pick<EgressReads, "policy" | "nodes">,
  inputs: AuthKeyActInputs,
  deps: Pick<HookDeps, "log">,
): Promise<AuthKeyOutcome> {
  const { plan } = keyPlan;
  if (plan.action === "create") {
    // the key list only refines the plan (keys.ts); without it the plan rests on the Secrets alone
    const failed = [reads.policy, reads.nodes].find((o) => !o.ok) as { error: HeadscaleError } | undefined;
    if (failed) {
      const current = plan.current;
      return {
        secret: current ? reuseObserved(current.secret) : undefined,
        keyId: current?.keyId,
        expiresAt: current?.expiresAt,
        error: `not created while Headscale cannot be read (${failed.error.message})`,
      };
    }
  }
  const outcome = await ensureAuthKey(plan, view.client, inputs.parent, {
    tags: [inputs.tag],
    ...AGENT_KEY_FLAGS,
    ttlSeconds: inputs.ttlSeconds,
    now: inputs.now,
    labels: commonLabels(inputs.parent, "egress"),
  });
  if (plan.action === "create") {
    view.invalidate("preAuthKeys");
    const who = `${inputs.parent.metadata.namespace}/${inputs.parent.metadata.name}`;
    const why = keyPlan.refresh ?? plan.why;
    if (outcome.error) deps.log.warn({ egress: who, why, error: outcome.error }, "pre-auth key not created");
    else deps.log.info({ egress: who, why, keyId: outcome.keyId }, "pre-auth key created");
  }
  return outcome;
}

/** Carries out a cleanup plan; returns the failures (named by operation, never by secret). */
export async function actCleanup(plan: CleanupPlan, view: HeadscaleView): Promise<string[]> {
  const errors: string[] = [];
  const attempt = async (op: () => Promise<unknown>) => {
    try {
      await op();
    } catch (e) {
      errors.push((e as Error).message);
    }
  };
  for (const id of plan.expireKeys) await attempt(() => view.client.preAuthKeys.expire(id));
  for (const node of plan.deleteNodes) await attempt(() => view.client.nodes.delete(node.id));
  if (plan.expireKeys.length) view.invalidate("preAuthKeys");
  if (plan.deleteNodes.length) view.invalidate("nodes");
  return errors;
}
