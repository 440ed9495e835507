/** The ingress kind module (placeholder until its logic lands: every condition Unknown/NotImplemented). */
import { IngressCondition } from "../../conditions/reasons.js";
import { ingressRelated } from "../related.js";
import { skeletonModule } from "../skeleton.js";

export const ingressModule = skeletonModule("ingress", Object.values(IngressCondition), (r, d) =>
  ingressRelated(r.parent, d.config),
);
