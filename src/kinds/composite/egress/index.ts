/**
 * The egress kind, wiring only: spec → observe → plan → act → decide → respond (src/pipeline/run.ts).
 * Without a Tailnet or its credentials the same stages run: observe says why, plan wants nothing, act
 * writes nothing, decide keeps every child and names the reason. The hook route knows none of this.
 */

import { EGRESS_REASONS } from "../../../conditions/tables/egress.js";
import { runSync, type Stages } from "../../../pipeline/run.js";
import { invalidSpecResult } from "../../../pipeline/status.js";
import type { KindModule } from "../../../pipeline/types.js";
import { egressRelated } from "../related.js";
import { actEgress, type EgressOutcome } from "./act.js";
import { decideEgressSync, type EgressDecision } from "./decide.js";
import { finalizeEgress } from "./finalize.js";
import { publishEgressMetrics } from "./metrics.js";
import { type EgressObservation, observeEgress } from "./observe.js";
import { type EgressPlan, planEgress } from "./plan.js";
import { type EgressSpec, egressSpecProblem, readEgressSpec } from "./spec.js";

const CONDITION_TYPES = Object.keys(EGRESS_REASONS);

export const egressStages: Stages<EgressSpec, EgressObservation, EgressPlan, EgressOutcome, EgressDecision> = {
  spec: readEgressSpec,
  observe: (req, spec, deps) => observeEgress(req, spec, deps),
  plan: (req, spec, observed) => planEgress(req.parent, spec, observed),
  act: actEgress,
  decide: decideEgressSync,
  publish: (req, decision, _observed, deps) => publishEgressMetrics(deps.metrics, req.parent, decision.metrics),
};

export const egressModule: KindModule = {
  hookKind: "egress",
  customize: (req, deps) => egressRelated(req.parent, deps.config),
  specProblem: egressSpecProblem,
  sync: (req, deps) => runSync(egressStages, req, deps),
  finalize: finalizeEgress,
  invalid: (req, message, deps) => invalidSpecResult(req, deps, "Ready", CONDITION_TYPES, message),
  // of the workload objects it is sent (node-owners.ts), an egress reads status.tag and status.preAuthKeyIds only
  relatedStatusReads: {
    "TailnetEgress.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds"],
    "TailnetIngress.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds"],
    "TailnetGateway.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds"],
  },
};
