/**
 * Finalize: with deletionPolicy Delete, delete the Headscale user only when this object created it — the user
 * status.createdUserId names, still a local user of the spec's name; anything else (adopted, OIDC, renamed,
 * another user of that name) is left. Headscale refuses to delete a user that still owns nodes: finalize then
 * waits (finalized: false, resync) and says so in the log, until the nodes are gone or the policy is Retain.
 */
import { type Cleanup, runFinalize } from "../../../pipeline/finalize.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { resolveWorkload } from "../../shared/workload.js";
import { deleteCreatedUser } from "./act.js";
import { createdUserId } from "./plan.js";
import { readUserSpec } from "./spec.js";

/**
 * A user waits on something slower than a retried request — Headscale refuses to delete it while it owns
 * nodes, which go only when their machines are deleted — so it asks every 30 s, not FINALIZE_RESYNC_SECONDS.
 */
export const USER_FINALIZE_RESYNC_SECONDS = 30;

export function finalizeUser(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const who = req.parent.metadata.name;
  return runFinalize(req, deps, {
    cleanup: () => deleteOwnUser(req, deps, who),
    resyncAfterSeconds: USER_FINALIZE_RESYNC_SECONDS,
    waiting: (error) => deps.log.warn({ tailnetUser: who, error }, "finalize waiting on Headscale"),
  });
}

async function deleteOwnUser(req: HookRequest, deps: HookDeps, who: string): Promise<Cleanup> {
  const spec = readUserSpec(req.parent);
  const ownId = createdUserId(req.parent);
  if (spec.deletionPolicy !== "Delete" || !ownId) return { done: true };
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) {
    deps.log.warn({ tailnetUser: who, reason: ctx.reason }, "finalized without deleting the user: %s", ctx.message);
    return { done: true };
  }
  const view = deps.views.view(ctx.conn);
  view.invalidate("users");
  const users = await view.users();
  if (!users.ok) return { done: false, waiting: users.error.message };
  const user = users.value.find((u) => u.id === ownId);
  if (!user || user.name !== spec.name || user.provider) return { done: true };
  const deleted = await deleteCreatedUser(view, ownId);
  if (!deleted.ok) return { done: false, waiting: `user ${ownId} not deleted: ${deleted.error.message}` };
  deps.log.info({ tailnetUser: who, id: ownId }, "Headscale user deleted");
  return { done: true };
}
