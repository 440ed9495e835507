/**
 * Ingresses of the IngressClass `tailnet` (issue 26): a DecoratorController over every
 * networking.k8s.io/v1 Ingress (decoratorcontrollers/ingress-class.yaml). A DecoratorController selects
 * by labels and annotations only, and the class is a spec field, so it selects all Ingresses and the
 * hook tells ours from the rest; it has no finalize hook, because with one Metacontroller puts its
 * finalizer on every selected object (pkg/controller/common/finalizer/finalizer.go SyncObject) — on
 * Ingresses of every class. The attachment carries the Ingress as controller owner, so deleting the
 * Ingress garbage-collects it and its own finalize cleans Headscale (docs/ingress-class.md).
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { Stages } from "../../../pipeline/run.js";
import type { HookDeps, RelatedRule } from "../../../pipeline/types.js";
import { type ExposedOutcome, recordExposed } from "../exposed.js";
import { relatedAll, runDecorator } from "../hook.js";
import type { DecoratorFinalizeResult, DecoratorModule, DecoratorRequest, DecoratorResult } from "../module.js";
import { decideIngressClass, type IngressClassDecision } from "./decide.js";
import { type IngressClassObservation, observeIngressClass } from "./observe.js";
import { type IngressClassPlan, planIngressClass } from "./plan.js";

const customize = (): RelatedRule[] => [
  relatedAll("networking.k8s.io/v1", "ingressclasses"),
  relatedAll(API_VERSION, "tailnets"),
  relatedAll(API_VERSION, "tailnetingresses"),
  relatedAll("v1", "services"),
];

const stages: Stages<undefined, IngressClassObservation, IngressClassPlan, ExposedOutcome, IngressClassDecision> = {
  spec: () => undefined,
  observe: (req) => observeIngressClass(req),
  plan: (_req, _spec, observed) => planIngressClass(observed),
  // an Ingress of another class gets no Event (its plan has no condition)
  act: (_req, _spec, observed, plan, deps) =>
    recordExposed(observed.ingress, observed.previousState, plan.exposed, "tailnet ingress", deps),
  decide: ({ plan }) => decideIngressClass(plan),
};

async function sync(req: DecoratorRequest, deps: HookDeps): Promise<DecoratorResult> {
  const d = await runDecorator(stages, req, deps);
  return { labels: d.labels, annotations: d.annotations, attachments: d.children, status: d.status };
}

/** Never called by the shipped controller (no finalize hook); answers as a sync that releases everything. */
async function finalize(req: DecoratorRequest): Promise<DecoratorFinalizeResult> {
  return {
    labels: {},
    annotations: {},
    attachments: [],
    status: null,
    finalized: Object.keys(req.attachments).every((k) => Object.keys(req.attachments[k] ?? {}).length === 0),
  };
}

export const ingressClassModule: DecoratorModule = {
  name: "ingress-class",
  object: { apiVersion: "networking.k8s.io/v1", kind: "Ingress" },
  customize,
  sync,
  finalize: (req) => finalize(req),
};
