/**
 * Finalize a TailnetSite: withdraw exactly its route approvals from its advertiser nodes, then
 * `finalized: true` — only once a fresh read shows them gone (see withdraw.ts for what is the
 * site's and for the order: the live policy without the site's autoApprovers first, then the
 * withdrawal, because Headscale re-approves what the live policy still auto-approves on the next
 * reload). The same stages as a sync: observe → plan → act → decide → respond.
 *
 * - No Tailnet or no credentials: Headscale cannot be reached; holding the object would clean
 *   nothing, so it is released (logged).
 * - DryRun or HeadscaleCompatible=False: the operator writes nothing, so nothing is withdrawn
 *   (logged, with the routes left approved).
 * - Headscale not observed, a write failed, or the live policy still auto-approves a route through
 *   this site's own entries: `finalized: false`, Ready=False/Withdrawing saying why, resync.
 */

import { API_VERSION } from "../../../api/schemas.js";
import type { ConditionInput } from "../../../conditions/condition.js";
import type { HsNode } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { type K8sObject, objectsOf } from "../../../k8s/objects.js";
import { type Cleanup, runFinalize } from "../../../pipeline/finalize.js";
import { assembleStatus, resourceId } from "../../../pipeline/status.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { tailnetRefName } from "../../shared/tailnet-ref.js";
import { resolveWorkload, tailnetIncompatible } from "../../shared/workload.js";
import { type WithdrawalOutcome, withdrawSiteRoutes } from "./act.js";
import { type AdvertiserStatus, previousAdvertisers } from "./advertisers.js";
import type { NodesObservation } from "./observe.js";
import {
  finalizeConditions,
  type HeldRoute,
  keptMessage,
  type LiveApprovers,
  liveApprovers,
  planWithdrawal,
  remainingRoutes,
  type Withdrawal,
  type WithdrawalPlan,
  waitingMessage,
} from "./withdraw.js";

/** What a deletion sees: whether the operator may write, and the fresh node list and live policy. */
export type WithdrawalObservation =
  /** Released without writing: Headscale cannot be reached, or the operator writes nothing there. */
  | { state: "released"; level: "warn" | "info"; message: string; logFields: Record<string, unknown> }
  | { state: "unobserved"; message: string }
  | {
      state: "observed";
      view: HeadscaleView;
      sites: readonly K8sObject[];
      nodes: readonly HsNode[];
      live: LiveApprovers;
    };

/** What act did: the withdrawals' outcomes, and the node list read after them (when there were any). */
export interface WithdrawalActOutcome {
  withdrawals: WithdrawalOutcome[];
  after?: NodesObservation;
}

export type WithdrawalDecision =
  | { finalized: true; kept: HeldRoute[]; conditions: ConditionInput[]; fields: { advertisers: AdvertiserStatus[] } }
  | { finalized: false; waiting: string; conditions: ConditionInput[]; fields: { advertisers: AdvertiserStatus[] } };

async function observeWithdrawal(req: HookRequest, deps: HookDeps): Promise<WithdrawalObservation> {
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) {
    return {
      state: "released",
      level: "warn",
      message: `finalized without withdrawing route approvals: ${ctx.message}`,
      logFields: { reason: ctx.reason },
    };
  }
  const writesNothing =
    ctx.settings.policyMode === "DryRun"
      ? `Tailnet ${ctx.settings.name} is in DryRun (spec.policy.mode)`
      : tailnetIncompatible(ctx.tailnet)
        ? `Tailnet ${ctx.settings.name} reports HeadscaleCompatible=False`
        : "";
  if (writesNothing) {
    return {
      state: "released",
      level: "info",
      message: `${writesNothing}: the operator writes nothing, so no route approval is withdrawn (withdraw them with headscale nodes approve-routes once the policy no longer auto-approves them)`,
      logFields: { advertisers: previousAdvertisers(req.parent) },
    };
  }
  const view = deps.views.view(ctx.conn);
  const [nodes, policy] = await Promise.all([view.freshNodes(), view.freshPolicy()]);
  const unobserved = (message: string): WithdrawalObservation => ({
    state: "unobserved",
    message: `withdrawing route approvals: ${message}`,
  });
  if (!nodes.ok) return unobserved(`routes not observed: ${nodes.error.message}`);
  if (!policy.ok) return unobserved(`live policy not observed: ${policy.error.message}`);
  const live = liveApprovers(policy.value?.policy ?? null);
  if (!live.ok) return unobserved(live.message);
  const sites = objectsOf(req.related, API_VERSION, "TailnetSite");
  return { state: "observed", view, sites, nodes: nodes.value, live: live.value };
}

function planSiteWithdrawal(parent: K8sObject, observed: WithdrawalObservation, now: Date): WithdrawalPlan {
  if (observed.state !== "observed") return { withdraw: [], waiting: [], kept: [] };
  return planWithdrawal({ parent, sites: observed.sites, nodes: observed.nodes, live: observed.live, now });
}

async function actWithdrawal(
  req: HookRequest,
  plan: WithdrawalPlan,
  observed: WithdrawalObservation,
  deps: HookDeps,
): Promise<WithdrawalActOutcome> {
  if (observed.state !== "observed") return { withdrawals: [] };
  const withdrawals = await withdrawSiteRoutes(observed.view, plan.withdraw);
  const site = `${req.parent.metadata.namespace ?? ""}/${req.parent.metadata.name}`;
  for (const o of withdrawals) {
    if (o.ok && o.removed.length > 0) deps.log.info({ site, node: o.node, routes: o.removed }, "withdrew routes");
  }
  // finalized only on what Headscale shows now, not on what was asked
  if (plan.withdraw.length === 0 || plan.waiting.length > 0 || withdrawals.some((o) => !o.ok)) return { withdrawals };
  const fresh = await observed.view.nodes();
  return {
    withdrawals,
    after: fresh.ok ? { ok: true, value: fresh.value } : { ok: false, message: fresh.error.message },
  };
}

/** Withdrawals a fresh node list still shows (a node that is gone holds nothing). */
function stillApproved(nodes: readonly HsNode[], withdrawals: readonly Withdrawal[]): Withdrawal[] {
  return withdrawals.filter((w) => {
    const node = nodes.find((n) => n.id === w.nodeId);
    return node !== undefined && remainingRoutes(node.approvedRoutes, w.remove).length !== node.approvedRoutes.length;
  });
}

/** Why the deletion still waits, or "" when the site may go. */
function waitingOn(observed: WithdrawalObservation, plan: WithdrawalPlan, outcome: WithdrawalActOutcome): string {
  if (observed.state === "released") return "";
  if (observed.state === "unobserved") return observed.message;
  const failed = outcome.withdrawals.find((o) => !o.ok);
  if (failed && !failed.ok) return `withdrawing route approvals: on ${failed.node} failed: ${failed.error}`;
  if (plan.waiting.length > 0) return waitingMessage(plan.waiting);
  if (!outcome.after) return "";
  if (!outcome.after.ok) return `withdrawing route approvals: routes not observed: ${outcome.after.message}`;
  const left = stillApproved(outcome.after.value, plan.withdraw);
  if (left.length === 0) return "";
  const text = left.map((w) => `${w.remove.join(", ")} on ${w.node}`).join("; ");
  return `withdrawing route approvals: still approved after the write: ${text}`;
}

export function decideWithdrawal(
  parent: K8sObject,
  observed: WithdrawalObservation,
  plan: WithdrawalPlan,
  outcome: WithdrawalActOutcome,
): WithdrawalDecision {
  const fields = { advertisers: previousAdvertisers(parent) };
  const waiting = waitingOn(observed, plan, outcome);
  if (waiting) return { finalized: false, waiting, conditions: finalizeConditions(parent, waiting), fields };
  return { finalized: true, kept: plan.kept, conditions: finalizeConditions(parent), fields };
}

/** The deletion as far as it got: what was observed and what was decided. */
type SiteCleanup = Cleanup & { observed: WithdrawalObservation; decision: WithdrawalDecision };

async function withdrawApprovals(req: HookRequest, deps: HookDeps): Promise<SiteCleanup> {
  const observed = await observeWithdrawal(req, deps);
  const plan = planSiteWithdrawal(req.parent, observed, deps.now());
  const outcome = await actWithdrawal(req, plan, observed, deps);
  const decision = decideWithdrawal(req.parent, observed, plan, outcome);
  return decision.finalized
    ? { done: true, observed, decision }
    : { done: false, waiting: decision.waiting, observed, decision };
}

/** The answer: the status (no condition metrics: the object is going), and the logs of the deletion. */
export function finalizeSite(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const { namespace, name } = resourceId(req.parent);
  const site = `${namespace}/${name}`;
  return runFinalize(req, deps, {
    cleanup: () => withdrawApprovals(req, deps),
    status: ({ decision }) => assembleStatus(req, deps, decision.conditions, decision.fields, { publish: false }),
    waiting: (why) => deps.log.warn({ site }, why),
    released: ({ observed, decision }) => {
      if (observed.state === "released") deps.log[observed.level]({ site, ...observed.logFields }, observed.message);
      if (decision.finalized && decision.kept.length > 0) deps.log.info({ site }, keptMessage(decision.kept));
      deps.metrics.routeApprovalsReplayed.remove({ tailnet: tailnetRefName(req.parent) ?? "", namespace, name });
    },
  });
}
