/**
 * What a TailnetUser sync reads (impure, never throws): its Tailnet and credentials, then Headscale's users and
 * nodes (for the node count) through the shared view. A cluster-scoped, admin-only object has no namespace for
 * the Tailnet's tenancy to judge, so it is resolved without admission.
 */

import type { Obs } from "../../../headscale/errors.js";
import type { HsNode, HsUser } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { resolveWorkload } from "../../shared/workload.js";

export type UserObservation =
  | { ok: true; view: HeadscaleView; users: Obs<HsUser[]>; nodes: Obs<HsNode[]> }
  | { ok: false; reason: "NoTailnet" | "NoAPIKey"; message: string };

export async function observeUser(req: HookRequest, deps: HookDeps): Promise<UserObservation> {
  // tenancy judges namespaced objects; `cleanup` resolves without admission (see above)
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok)
    return { ok: false, reason: ctx.reason === "NoTailnet" ? "NoTailnet" : "NoAPIKey", message: ctx.message };
  const view = deps.views.view(ctx.conn);
  const [users, nodes] = await Promise.all([view.users(), view.nodes()]);
  return { ok: true, view, users, nodes };
}
