/**
 * Finalize a TailnetSite: withdraw exactly its route approvals from its advertiser nodes, then
 * `finalized: true` — only once a fresh read shows them gone (see withdraw.ts for what is the
 * site's and for the order: the live policy without the site's autoApprovers first, then the
 * withdrawal, because Headscale re-approves what the live policy still auto-approves on the next
 * reload).
 *
 * - No Tailnet or no credentials: Headscale cannot be reached; holding the object would clean
 *   nothing, so it is released (logged).
 * - DryRun or HeadscaleCompatible=False: the operator writes nothing, so nothing is withdrawn
 *   (logged, with the routes left approved).
 * - Headscale not observed, a write failed, or the live policy still auto-approves a route through
 *   this site's own entries: `finalized: false`, Ready=False/Withdrawing saying why, resync.
 */

import { API_VERSION } from "../../api/schemas.js";
import type { HsNode } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { objectsOf } from "../../k8s/objects.js";
import { withdrawResource } from "../../metrics/resource.js";
import { assembleStatus, resourceId } from "../common.js";
import { tailnetRefName } from "../related.js";
import { resolveWorkload, tailnetIncompatible } from "../shared/workload.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../types.js";
import { withdrawSiteRoutes } from "./act.js";
import { previousAdvertisers } from "./decide.js";
import {
  finalizeConditions,
  keptMessage,
  liveApprovers,
  planWithdrawal,
  remainingRoutes,
  type Withdrawal,
  type WithdrawalPlan,
  waitingMessage,
} from "./withdraw.js";

/** While a deletion waits on Headscale or on the Tailnet's policy write. */
export const FINALIZE_RESYNC_SECONDS = 10;

type Read = { ok: true; plan: WithdrawalPlan; nodes: readonly HsNode[] } | { ok: false; message: string };

async function readPlan(req: HookRequest, deps: HookDeps, view: HeadscaleView): Promise<Read> {
  view.invalidate("nodes");
  view.invalidate("policy");
  const [nodes, policy] = await Promise.all([view.nodes(), view.policy()]);
  if (!nodes.ok) return { ok: false, message: `routes not observed: ${nodes.error.message}` };
  if (!policy.ok) return { ok: false, message: `live policy not observed: ${policy.error.message}` };
  const live = liveApprovers(policy.value?.policy ?? null);
  if (!live.ok) return { ok: false, message: live.message };
  const sites = objectsOf(req.related, API_VERSION, "TailnetSite");
  return {
    ok: true,
    nodes: nodes.value,
    plan: planWithdrawal({ parent: req.parent, sites, nodes: nodes.value, live: live.value, now: deps.now() }),
  };
}

/** Withdrawals a fresh node list still shows (a node that is gone holds nothing). */
function stillApproved(nodes: readonly HsNode[], withdrawals: readonly Withdrawal[]): Withdrawal[] {
  return withdrawals.filter((w) => {
    const node = nodes.find((n) => n.id === w.nodeId);
    return node !== undefined && remainingRoutes(node.approvedRoutes, w.remove).length !== node.approvedRoutes.length;
  });
}

export async function finalizeSite(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const { namespace, name } = resourceId(req.parent);
  const who = `${namespace}/${name}`;
  const tailnet = tailnetRefName(req.parent) ?? "";
  const status = (waiting?: string) =>
    assembleStatus(
      req,
      deps,
      finalizeConditions(req.parent, waiting),
      { advertisers: previousAdvertisers(req.parent) },
      { publish: false },
    );
  const done = (): FinalizeResult => {
    withdrawResource(deps.metrics, resourceId(req.parent));
    deps.metrics.routeApprovalsReplayed.remove({ tailnet, namespace, name });
    return { status: status(), children: [], finalized: true };
  };
  const wait = (message: string): FinalizeResult => {
    deps.log.warn({ site: who }, message);
    return {
      status: status(message),
      children: [],
      finalized: false,
      resyncAfterSeconds: FINALIZE_RESYNC_SECONDS,
    };
  };

  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok) {
    deps.log.warn({ site: who, reason: ctx.reason }, "finalized without withdrawing route approvals: %s", ctx.message);
    return done();
  }
  const writesNothing =
    ctx.settings.policyMode === "DryRun"
      ? `Tailnet ${ctx.settings.name} is in DryRun (spec.policy.mode)`
      : tailnetIncompatible(ctx.tailnet)
        ? `Tailnet ${ctx.settings.name} reports HeadscaleCompatible=False`
        : "";
  if (writesNothing) {
    deps.log.info(
      { site: who, advertisers: previousAdvertisers(req.parent) },
      "%s: the operator writes nothing, so no route approval is withdrawn (withdraw them with headscale nodes approve-routes once the policy no longer auto-approves them)",
      writesNothing,
    );
    return done();
  }

  const view = deps.views.view(ctx.conn);
  const first = await readPlan(req, deps, view);
  if (!first.ok) return wait(`withdrawing route approvals: ${first.message}`);
  const { plan } = first;
  const outcomes = await withdrawSiteRoutes(view, plan.withdraw);
  for (const o of outcomes) {
    if (o.ok && o.removed.length > 0) deps.log.info({ site: who, node: o.node, routes: o.removed }, "withdrew routes");
  }
  const failed = outcomes.find((o) => !o.ok);
  if (failed && !failed.ok) return wait(`withdrawing route approvals: on ${failed.node} failed: ${failed.error}`);
  if (plan.waiting.length > 0) return wait(waitingMessage(plan.waiting));
  // finalized only on what Headscale shows now, not on what was asked
  if (plan.withdraw.length > 0) {
    const fresh = await view.nodes();
    if (!fresh.ok) return wait(`withdrawing route approvals: routes not observed: ${fresh.error.message}`);
    const left = stillApproved(fresh.value, plan.withdraw);
    if (left.length > 0) {
      const text = left.map((w) => `${w.remove.join(", ")} on ${w.node}`).join("; ");
      return wait(`withdrawing route approvals: still approved after the write: ${text}`);
    }
  }
  if (plan.kept.length > 0) deps.log.info({ site: who }, keptMessage(plan.kept));
  return done();
}
