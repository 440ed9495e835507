/** The kind modules by hook path segment. */
import type { HookKind } from "../api/schemas.js";
import {
  EgressCondition,
  GatewayCondition,
  IngressCondition,
  SiteCondition,
  TailnetCondition,
} from "../conditions/reasons.js";
import { egressRelated, gatewayRelated, ingressRelated, siteRelated, tailnetRelated } from "./related.js";
import { skeletonModule } from "./skeleton.js";
import type { KindModule } from "./types.js";

export const kindModules: ReadonlyMap<HookKind, KindModule> = new Map<HookKind, KindModule>([
  [
    "tailnet",
    skeletonModule(
      "tailnet",
      Object.values(TailnetCondition),
      (r) => tailnetRelated(r.parent),
      TailnetCondition.PolicyRendered,
    ),
  ],
  ["egress", skeletonModule("egress", Object.values(EgressCondition), (r, d) => egressRelated(r.parent, d.config))],
  ["ingress", skeletonModule("ingress", Object.values(IngressCondition), (r, d) => ingressRelated(r.parent, d.config))],
  ["site", skeletonModule("site", Object.values(SiteCondition), (r, d) => siteRelated(r.parent, d.config))],
  ["gateway", skeletonModule("gateway", Object.values(GatewayCondition), (r, d) => gatewayRelated(r.parent, d.config))],
]);
