/**
 * The one shape of every kind's sync (docs/architecture.md "One shape"):
 *
 *   spec → observe → plan → act → decide → respond
 *
 * - `spec`     (spec.ts)    the parent's spec read once, typed; `specProblem` already ran in the hook.
 * - `observe`  (observe.ts) I/O only: the Headscale view (cached), agent scrapes; failures are values.
 * - `plan`     (plan.ts)    pure: which writes are wanted (keys, approvals, deletions, policy).
 * - `act`      (act.ts)     the guarded writes of the plan through the view's write methods; their outcomes.
 * - `decide`   (decide.ts)  pure: one DecideInput (spec + observation + plan + outcome) → children,
 *                           conditions, status fields.
 * - `respond`  (here)       status assembly, metrics, the answer.
 * Finalize runs the same words through src/pipeline/finalize.ts.
 *
 * A kind whose plan needs nothing (no Tailnet, no credentials) still runs every stage: observe returns what
 * it could not see, plan wants nothing, act does nothing, decide says why.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { ConditionInput } from "../conditions/condition.js";
import type { OperatorConfig } from "../config.js";
import type { K8sObject } from "../k8s/objects.js";
import { withdrawResource } from "../metrics/resource.js";
import { assembleStatus, resourceId } from "./status.js";
import type { HookDeps, HookRequest, SyncResult } from "./types.js";

/** What decide returns in every kind. */
export interface Decision {
  children: K8sObject[];
  conditions: readonly ConditionInput[];
  /** Status fields besides conditions and observedGeneration, in their fixed order. */
  fields: Record<string, unknown>;
  resyncAfterSeconds?: number;
  /**
   * The resource is out of the resource metrics (e.g. a suspended gateway): respond withdraws it and publishes no
   * condition metric, so no resource alert fires for it.
   */
  withdrawn?: boolean;
}

/**
 * What decide is handed, in every kind: everything the sync saw and did, and nothing that reaches out
 * (no view, no log, no metrics), so decide stays pure.
 */
export interface DecideInput<Spec, Observation, Plan, Outcome> {
  req: HookRequest;
  spec: Spec;
  observed: Observation;
  plan: Plan;
  outcome: Outcome;
  config: OperatorConfig;
  /** The clock read once, when decide runs. */
  now: Date;
}

/** The stages of one kind; `index.ts` builds one and hands it to `runSync`. */
export interface Stages<Spec, Observation, Plan, Outcome, D extends Decision = Decision> {
  spec(parent: K8sObject): Spec;
  observe(req: HookRequest, spec: Spec, deps: HookDeps): Promise<Observation>;
  plan(req: HookRequest, spec: Spec, observed: Observation, deps: HookDeps): Plan;
  act(req: HookRequest, spec: Spec, observed: Observation, plan: Plan, deps: HookDeps): Promise<Outcome>;
  decide(input: DecideInput<Spec, Observation, Plan, Outcome>): D;
  /** Kind metrics published from the decision (resource condition metrics are published by respond). */
  publish?(req: HookRequest, decision: D, observed: Observation, deps: HookDeps): void;
}

/**
 * Runs the stages and answers with `answer` — `respond` (status and children) for every CompositeController
 * kind; a DecoratorController kind (annotated Services) answers labels and annotations instead, and never a
 * status, so it hands its own.
 */
export function runSync<S, O, P, A, D extends Decision>(
  stages: Stages<S, O, P, A, D>,
  req: HookRequest,
  deps: HookDeps,
): Promise<SyncResult>;
export function runSync<S, O, P, A, D extends Decision, R>(
  stages: Stages<S, O, P, A, D>,
  req: HookRequest,
  deps: HookDeps,
  answer: (req: HookRequest, deps: HookDeps, decision: D) => R,
): Promise<R>;
export async function runSync<S, O, P, A, D extends Decision, R>(
  stages: Stages<S, O, P, A, D>,
  req: HookRequest,
  deps: HookDeps,
  answer?: (req: HookRequest, deps: HookDeps, decision: D) => R,
): Promise<R | SyncResult> {
  const spec = stages.spec(req.parent);
  const observed = await stages.observe(req, spec, deps);
  // Syncs waiting on one shared read (the view's cached lists, a key-list flight) all resume in the same
  // microtask drain; without a turn of the event loop here their plan, decide and respond ran back to back in one
  // tick (issue 36: at 20,000 parents a tick's CPU p99 was 33 ms, the loop's p99 over the 20 ms goal).
  await nextTurn();
  const plan = stages.plan(req, spec, observed, deps);
  const outcome = await stages.act(req, spec, observed, plan, deps);
  await nextTurn();
  const decision = stages.decide({ req, spec, observed, plan, outcome, config: deps.config, now: deps.now() });
  stages.publish?.(req, decision, observed, deps);
  return answer ? answer(req, deps, decision) : respond(req, deps, decision);
}

/** The answer of a sync or finalize: the status assembled from the decision (conditions merged, metrics). */
export function respond(req: HookRequest, deps: HookDeps, d: Decision): SyncResult {
  if (d.withdrawn) withdrawResource(deps.metrics, resourceId(req.parent));
  return {
    status: assembleStatus(req, deps, d.conditions, d.fields, { publish: !d.withdrawn }),
    children: d.children,
    ...(d.resyncAfterSeconds !== undefined ? { resyncAfterSeconds: d.resyncAfterSeconds } : {}),
  };
}
