/**
 * Finalize: with deletionPolicy Delete, delete the Headscale user only when this object created it — the user
 * status.createdUserId names, still a local user of the spec's name; anything else (adopted, OIDC, renamed,
 * another user of that name) is left. Headscale refuses to delete a user that still owns nodes: finalize then
 * waits (finalized: false, resync) and says so in the log, until the nodes are gone or the policy is Retain.
 */
import { withdrawResource } from "../../../metrics/resource.js";
import { previousStatus, resourceId } from "../../../pipeline/status.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { resolveWorkload } from "../../shared/workload.js";
import { createdUserId } from "./plan.js";
import { readUserSpec } from "./spec.js";

export const FINALIZE_RESYNC_SECONDS = 30;

export async function finalizeUser(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const status = previousStatus(req.parent);
  const who = req.parent.metadata.name;
  const done = (): FinalizeResult => {
    withdrawResource(deps.metrics, resourceId(req.parent));
    return { status, children: [], finalized: true };
  };
  const spec = readUserSpec(req.parent);
  const ownId = createdUserId(req.parent);
  if (spec.deletionPolicy !== "Delete" || !ownId) return done();
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) {
    deps.log.warn({ tailnetUser: who, reason: ctx.reason }, "finalized without deleting the user: %s", ctx.message);
    return done();
  }
  const waiting = (error: string): FinalizeResult => {
    deps.log.warn({ tailnetUser: who, error }, "finalize waiting on Headscale");
    return { status, children: [], finalized: false, resyncAfterSeconds: FINALIZE_RESYNC_SECONDS };
  };
  const view = deps.views.view(ctx.conn);
  view.invalidate("users");
  const users = await view.users();
  if (!users.ok) return waiting(users.error.message);
  const user = users.value.find((u) => u.id === ownId);
  if (!user || user.name !== spec.name || user.provider) return done();
  const deleted = await view.deleteUser(ownId);
  if (!deleted.ok) return waiting(`user ${ownId} not deleted: ${deleted.error.message}`);
  deps.log.info({ tailnetUser: who, id: ownId }, "Headscale user deleted");
  return done();
}
