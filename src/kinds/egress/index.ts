/**
 * The egress kind: observe (Headscale view + agent scrapes) → act (the pre-auth key) → decide
 * (pure) → respond. The hook route knows none of this; it only calls the module.
 */
import { EgressCondition } from "../../conditions/reasons.js";
import { objectsOf } from "../../k8s/objects.js";
import { assembleStatus, invalidSpecResult } from "../common.js";
import { egressRelated } from "../related.js";
import { logSuperseded, removeSuperseded } from "../shared/superseded.js";
import { effectiveTag, resolveWorkload } from "../shared/workload.js";
import type { HookDeps, HookRequest, KindModule, SyncResult } from "../types.js";
import { actAuthKey } from "./act.js";
import { egressReplicas } from "./children.js";
import { decideEgress, decideWithoutTailnet, type EgressDecision } from "./decide.js";
import { finalizeEgress } from "./finalize.js";
import { planEgressKey } from "./keys.js";
import { publishEgressMetrics } from "./metrics.js";
import { observeEgress } from "./observe.js";

const CONDITION_TYPES = Object.values(EgressCondition);

function respond(req: HookRequest, deps: HookDeps, d: EgressDecision): SyncResult {
  publishEgressMetrics(deps.metrics, req.parent, d.metrics);
  return {
    status: assembleStatus(req, deps, d.conditions, d.fields),
    children: d.children,
    ...(d.resyncAfterSeconds !== undefined ? { resyncAfterSeconds: d.resyncAfterSeconds } : {}),
  };
}

export async function syncEgress(req: HookRequest, deps: HookDeps): Promise<SyncResult> {
  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok) {
    const { reason, message, settings } = ctx;
    return respond(
      req,
      deps,
      decideWithoutTailnet({
        parent: req.parent,
        children: req.children,
        related: req.related,
        reason,
        message,
        settings,
      }),
    );
  }
  const now = deps.now();
  const view = deps.views.view(ctx.conn);
  const observed = await observeEgress(req, deps, view);
  const tag = effectiveTag(req.parent, ctx.settings.tagPrefix);
  const replicas = egressReplicas(req.parent);
  const superseded = await removeSuperseded(view, observed.nodes, { tag, replicas, now });
  logSuperseded(deps, `${req.parent.metadata.namespace}/${req.parent.metadata.name}`, superseded);
  const reads = { ...observed, nodes: superseded.nodes };
  const keyPlan = planEgressKey({
    secrets: objectsOf(req.children, "v1", "Secret"),
    now,
    keys: reads.keys,
    nodes: reads.nodes,
    tag,
    replicas,
  });
  const authKey = await actAuthKey(
    keyPlan,
    view,
    reads,
    { parent: req.parent, tag, replicas, ttlSeconds: ctx.settings.authKeyTTLSeconds, now },
    deps,
  );
  const decision = decideEgress({
    parent: req.parent,
    children: req.children,
    related: req.related,
    config: deps.config,
    settings: ctx.settings,
    observations: { policy: reads.policy, nodes: reads.nodes, agents: reads.agents, authKey },
    ca: ctx.conn.ca,
    now,
  });
  return respond(req, deps, decision);
}

export const egressModule: KindModule = {
  hookKind: "egress",
  customize: (r, d) => egressRelated(r.parent, d.config),
  sync: syncEgress,
  finalize: finalizeEgress,
  invalid: (req, message, deps) => invalidSpecResult(req, deps, EgressCondition.Ready, CONDITION_TYPES, message),
};
