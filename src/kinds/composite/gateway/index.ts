/**
 * The TailnetGateway kind, wiring only: spec → observe → plan → act → decide → respond (src/pipeline/run.ts),
 * and finalize in the same words (finalize.ts through src/pipeline/finalize.ts). A suspended gateway is scaled to zero and withdrawn from the
 * resource metrics, so no resource alert fires for it.
 */
import { respond, runSync, type Stages } from "../../../pipeline/run.js";
import type { KindModule } from "../../../pipeline/types.js";
import { gatewayRelated } from "../related.js";
import { actGateway, type GatewayOutcome } from "./act.js";
import { decideGateway, decideGatewaySync, type GatewayDecision } from "./decide.js";
import { finalizeGateway } from "./finalize.js";
import { publishGatewayMetrics } from "./metrics.js";
import { type GatewayObservation, invalidObservation, observeGateway } from "./observe.js";
import { type GatewayPlan, planGateway } from "./plan.js";
import { type GatewaySpec, gatewaySpecProblem, readGatewaySpec } from "./spec.js";

const stages: Stages<GatewaySpec, GatewayObservation, GatewayPlan, GatewayOutcome, GatewayDecision> = {
  spec: readGatewaySpec,
  observe: observeGateway,
  plan: (_req, _spec, observed) => planGateway(observed),
  act: actGateway,
  decide: decideGatewaySync,
  publish: (req, decision, _observed, deps) => publishGatewayMetrics(deps.metrics, req.parent, decision.keyExpiresAt),
};

export const gatewayModule: KindModule = {
  hookKind: "gateway",
  customize: (r, d) => gatewayRelated(r.parent, d.config),
  sync: (req, deps) => runSync(stages, req, deps),
  finalize: finalizeGateway,
  specProblem: gatewaySpecProblem,
  // the hook's InvalidSpec answer in the same words: every child kept, withdrawn when suspended
  invalid: (req, message, deps) => {
    const observed = invalidObservation(req, message);
    return respond(req, deps, decideGateway(observed, planGateway(observed), { deleted: [] }));
  },
};
