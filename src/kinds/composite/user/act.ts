/**
 * The TailnetUser's writes, through the view (Outcomes, the cached list dropped): create the local user in
 * sync; delete the user this object created in finalize (finalize.ts decides when).
 */
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HsUser } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import type { UserObservation } from "./observe.js";
import type { UserPlan } from "./plan.js";
import type { UserSpec } from "./spec.js";

export interface UserOutcome {
  created?: Outcome<HsUser>;
}

export async function actUser(
  req: HookRequest,
  spec: UserSpec,
  observed: UserObservation,
  plan: UserPlan,
  deps: Pick<HookDeps, "log">,
): Promise<UserOutcome> {
  if (!observed.ok || plan.kind !== "create") return {};
  const created = await observed.view.createUser({
    name: spec.name,
    ...(spec.displayName ? { displayName: spec.displayName } : {}),
    ...(spec.email ? { email: spec.email } : {}),
  });
  const who = req.parent.metadata.name;
  if (created.ok) deps.log.info({ tailnetUser: who, id: created.value.id }, "Headscale user created");
  else deps.log.warn({ tailnetUser: who, error: created.error.message }, "Headscale user not created");
  return { created };
}

/** Finalize's one write: the user this object created, deleted. */
export function deleteCreatedUser(view: HeadscaleView, id: string): Promise<Outcome<void>> {
  return view.deleteUser(id);
}
