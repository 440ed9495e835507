/**
 * Annotated Services (issue 19 item 1): two DecoratorControllers over core v1 Services
 * (decoratorcontrollers/), wiring only. `service-expose` selects `tailnet.internal/expose: "true"` and
 * attaches a TailnetIngress; `service-target` selects `tailnet.internal/target` and attaches a
 * TailnetEgress. sync: spec → observe → plan → act → decide through runSync, answered with the
 * decision (labels, annotations, attachments) instead of a status; finalize (the annotation
 * removed, or the Service deleted) lists no attachment and clears what sync wrote back, and answers
 * `finalized: true` once the attachment is gone (the TailnetIngress/TailnetEgress finalize cleans
 * Headscale before it goes).
 *
 * `service-loadbalancer` (issue 26) selects every Service — Metacontroller selects by labels and
 * annotations only, and a class is a spec field — and exposes a LoadBalancer of our class like the
 * annotation does, answering its `status.loadBalancer` too. It declares no finalize hook, so
 * Metacontroller adds no finalizer, and for any other Service it answers nothing: no label,
 * annotation, status or attachment (docs/services.md "LoadBalancer Services"). Which of them answers
 * for a Service is owner.ts serviceOwner's call.
 */
import { API_VERSION } from "../../../api/schemas.js";
// while the attachment is being deleted (its own finalize may wait on Headscale), look again
import { FINALIZE_RESYNC_SECONDS } from "../../../pipeline/finalize.js";
import type { Stages } from "../../../pipeline/run.js";
import type { HookDeps, RelatedRule } from "../../../pipeline/types.js";
import { type ExposedOutcome, recordExposed } from "../exposed.js";
import { asHookRequest, relatedAll, runDecorator } from "../hook.js";
import type { DecoratorFinalizeResult, DecoratorModule, DecoratorRequest, DecoratorResult } from "../module.js";
import type { Role } from "./annotations.js";
import { decideLoadBalancer, decideService, decideServiceFinalize, type ServiceDecision } from "./decide.js";
import { leftAlone, readLoadBalancerSpec } from "./loadbalancer.js";
import { observeService, type ServiceObservation } from "./observe.js";
import { type ServiceOwner, serviceOwner } from "./owner.js";
import { planService, type ServicePlan } from "./plan.js";
import { type ReadSpec, readServiceSpec } from "./spec.js";

function customize(role: Role): RelatedRule[] {
  // expose also reads every Service: one annotated in the same apply may claim our hostname
  // before either attachment exists (decide.ts olderRival).
  if (role === "target") return [relatedAll(API_VERSION, "tailnets"), relatedAll(API_VERSION, "tailnetegresses")];
  return [
    relatedAll(API_VERSION, "tailnets"),
    relatedAll(API_VERSION, "tailnetingresses"),
    relatedAll("v1", "services"),
  ];
}

const act = (role: Role, plan: ServicePlan, observed: ServiceObservation, deps: HookDeps) =>
  recordExposed(
    observed.service,
    observed.previousState,
    plan.exposed,
    role === "expose" ? "tailnet exposure" : "tailnet egress",
    deps,
  );

function stages(role: Role): Stages<ReadSpec, ServiceObservation, ServicePlan, ExposedOutcome, ServiceDecision> {
  return {
    spec: (parent) => readServiceSpec(parent, role),
    observe: (req) => observeService(req, role),
    plan: (_req, spec, observed) => planService(spec, observed),
    act: (_req, _spec, observed, plan, deps) => act(role, plan, observed, deps),
    decide: ({ plan }) => decideService(role, plan),
  };
}

const defaultClass = (deps: HookDeps) => deps.config.services?.defaultLoadBalancerClass ?? false;
const ownerOf = (req: DecoratorRequest, deps: HookDeps): ServiceOwner => serviceOwner(req.object, defaultClass(deps));

async function sync(role: Role, req: DecoratorRequest, deps: HookDeps): Promise<DecoratorResult> {
  // not ours to answer (serviceOwner): no key, no attachment
  if (ownerOf(req, deps) !== "annotations") return { labels: {}, annotations: {}, attachments: [] };
  // The answer is the decision itself: labels, annotations, attachments — never a status.
  const d = await runDecorator(stages(role), req, deps);
  return { labels: d.labels, annotations: d.annotations, attachments: d.children };
}

async function finalize(role: Role, req: DecoratorRequest, deps: HookDeps): Promise<DecoratorFinalizeResult> {
  const observed = await observeService(asHookRequest(req), role);
  // not ours to answer (serviceOwner): the state keys are service-loadbalancer's, only our own attachment goes
  const d =
    ownerOf(req, deps) !== "annotations"
      ? { labels: {}, annotations: {}, attachments: [], finalized: observed.attachments.length === 0 }
      : decideServiceFinalize(role, observed);
  return { ...d, ...(d.finalized ? {} : { resyncAfterSeconds: FINALIZE_RESYNC_SECONDS }) };
}

function serviceModule(role: Role): DecoratorModule {
  return {
    name: `service-${role}`,
    object: { apiVersion: "v1", kind: "Service" },
    customize: () => customize(role),
    sync: (req, deps) => sync(role, req, deps),
    finalize: (req, deps) => finalize(role, req, deps),
  };
}

export const serviceExposeModule = serviceModule("expose");
export const serviceTargetModule = serviceModule("target");

function loadBalancerStages(
  deps: HookDeps,
): Stages<ReturnType<typeof readLoadBalancerSpec>, ServiceObservation, ServicePlan, ExposedOutcome, ServiceDecision> {
  return {
    spec: (parent) => readLoadBalancerSpec(parent),
    observe: (req) => observeService(req, "expose", defaultClass(deps)),
    plan: (_req, spec, observed) => planService(spec, observed),
    act: (_req, _spec, observed, plan, d) => act("expose", plan, observed, d),
    decide: ({ observed, plan }) => decideLoadBalancer(plan, observed),
  };
}

/** Every Service comes here; only a LoadBalancer of our class is answered with more than nothing. */
export const serviceLoadBalancerModule: DecoratorModule = {
  name: "service-loadbalancer",
  object: { apiVersion: "v1", kind: "Service" },
  // A type or class change bumps the generation, so the cached answer follows it. Classless
  // LoadBalancers ask too, whatever services.defaultLoadBalancerClass says: the answer is cached
  // (customize/manager.go, 20 min) and must not hide the Tailnets once the setting is turned on.
  customize: (req) => (serviceOwner(req.object, true) === "loadbalancer" ? customize("expose") : []),
  async sync(req, deps) {
    if (ownerOf(req, deps) !== "loadbalancer") return { ...leftAlone(req.object), attachments: [] };
    const d = await runDecorator(loadBalancerStages(deps), req, deps);
    return {
      labels: d.labels,
      annotations: d.annotations,
      attachments: d.children,
      ...(d.status ? { status: d.status } : {}),
      // no resyncPeriodSeconds on this controller (it would resync every Service): ours ask for it
      resyncAfterSeconds: deps.config.hooks.resyncSeconds,
    };
  },
};

/** The DecoratorController kinds by hook path segment. */
export const decoratorModules: ReadonlyMap<string, DecoratorModule> = new Map([
  [serviceExposeModule.name, serviceExposeModule],
  [serviceTargetModule.name, serviceTargetModule],
  [serviceLoadBalancerModule.name, serviceLoadBalancerModule],
]);
