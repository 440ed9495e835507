/**
 * The TailnetSite kind: a network behind subnet routers. No children (a pure control-plane
 * object); the sync observes the Headscale node list, decides conditions and approvals, approves
 * advertised routes on advertiser nodes (Apply mode, unblocked sites only), and folds the outcome
 * back into status. The policy side (autoApprovers, grants, tagOwners) is the Tailnet's render.
 * Finalize withdraws the site's approvals (finalize.ts).
 */
import { SiteCondition } from "../../conditions/reasons.js";
import type { K8sObject } from "../../k8s/objects.js";
import { assembleStatus, invalidSpecResult, resourceId } from "../common.js";
import { siteRelated, tailnetRefName } from "../related.js";
import type { HookDeps, HookRequest, KindModule, SyncResult } from "../types.js";
import { approveSiteRoutes, replayedForOthers, replayedRoutes } from "./act.js";
import { decideSite } from "./decide.js";
import { finalizeSite } from "./finalize.js";
import { observeSite } from "./observe.js";

const CONDITION_TYPES = Object.values(SiteCondition);

/** Labels of tailnet_route_approvals_replayed_total for this site. */
function replayLabels(parent: K8sObject) {
  const { namespace, name } = resourceId(parent);
  return { tailnet: tailnetRefName(parent) ?? "", namespace, name };
}

async function syncSite(req: HookRequest, deps: HookDeps): Promise<SyncResult> {
  const { input, view } = await observeSite(req, deps);
  let decision = decideSite(input);
  // The series exists from the first sync at 0, so the first replay batch is an increase, not a baseline.
  if (view) deps.metrics.routeApprovalsReplayed.inc(replayLabels(req.parent), 0);
  if (view && decision.approvals.length > 0) {
    const outcomes = await approveSiteRoutes(view, decision.approvals);
    const replayed = replayedRoutes(decision.approvals, outcomes);
    const { namespace, name } = resourceId(req.parent);
    if (replayed > 0) deps.metrics.routeApprovalsReplayed.inc(replayLabels(req.parent), replayed);
    const tailnet = tailnetRefName(req.parent) ?? "";
    for (const o of replayedForOthers(decision.approvals, outcomes)) {
      deps.metrics.routeApprovalsReplayed.inc({ tailnet, namespace: o.namespace, name: o.name }, o.count);
    }
    for (const o of outcomes) {
      if (o.ok && o.added.length > 0)
        deps.log.info({ site: `${namespace}/${name}`, node: o.node, routes: o.added }, "approved routes");
      else if (!o.ok)
        deps.log.warn({ site: `${namespace}/${name}`, node: o.node, error: o.error }, "route approval failed");
    }
    decision = decideSite({ ...input, outcomes });
  }
  const status = assembleStatus(req, deps, decision.conditions, { advertisers: decision.advertisers });
  return { status, children: [], resyncAfterSeconds: decision.resyncAfterSeconds };
}

export const siteModule: KindModule = {
  hookKind: "site",
  customize: (req, deps) => siteRelated(req.parent, deps.config),
  sync: syncSite,
  finalize: finalizeSite,
  invalid: (req, message, deps) => invalidSpecResult(req, deps, SiteCondition.Ready, CONDITION_TYPES, message),
};
