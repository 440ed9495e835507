/**
 * The Tailnet kind: the operator's connection to one Headscale server and the owner of its policy.
 * sync composes read inputs → observe Headscale → render → policy/check → decide → write (guarded)
 * → fold the outcome back; finalize only drops our children (the live policy is never touched).
 */
import type { ConditionInput } from "../../conditions/condition.js";
import { TailnetCondition as C } from "../../conditions/reasons.js";
import { type Outcome, PROBE_POLICY } from "../../headscale/capabilities.js";
import { withdrawResource } from "../../metrics/resource.js";
import { prettyPolicyText } from "../../policy/render.js";
import { assembleStatus, invalidSpecResult, previousStatus, resourceId } from "../common.js";
import { tailnetRelated } from "../related.js";
import type { FinalizeResult, HookDeps, HookRequest, KindModule, SyncResult } from "../types.js";
import {
  clearFailures,
  pendingFailure,
  recordDrift,
  recordFailure,
  rereadPolicy,
  supersededWrite,
  writePolicy,
} from "./act.js";
import { isDatabaseDown401, NO_CALL, oneLine } from "./conditions.js";
import { decide, foldWrite, liveHash, type TailnetDecision } from "./decide.js";
import { readInputs, tailnetSpecProblem } from "./inputs.js";
import { publishTailnetMetrics, withdrawTailnetMetrics } from "./metrics.js";
import { checkPolicy, type HeadscaleObservations, observeHeadscale } from "./observe.js";
import { renderTailnetPolicy } from "./render.js";

const CONDITION_TYPES = Object.values(C);
/** Memo key of the `{}` probe, used for compatibility when no policy rendered. */
const EMPTY_PROBE_KEY = "probe:{}";

/** Health failures after which a policy/check probe cannot tell anything new (and would only wait). */
function checkPointless(hs: HeadscaleObservations): Outcome<void> | undefined {
  const h = hs.health;
  return !h.ok && (h.error.kind === "transport" || h.error.kind === "unauthorized" || isDatabaseDown401(h.error))
    ? h
    : undefined;
}

async function sync(req: HookRequest, deps: HookDeps): Promise<SyncResult> {
  const problem = tailnetSpecProblem(req.parent);
  if (problem) return invalid(req, problem, deps);
  const now = deps.now();
  const inputs = readInputs(req.parent, req.related);
  const name = inputs.name;
  const view = inputs.connection.ok ? deps.views.view(inputs.connection.conn) : null;
  const hs = view ? await observeHeadscale(view) : null;
  const nodesUnavailable = !hs ? NO_CALL : hs.nodes.ok ? "" : oneLine(hs.nodes.error.message);
  const render = renderTailnetPolicy(inputs, hs?.nodes.ok ? hs.nodes.value : null, nodesUnavailable);

  let check: Outcome<void> | undefined;
  if (view && hs) {
    check =
      checkPointless(hs) ??
      (render.ok
        ? await checkPolicy(view, render.candidate.hash, () => prettyPolicyText(render.candidate.policy), now)
        : await checkPolicy(view, EMPTY_PROBE_KEY, () => PROBE_POLICY, now));
  }
  const pending = view && render.ok ? pendingFailure(view, name, render.candidate.hash) : undefined;
  const plan = (observed: HeadscaleObservations | null) =>
    decide({
      parent: req.parent,
      children: req.children,
      inputs,
      render,
      observed: { hs: observed, check, pendingFailure: pending },
      operatorNamespace: deps.config.operatorNamespace,
      now,
    });
  let decision: TailnetDecision = plan(hs);

  // Re-plan with the live policy read fresh just before a PUT (docs/architecture.md "Policy writes from several
  // replicas"): another replica may have written this very render already (then this is InSync, no PUT), or a
  // newer one (then this sync's inputs are older: no PUT of a stale render over it).
  if (view && hs && decision.write) {
    const base = liveHash(hs) ?? null;
    const fresh = { ...hs, policy: await rereadPolicy(view) };
    const moved = fresh.policy.ok ? (liveHash(fresh) ?? null) : base;
    decision = plan(fresh);
    if (decision.write && moved !== base) decision = supersededWrite(decision, base, moved);
  }

  const write = decision.write;
  if (view && write) {
    const outcome = await writePolicy(view, write);
    decision = foldWrite(decision, outcome, now);
    if (outcome.ok) {
      clearFailures(view, name);
      deps.log.info({ tailnet: name, hash: write.hash, drift: !!write.drift }, "Headscale policy written");
      await recordDrift(deps.events, req.parent, write);
    } else {
      const e = outcome.error;
      const rejected =
        e.classification === "policyInvalid" || e.classification === "policyFileMode" || e.status === 400;
      deps.metrics.policyApplyErrors.inc({ tailnet: name, reason: rejected ? "rejected" : "transport" });
      deps.log.warn({ tailnet: name, hash: write.hash, error: e.message }, "Headscale policy write failed");
      const applied = decision.conditions.find((c) => c.type === C.PolicyApplied) as ConditionInput;
      decision.resyncAfterSeconds = recordFailure(view, name, write.hash, applied, now);
    }
  }

  publishTailnetMetrics(deps.metrics, {
    tailnet: name,
    mode: inputs.settings.policyMode,
    status: decision.status,
    nodes: hs?.nodes,
    apiKeys: hs?.apiKeys,
    apiKey: inputs.connection.ok ? inputs.connection.conn.apiKey : undefined,
  });
  return {
    status: assembleStatus(req, deps, decision.conditions, { ...decision.status }),
    children: decision.children,
    ...(decision.resyncAfterSeconds !== undefined ? { resyncAfterSeconds: decision.resyncAfterSeconds } : {}),
  };
}

/** Deleting a Tailnet never rewrites or empties the live policy: it only drops our children. */
async function finalize(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  withdrawTailnetMetrics(deps.metrics, req.parent.metadata.name);
  withdrawResource(deps.metrics, resourceId(req.parent));
  const { conditions, observedGeneration: _g, ...fields } = previousStatus(req.parent);
  const kept = (Array.isArray(conditions) ? (conditions as ConditionInput[]) : []).filter(
    (c) => typeof c?.type === "string" && typeof c.status === "string",
  );
  return {
    status: assembleStatus(req, deps, kept, fields, { publish: false }),
    children: [],
    finalized: true,
  };
}

/** PolicyRendered=False/InvalidSpec naming the field; children and the rest of the status unchanged. */
function invalid(req: HookRequest, message: string, deps: HookDeps): SyncResult {
  return invalidSpecResult(req, deps, C.PolicyRendered, CONDITION_TYPES, message);
}

export const tailnetModule: KindModule = {
  hookKind: "tailnet",
  customize: (req) => tailnetRelated(req.parent),
  sync,
  finalize,
  invalid,
  // The Tailnet reads the spec of every workload object and, of gateways, status.dnsServiceIP
  // (inputs.ts readInputs); no other workload status. test/server/hooks.test.ts holds it to that.
  unreadRelatedStatus: [
    "TailnetEgress.tailnet.internal/v1alpha1",
    "TailnetIngress.tailnet.internal/v1alpha1",
    "TailnetSite.tailnet.internal/v1alpha1",
  ],
};
