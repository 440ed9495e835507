/** The site kind module (placeholder until its logic lands: every condition Unknown/NotImplemented). */
import { SiteCondition } from "../../conditions/reasons.js";
import { siteRelated } from "../related.js";
import { skeletonModule } from "../skeleton.js";

export const siteModule = skeletonModule("site", Object.values(SiteCondition), (r, d) =>
  siteRelated(r.parent, d.config),
);
