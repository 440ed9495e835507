/**
 * The TailnetIngress kind: cluster Services exposed to the tailnet through agent nodes. Wiring only
 * (src/pipeline/run.ts): spec (spec.ts) → observe (Tailnet, Headscale policy + nodes, agent /status,
 * TLS Secrets, Services, other ingresses) → plan (superseded nodes, pre-auth key) → act (those writes)
 * → decide → respond, metrics published from the decision. finalize: delete the nodes registered with
 * the keys the ingress minted and expire those keys (never another node with its tag), then `finalized: true`.
 */

import { runSync, type Stages } from "../../../pipeline/run.js";
import { invalidSpecResult } from "../../../pipeline/status.js";
import type { HookDeps, HookRequest, KindModule, SyncResult } from "../../../pipeline/types.js";
import { ingressRelated } from "../related.js";
import { actIngress, type IngressOutcome } from "./act.js";
import { ingressConditions } from "./conditions.js";
import { decideIngressSync, type IngressDecision } from "./decide.js";
import { finalizeIngress } from "./finalize.js";
import { publishIngressMetrics } from "./metrics.js";
import { type IngressObservation, observeIngress } from "./observe.js";
import { grantsServedBy } from "./permitted.js";
import { type IngressPlan, planIngress } from "./plan.js";
import { type IngressSpec, ingressSpecProblem, readIngressSpec } from "./spec.js";

const stages: Stages<IngressSpec, IngressObservation, IngressPlan, IngressOutcome, IngressDecision> = {
  spec: readIngressSpec,
  observe: (req, spec, deps) => observeIngress(req, spec, deps),
  plan: (_req, spec, observed) => planIngress(spec, observed.facts),
  act: actIngress,
  decide: decideIngressSync,
  publish: (req, d, _observed, deps) => publishIngressMetrics(deps.metrics, req.parent, d.exposes, d.authKeyExpiresAt),
};

function invalid(req: HookRequest, message: string, deps: HookDeps): SyncResult {
  return invalidSpecResult(req, deps, "Ready", ingressConditions.types, message);
}

export const ingressModule: KindModule = {
  hookKind: "ingress",
  customize: (req, deps) => ingressRelated(req.parent, deps.config, grantsServedBy(req.controller)),
  sync: (req, deps) => runSync(stages, req, deps),
  finalize: finalizeIngress,
  specProblem: ingressSpecProblem,
  invalid,
};
