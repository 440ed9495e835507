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
import { runSync, type Stages } from "../../../pipeline/run.js";
import type { HookDeps, HookRequest, RelatedRule } from "../../../pipeline/types.js";
import type { DecoratorFinalizeResult, DecoratorModule, DecoratorRequest, DecoratorResult } from "../module.js";
import { actIngressClass, type IngressClassOutcome } from "./act.js";
import { decideIngressClass, type IngressClassDecision, type IngressClassPlan, planIngressClass } from "./decide.js";
import { type IngressClassObservation, observeIngressClass } from "./observe.js";

const all = (apiVersion: string, resource: string): RelatedRule => ({ apiVersion, resource, labelSelector: {} });

/** Everything, never what the Ingress names: the answer is cached per uid+generation (customize/manager.go). */
const customize = (): RelatedRule[] => [
  all("networking.k8s.io/v1", "ingressclasses"),
  all(API_VERSION, "tailnets"),
  all(API_VERSION, "tailnetingresses"),
  all("v1", "services"),
];

const asHookRequest = (req: DecoratorRequest): HookRequest => ({
  controller: req.controller,
  parent: req.object,
  children: req.attachments,
  related: req.related,
  finalizing: req.finalizing,
});

const stages: Stages<undefined, IngressClassObservation, IngressClassPlan, IngressClassOutcome, IngressClassDecision> =
  {
    spec: () => undefined,
    observe: (req) => observeIngressClass(req),
    plan: (_req, _spec, observed) => planIngressClass(observed),
    act: (_req, plan, observed, deps) => actIngressClass(plan, observed, deps),
    decide: (_req, _spec, _observed, plan) => decideIngressClass(plan),
  };

async function sync(req: DecoratorRequest, deps: HookDeps): Promise<DecoratorResult> {
  const d = await runSync(stages, asHookRequest(req), deps, (_req, _deps, decision) => decision);
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
