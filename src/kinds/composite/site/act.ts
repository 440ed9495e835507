/**
 * Route approvals of a TailnetSite (impure). approve_routes replaces a node's whole approved set
 * (NOTES §1.2), so each call is a read-modify-write: the node list is re-read right before the
 * write (the cached one may predate another site's or the gateway's approval on the same router)
 * and the node's full approved set is sent back with the missing routes added — never removing
 * one. Writes to one Headscale are serialised within the process so two syncs approving on the
 * same router cannot overwrite each other; across operator replicas the next sync repairs a lost
 * update (and counts it as a replay). Failures are outcomes, never thrown.
 */
import type { HeadscaleView } from "../../../headscale/view.js";
import { resourceId } from "../../../pipeline/status.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { tailnetRefName } from "../../shared/tailnet-ref.js";
import type { SiteObservation } from "./observe.js";
import type { ApprovalAction, SitePlan } from "./plan.js";
import { canonicalRoute } from "./routes.js";
import type { SiteSpec } from "./spec.js";
import { remainingRoutes, type Withdrawal } from "./withdraw.js";

export type ApprovalOutcome =
  | { ok: true; nodeId: string; node: string; added: string[]; approvedRoutes: string[] }
  | { ok: false; nodeId: string; node: string; error: string };

/** What act did this sync: one outcome per approval of the plan (none when it wanted none). */
export interface SiteOutcome {
  approvals: ApprovalOutcome[];
}

/** Runs `fn` after every earlier route write on this view's connection (its queue lives in view.soft). */
function serialised<T>(view: HeadscaleView, fn: () => Promise<T>): Promise<T> {
  const queue = view.soft.routeWrites;
  const run = (queue.tail ?? Promise.resolve()).then(fn, fn);
  queue.tail = run.catch(() => undefined);
  return run;
}

/**
 * The plan's approvals through the view, counted in tailnet_route_approvals_replayed_total (for this site
 * and for the other sites it writes for) and logged per node.
 */
export async function actSite(
  req: HookRequest,
  _spec: SiteSpec,
  observed: SiteObservation,
  plan: SitePlan,
  deps: HookDeps,
): Promise<SiteOutcome> {
  const { view } = observed;
  if (!view) return { approvals: [] };
  const { namespace, name } = resourceId(req.parent);
  const tailnet = tailnetRefName(req.parent) ?? "";
  // The series exists from the first sync at 0, so the first replay batch is an increase, not a baseline.
  deps.metrics.routeApprovalsReplayed.inc({ tailnet, namespace, name }, 0);
  if (plan.approvals.length === 0) return { approvals: [] };
  const outcomes = await approveSiteRoutes(view, plan.approvals);
  const replayed = replayedRoutes(plan.approvals, outcomes);
  if (replayed > 0) deps.metrics.routeApprovalsReplayed.inc({ tailnet, namespace, name }, replayed);
  for (const o of replayedForOthers(plan.approvals, outcomes)) {
    deps.metrics.routeApprovalsReplayed.inc({ tailnet, namespace: o.namespace, name: o.name }, o.count);
  }
  for (const o of outcomes) {
    if (o.ok && o.added.length > 0)
      deps.log.info({ site: `${namespace}/${name}`, node: o.node, routes: o.added }, "approved routes");
    else if (!o.ok)
      deps.log.warn({ site: `${namespace}/${name}`, node: o.node, error: o.error }, "route approval failed");
  }
  return { approvals: outcomes };
}

/** Carries out the approvals: a fresh node list first, each write through the view (which drops its cached nodes). */
export async function approveSiteRoutes(
  view: HeadscaleView,
  actions: readonly ApprovalAction[],
): Promise<ApprovalOutcome[]> {
  if (actions.length === 0) return [];
  return serialised(view, async () => {
    const fresh = await view.freshNodes();
    const outcomes: ApprovalOutcome[] = [];
    for (const action of actions) {
      const fail = (error: string): ApprovalOutcome => ({ ok: false, nodeId: action.nodeId, node: action.node, error });
      if (!fresh.ok) {
        outcomes.push(fail(`re-reading the node list before approving failed: ${fresh.error.message}`));
        continue;
      }
      const node = fresh.value.find((n) => n.id === action.nodeId);
      if (!node) {
        outcomes.push(fail(`node ${action.node} (id ${action.nodeId}) is gone`));
        continue;
      }
      const approved = new Set(node.approvedRoutes.map(canonicalRoute));
      const announced = new Set(node.availableRoutes.map(canonicalRoute));
      // Only what is still announced and still missing: another writer may have approved it meanwhile.
      const missing = action.add.filter((r) => announced.has(canonicalRoute(r)) && !approved.has(canonicalRoute(r)));
      if (missing.length === 0) {
        outcomes.push({ ok: true, nodeId: node.id, node: action.node, added: [], approvedRoutes: node.approvedRoutes });
        continue;
      }
      const updated = await view.approveRoutes(node.id, [...node.approvedRoutes, ...missing]);
      outcomes.push(
        updated.ok
          ? {
              ok: true,
              nodeId: node.id,
              node: action.node,
              added: missing,
              approvedRoutes: updated.value.approvedRoutes,
            }
          : fail(updated.error.message),
      );
    }
    return outcomes;
  });
}

export type WithdrawalOutcome =
  | { ok: true; nodeId: string; node: string; removed: string[] }
  | { ok: false; nodeId: string; node: string; error: string };

/**
 * Withdraws a deleted site's routes: per node, re-read right before the write (in the same queue as
 * approvals) and send the node's full approved set without exactly these routes — every other
 * route, approved by anyone, stays. A node that is gone, or no longer has the routes, needs nothing.
 */
export async function withdrawSiteRoutes(
  view: HeadscaleView,
  withdrawals: readonly Withdrawal[],
): Promise<WithdrawalOutcome[]> {
  if (withdrawals.length === 0) return [];
  return serialised(view, async () => {
    const fresh = await view.freshNodes();
    const outcomes: WithdrawalOutcome[] = [];
    for (const w of withdrawals) {
      if (!fresh.ok) {
        outcomes.push({
          ok: false,
          nodeId: w.nodeId,
          node: w.node,
          error: `re-reading the node list before withdrawing failed: ${fresh.error.message}`,
        });
        continue;
      }
      const node = fresh.value.find((n) => n.id === w.nodeId);
      const remaining = node ? remainingRoutes(node.approvedRoutes, w.remove) : [];
      if (!node || remaining.length === node.approvedRoutes.length) {
        outcomes.push({ ok: true, nodeId: w.nodeId, node: w.node, removed: [] });
        continue;
      }
      const written = await view.approveRoutes(node.id, remaining);
      outcomes.push(
        written.ok
          ? {
              ok: true,
              nodeId: node.id,
              node: w.node,
              removed: node.approvedRoutes.filter((r) => !remaining.includes(r)),
            }
          : { ok: false, nodeId: w.nodeId, node: w.node, error: written.error.message },
      );
    }
    return outcomes;
  });
}

/** Re-approvals made for the other sites this site writes for (writer.ts), per site, counted like replayedRoutes. */
export function replayedForOthers(
  actions: readonly ApprovalAction[],
  outcomes: readonly ApprovalOutcome[],
): { namespace: string; name: string; count: number }[] {
  const out = new Map<string, { namespace: string; name: string; count: number }>();
  for (const o of outcomes) {
    if (!o.ok) continue;
    for (const other of actions.find((a) => a.nodeId === o.nodeId)?.others ?? []) {
      const replays = new Set(other.replays);
      const count = o.added.filter((r) => replays.has(r)).length;
      const key = `${other.namespace}/${other.name}`;
      const entry = out.get(key) ?? { namespace: other.namespace, name: other.name, count: 0 };
      entry.count += count;
      out.set(key, entry);
    }
  }
  return [...out.values()].filter((e) => e.count > 0);
}

/** Routes re-approved by these outcomes whose approval the last status had recorded (one per route). */
export function replayedRoutes(actions: readonly ApprovalAction[], outcomes: readonly ApprovalOutcome[]): number {
  let n = 0;
  for (const o of outcomes) {
    if (!o.ok) continue;
    const replays = new Set(actions.find((a) => a.nodeId === o.nodeId)?.replays ?? []);
    n += o.added.filter((r) => replays.has(r)).length;
  }
  return n;
}
