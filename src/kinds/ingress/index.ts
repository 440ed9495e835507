/**
 * The TailnetIngress kind: cluster Services exposed to the tailnet through an agent node.
 * sync: spec checks → observe (Tailnet, Headscale policy + nodes, agent /status, TLS Secrets,
 * Services, other ingresses) → pre-auth key (act) → decide → metrics. finalize: delete the nodes
 * carrying exactly the ingress's tag and expire its keys, then `finalized: true`.
 */
import type { ConditionInput } from "../../conditions/condition.js";
import { IngressCondition } from "../../conditions/reasons.js";
import { withdrawResource } from "../../metrics/resource.js";
import { assembleStatus, invalidSpecResult, previousStatus, resourceId } from "../common.js";
import { ingressRelated } from "../related.js";
import { logSuperseded, removeSuperseded } from "../shared/superseded.js";
import { effectiveTag, resolveWorkload } from "../shared/workload.js";
import type { FinalizeResult, HookDeps, HookRequest, KindModule, SyncResult } from "../types.js";
import { cleanupIngress, settleAuthKey } from "./act.js";
import { decideIngress, planAuthKey, WAIT_RESYNC_SECONDS } from "./decide.js";
import { publishIngressMetrics, withdrawIngressMetrics } from "./metrics.js";
import { observeIngress } from "./observe.js";
import { ingressSpecProblem, readIngressSpec } from "./spec.js";

const CONDITION_TYPES = Object.values(IngressCondition);

function invalid(req: HookRequest, message: string, deps: HookDeps): SyncResult {
  return invalidSpecResult(req, deps, IngressCondition.Ready, CONDITION_TYPES, message);
}

async function syncIngress(req: HookRequest, deps: HookDeps): Promise<SyncResult> {
  const spec = readIngressSpec(req.parent);
  const problem = ingressSpecProblem(spec);
  if (problem) return invalid(req, problem, deps);
  const { input: observed, view } = await observeIngress(req, deps, spec);
  // only from a node list read in this sync, and only for a resolved Tailnet (the tag is known)
  let input = observed;
  if (view && observed.nodes?.ok && observed.tailnet.settings) {
    const tag = effectiveTag(req.parent, observed.tailnet.settings.tagPrefix);
    const superseded = await removeSuperseded(view, observed.nodes, { tag, replicas: 1, now: observed.now });
    logSuperseded(deps, qualified(req), superseded);
    input = { ...observed, nodes: superseded.nodes };
  }
  const { plan, write } = planAuthKey(input);
  const settings = input.tailnet.settings;
  const authKey = settings
    ? await settleAuthKey(plan, write, view, req.parent, {
        tag: effectiveTag(req.parent, settings.tagPrefix),
        ttlSeconds: settings.authKeyTTLSeconds,
        now: input.now,
      })
    : {};
  if (authKey.error) deps.log.warn({ ingress: qualified(req), error: authKey.error }, "pre-auth key not created");
  else if (plan.action === "create" && authKey.keyId && authKey.keyId !== plan.current?.keyId) {
    deps.log.info({ ingress: qualified(req), keyId: authKey.keyId, why: plan.why }, "created pre-auth key");
  }
  const decision = decideIngress({ ...input, authKey });
  publishIngressMetrics(deps.metrics, req.parent, decision.exposes, decision.authKeyExpiresAt);
  const status = assembleStatus(req, deps, decision.conditions, { ...decision.status });
  return {
    status,
    children: decision.children,
    ...(decision.resyncAfterSeconds === undefined ? {} : { resyncAfterSeconds: decision.resyncAfterSeconds }),
  };
}

const qualified = (req: HookRequest) => `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;

/** The previous status, unchanged (finalize reports nothing new and publishes no metric). */
function keptStatus(req: HookRequest, deps: HookDeps): Record<string, unknown> {
  const prev = previousStatus(req.parent);
  const conditions = Array.isArray(prev.conditions) ? (prev.conditions as ConditionInput[]) : [];
  const kept = CONDITION_TYPES.flatMap((type) => {
    const c = conditions.find((x) => x?.type === type);
    return c ? [{ type, status: c.status, reason: c.reason, message: c.message }] : [];
  });
  const { conditions: _c, observedGeneration: _g, ...fields } = prev;
  return assembleStatus(req, deps, kept, fields, { publish: false });
}

/**
 * Deletes the agent (no children) and cleans Headscale. Without a Tailnet or its credentials
 * nothing can be reached: the object is released (its ephemeral node and its keys expire on their
 * own) rather than blocking deletion forever. A Headscale failure retries.
 */
async function finalizeIngress(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const workload = resolveWorkload(req, deps);
  const status = keptStatus(req, deps);
  if (!workload.ok) {
    deps.log.warn(
      { ingress: qualified(req), reason: workload.reason },
      "finalize: Headscale not reachable, nothing cleaned",
    );
    withdrawAll(req, deps);
    return { status, children: [], finalized: true };
  }
  const tag = effectiveTag(req.parent, workload.settings.tagPrefix);
  const outcome = await cleanupIngress(deps.views.view(workload.conn), tag, deps.now());
  if (outcome.deletedNodes.length || outcome.expiredKeys.length) {
    deps.log.info(
      { ingress: qualified(req), nodes: outcome.deletedNodes, keys: outcome.expiredKeys },
      "finalize: deleted nodes and expired keys",
    );
  }
  if (!outcome.done) {
    deps.log.warn({ ingress: qualified(req), error: outcome.error }, "finalize: cleanup failed, retrying");
    return { status, children: [], finalized: false, resyncAfterSeconds: WAIT_RESYNC_SECONDS };
  }
  withdrawAll(req, deps);
  return { status, children: [], finalized: true };
}

function withdrawAll(req: HookRequest, deps: HookDeps): void {
  withdrawResource(deps.metrics, resourceId(req.parent));
  withdrawIngressMetrics(deps.metrics, req.parent);
}

export const ingressModule: KindModule = {
  hookKind: "ingress",
  customize: (req, deps) => ingressRelated(req.parent, deps.config),
  sync: syncIngress,
  finalize: finalizeIngress,
  invalid,
};
