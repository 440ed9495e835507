/**
 * The Tailnet kind: the operator's connection to one Headscale server and the owner of its policy.
 * sync runs the one shape (src/pipeline/run.ts): spec → observe (related, Headscale, render, policy/check)
 * → plan (the guarded write) → act (re-read, re-plan, PUT) → decide (fold the outcome) → respond;
 * finalize only drops our children (the live policy is never touched).
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { runFinalize } from "../../../pipeline/finalize.js";
import { runSync, type Stages } from "../../../pipeline/run.js";
import { assembleStatus, invalidSpecResult, previousStatus } from "../../../pipeline/status.js";
import type { FinalizeResult, HookDeps, HookRequest, KindModule } from "../../../pipeline/types.js";
import { tailnetRelated } from "../related.js";
import { actTailnet, type TailnetOutcome } from "./act.js";
import { tailnetConditions } from "./conditions.js";
import { decideTailnet, type TailnetDecision } from "./decide.js";
import { publishTailnetMetrics, withdrawTailnetMetrics } from "./metrics.js";
import { memoSlot, observeTailnet, type TailnetObservation } from "./observe.js";
import { planTailnet, type TailnetPlan } from "./plan.js";
import { ROTATION } from "./rotation.js";
import { readTailnetSpec, type TailnetSpec, tailnetSpecProblem } from "./spec.js";

/** ApiKeyRotation is a condition of a Tailnet only while its spec enables the rotation. */
const conditionTypes = (parent: K8sObject) =>
  readTailnetSpec(parent).apiKeyRotation
    ? tailnetConditions.types
    : tailnetConditions.types.filter((t) => t !== ROTATION);

/** The stages for one server: decide reads the server's compose memo (deps.composeMemo), never anything else of deps. */
const stages = (
  deps: HookDeps,
): Stages<TailnetSpec, TailnetObservation, TailnetPlan, TailnetOutcome, TailnetDecision> => ({
  spec: readTailnetSpec,
  observe: observeTailnet,
  plan: (req, _spec, observed, deps) =>
    planTailnet({ parent: req.parent, observed, operatorNamespace: deps.config.operatorNamespace, now: deps.now() }),
  act: actTailnet,
  decide: ({ req, observed, plan, outcome, config, now }) =>
    decideTailnet({
      parent: req.parent,
      children: req.children,
      observed,
      plan,
      outcome,
      operatorNamespace: config.operatorNamespace,
      now,
      memo: memoSlot(req, deps),
    }),
  publish: (_req, decision, observed, deps) =>
    publishTailnetMetrics(deps.metrics, {
      tailnet: observed.inputs.name,
      mode: observed.inputs.settings.policyMode,
      status: decision.fields,
      nodes: observed.hs?.nodes,
      apiKeys: observed.hs?.apiKeys,
      apiKey: observed.inputs.connection.ok ? observed.inputs.connection.conn.apiKey : undefined,
    }),
});

/** Deleting a Tailnet never rewrites or empties the live policy: it only drops our children. */
function finalize(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  return runFinalize(req, deps, {
    cleanup: async () => ({ done: true }),
    // Not `respond`: a deleted Tailnet's conditions are not published as metrics again.
    status: () => keptStatus(req, deps),
    waiting: () => undefined,
    released: () => {
      withdrawTailnetMetrics(deps.metrics, req.parent.metadata.name);
      if (req.parent.metadata.uid) deps.composeMemo.forget(req.parent.metadata.uid);
    },
  });
}

/** The previous status, its conditions unchanged. */
function keptStatus(req: HookRequest, deps: HookDeps): Record<string, unknown> {
  const { conditions, observedGeneration: _g, ...fields } = previousStatus(req.parent);
  const kept = (Array.isArray(conditions) ? (conditions as ConditionInput[]) : []).filter(
    (c) => typeof c?.type === "string" && typeof c.status === "string",
  );
  return assembleStatus(req, deps, kept, fields, { publish: false });
}

export const tailnetModule: KindModule = {
  hookKind: "tailnet",
  customize: (req) => tailnetRelated(req.parent),
  sync: (req, deps) => runSync(stages(deps), req, deps),
  finalize,
  specProblem: tailnetSpecProblem,
  /** PolicyRendered=False/InvalidSpec naming the field; children and the rest of the status unchanged. */
  invalid: (req, message, deps) => invalidSpecResult(req, deps, "PolicyRendered", conditionTypes(req.parent), message),
  // The Tailnet reads the spec of every workload object and of their status only: status.tag (an object
  // keeps the tag an earlier version derived for it: tenancy.ts objectDerivedTag), status.preAuthKeyIds
  // (the keys it minted: tenancy.ts tagTakenFromTailnet), gateways' status.dnsServiceIP (inputs.ts
  // inputsOf); no site status (sites record no tag). Conditions, most of a status, are never parsed.
  // test/server/hooks.test.ts holds it to that.
  relatedStatusReads: {
    "TailnetEgress.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds"],
    "TailnetIngress.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds"],
    "TailnetGateway.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds", "dnsServiceIP"],
    "TailnetSite.tailnet.internal/v1alpha1": [],
  },
};
