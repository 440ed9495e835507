/** The kind modules by hook path segment. */
import type { HookKind } from "../../api/schemas.js";
import type { KindModule } from "../../pipeline/types.js";
import { authKeyModule } from "./authkey/index.js";
import { egressModule } from "./egress/index.js";
import { gatewayModule } from "./gateway/index.js";
import { ingressModule } from "./ingress/index.js";
import { siteModule } from "./site/index.js";
import { tailnetModule } from "./tailnet/index.js";
import { userModule } from "./user/index.js";

export const kindModules: ReadonlyMap<HookKind, KindModule> = new Map<HookKind, KindModule>([
  ["tailnet", tailnetModule],
  ["egress", egressModule],
  ["ingress", ingressModule],
  ["site", siteModule],
  ["gateway", gatewayModule],
  ["user", userModule],
  ["authkey", authKeyModule],
]);
