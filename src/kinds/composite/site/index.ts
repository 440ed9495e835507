/**
 * The TailnetSite kind: a network behind subnet routers. No children (a pure control-plane object):
 * observe the Headscale node list, plan the route approvals, approve them (Apply mode, unblocked sites
 * only), decide conditions and status.advertisers from the outcomes. The policy side (autoApprovers,
 * grants, tagOwners) is the Tailnet's render. Finalize withdraws the site's approvals (finalize.ts).
 */
import { conditionsOf } from "../../../conditions/table.js";
import { SITE_REASONS } from "../../../conditions/tables/site.js";
import { runSync, type Stages } from "../../../pipeline/run.js";
import { invalidSpecResult } from "../../../pipeline/status.js";
import type { KindModule } from "../../../pipeline/types.js";
import { siteRelated } from "../related.js";
import { actSite, type SiteOutcome } from "./act.js";
import { decideSiteSync, type SiteDecision } from "./decide.js";
import { finalizeSite } from "./finalize.js";
import { observeSite, type SiteObservation } from "./observe.js";
import { planInput, planSite, type SitePlan } from "./plan.js";
import { readSiteSpec, type SiteSpec, siteSpecProblem } from "./spec.js";

const { types } = conditionsOf(SITE_REASONS);

export const siteStages: Stages<SiteSpec, SiteObservation, SitePlan, SiteOutcome, SiteDecision> = {
  spec: readSiteSpec,
  observe: (req, _spec, deps) => observeSite(req, deps),
  plan: (req, spec, observed) => planSite(planInput(req.parent, spec, observed)),
  act: actSite,
  decide: decideSiteSync,
};

export const siteModule: KindModule = {
  hookKind: "site",
  customize: (req, deps) => siteRelated(req.parent, deps.config),
  sync: (req, deps) => runSync(siteStages, req, deps),
  finalize: finalizeSite,
  specProblem: siteSpecProblem,
  invalid: (req, message, deps) => invalidSpecResult(req, deps, "Ready", types, message),
};
