/** The egress kind module (placeholder until its logic lands: every condition Unknown/NotImplemented). */
import { EgressCondition } from "../../conditions/reasons.js";
import { egressRelated } from "../related.js";
import { skeletonModule } from "../skeleton.js";

export const egressModule = skeletonModule("egress", Object.values(EgressCondition), (r, d) =>
  egressRelated(r.parent, d.config),
);
