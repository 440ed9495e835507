/**
 * The TailnetGateway kind, wiring only (src/pipeline/run.ts): spec → observe → plan → act → decide →
 * respond, for sync and finalize alike. A suspended gateway is scaled to zero and withdrawn from the
 * resource metrics, so no resource alert fires for it.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { respond, runSync, type Stages } from "../../../pipeline/run.js";
import type { FinalizeResult, HookDeps, HookRequest, KindModule } from "../../../pipeline/types.js";
import { gatewayRelated } from "../related.js";
import { actGateway, type GatewayOutcome } from "./act.js";
import { decideGateway, decideGatewaySync, type GatewayDecision } from "./decide.js";
import {
  actGatewayCleanup,
  decideGatewayCleanup,
  logCleanup,
  observeGatewayCleanup,
  planGatewayCleanup,
} from "./finalize.js";
import { type GatewayObservation, invalidObservation, observeGateway } from "./observe.js";
import { type GatewayPlan, planGateway } from "./plan.js";
import { type GatewaySpec, gatewaySpecProblem, readGatewaySpec } from "./spec.js";

const metricId = (parent: K8sObject) => ({
  kind: parent.kind,
  namespace: parent.metadata.namespace ?? "",
  name: parent.metadata.name,
});

const stages: Stages<GatewaySpec, GatewayObservation, GatewayPlan, GatewayOutcome, GatewayDecision> = {
  spec: readGatewaySpec,
  observe: observeGateway,
  plan: (_req, _spec, observed) => planGateway(observed),
  act: actGateway,
  decide: decideGatewaySync,
  publish: (req, decision, _observed, deps) => {
    const expiry = decision.keyExpiresAt;
    if (expiry) deps.metrics.authKeyExpiry.set(metricId(req.parent), Math.floor(expiry.getTime() / 1000));
  },
};

async function finalize(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const observed = await observeGatewayCleanup(req, deps);
  const plan = planGatewayCleanup(observed);
  const view = observed.reachable ? deps.views.view(observed.conn) : undefined;
  const outcome = await actGatewayCleanup(view, plan);
  const decision = decideGatewayCleanup(req.parent, req.children, outcome);
  deps.metrics.authKeyExpiry.remove(metricId(req.parent));
  logCleanup(req.parent, decision, deps.log);
  return { ...respond(req, deps, decision), finalized: decision.finalized };
}

export const gatewayModule: KindModule = {
  hookKind: "gateway",
  customize: (r, d) => gatewayRelated(r.parent, d.config),
  sync: (req, deps) => runSync(stages, req, deps),
  finalize,
  specProblem: gatewaySpecProblem,
  // the hook's InvalidSpec answer in the same words: every child kept, withdrawn when suspended
  invalid: (req, message, deps) => {
    const observed = invalidObservation(req, message);
    return respond(req, deps, decideGateway(observed, planGateway(observed), { deleted: [] }));
  },
};
