/** The gateway kind module (placeholder until its logic lands: every condition Unknown/NotImplemented). */
import { GatewayCondition } from "../../conditions/reasons.js";
import { gatewayRelated } from "../related.js";
import { skeletonModule } from "../skeleton.js";

export const gatewayModule = skeletonModule("gateway", Object.values(GatewayCondition), (r, d) =>
  gatewayRelated(r.parent, d.config),
);
