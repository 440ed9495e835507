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
 * annotation, status or attachment (docs/services.md "LoadBalancer Services").
 */
import { API_VERSION } from "../../../api/schemas.js";
import { runSync, type Stages } from "../../../pipeline/run.js";
import type { HookDeps, HookRequest, RelatedRule } from "../../../pipeline/types.js";
import type { DecoratorFinalizeResult, DecoratorModule, DecoratorRequest, DecoratorResult } from "../module.js";
import { actService, type ServiceOutcome } from "./act.js";
import { isTailnetLoadBalancer, type Role } from "./annotations.js";
import {
  decideLoadBalancer,
  decideService,
  decideServiceFinalize,
  planService,
  type ServiceDecision,
  type ServicePlan,
} from "./decide.js";
import { leftAlone, readLoadBalancerSpec } from "./loadbalancer.js";
import { observeService, type ServiceObservation } from "./observe.js";
import { type ReadSpec, readServiceSpec } from "./spec.js";

/** While the attachment is being deleted (its own finalize may wait on Headscale), look again. */
export const FINALIZE_RESYNC_SECONDS = 10;

const all = (apiVersion: string, resource: string): RelatedRule => ({ apiVersion, resource, labelSelector: {} });

function customize(role: Role): RelatedRule[] {
  // Everything, never what the annotations name: Metacontroller caches this answer per
  // uid+generation, and an annotation change bumps neither (customize/manager.go).
  // expose also reads every Service: one annotated in the same apply may claim our hostname
  // before either attachment exists (decide.ts olderRival).
  if (role === "target") return [all(API_VERSION, "tailnets"), all(API_VERSION, "tailnetegresses")];
  return [all(API_VERSION, "tailnets"), all(API_VERSION, "tailnetingresses"), all("v1", "services")];
}

/** The decorator request in the pipeline's words: the Service is the parent, its attachments the children. */
const asHookRequest = (req: DecoratorRequest): HookRequest => ({
  controller: req.controller,
  parent: req.object,
  children: req.attachments,
  related: req.related,
  finalizing: req.finalizing,
});

function stages(role: Role): Stages<ReadSpec, ServiceObservation, ServicePlan, ServiceOutcome, ServiceDecision> {
  return {
    spec: (parent) => readServiceSpec(parent, role),
    observe: (req) => observeService(req, role),
    plan: (_req, spec, observed) => planService(spec, observed),
    act: (_req, plan, observed, deps) => actService(role, plan, observed, deps),
    decide: (_req, _spec, _observed, plan) => decideService(role, plan),
  };
}

const defaultClass = (deps: HookDeps) => deps.config.services?.defaultLoadBalancerClass ?? false;

/** The annotation decorators leave a LoadBalancer of our class to service-loadbalancer: no key, no attachment. */
const YIELD: DecoratorFinalizeResult = { labels: {}, annotations: {}, attachments: [], finalized: true };

async function sync(role: Role, req: DecoratorRequest, deps: HookDeps): Promise<DecoratorResult> {
  if (isTailnetLoadBalancer(req.object, defaultClass(deps))) return { labels: {}, annotations: {}, attachments: [] };
  // The answer is the decision itself: labels, annotations, attachments — never a status.
  const d = await runSync(stages(role), asHookRequest(req), deps, (_req, _deps, decision) => decision);
  return { labels: d.labels, annotations: d.annotations, attachments: d.children };
}

async function finalize(role: Role, req: DecoratorRequest, deps: HookDeps): Promise<DecoratorFinalizeResult> {
  const observed = await observeService(asHookRequest(req), role);
  // the state keys are service-loadbalancer's: only wait for our own attachment to go
  const d = isTailnetLoadBalancer(req.object, defaultClass(deps))
    ? { ...YIELD, finalized: observed.attachments.length === 0 }
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
): Stages<ReturnType<typeof readLoadBalancerSpec>, ServiceObservation, ServicePlan, ServiceOutcome, ServiceDecision> {
  return {
    spec: (parent) => readLoadBalancerSpec(parent),
    observe: (req) => observeService(req, "expose", defaultClass(deps)),
    plan: (_req, spec, observed) => planService(spec, observed),
    act: (_req, plan, observed, d) => actService("expose", plan, observed, d),
    decide: (_req, _spec, observed, plan) => decideLoadBalancer(plan, observed),
  };
}

/** Every Service comes here; only a LoadBalancer of our class is answered with more than nothing. */
export const serviceLoadBalancerModule: DecoratorModule = {
  name: "service-loadbalancer",
  object: { apiVersion: "v1", kind: "Service" },
  // A type or class change bumps the generation, so the cached answer follows it. Classless
  // LoadBalancers ask too, whatever services.defaultLoadBalancerClass says: the answer is cached
  // (customize/manager.go, 20 min) and must not hide the Tailnets once the setting is turned on.
  customize: (req) => (isTailnetLoadBalancer(req.object, true) ? customize("expose") : []),
  async sync(req, deps) {
    if (!isTailnetLoadBalancer(req.object, defaultClass(deps))) return { ...leftAlone(req.object), attachments: [] };
    const d = await runSync(loadBalancerStages(deps), asHookRequest(req), deps, (_req, _deps, decision) => decision);
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
