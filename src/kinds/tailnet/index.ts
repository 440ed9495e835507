/** The tailnet kind module (placeholder until its logic lands: every condition Unknown/NotImplemented). */
import { TailnetCondition } from "../../conditions/reasons.js";
import { tailnetRelated } from "../related.js";
import { skeletonModule } from "../skeleton.js";

export const tailnetModule = skeletonModule(
  "tailnet",
  Object.values(TailnetCondition),
  (r, d) => tailnetRelated(r.parent),
  TailnetCondition.PolicyRendered,
);
