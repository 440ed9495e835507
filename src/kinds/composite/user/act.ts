/** The TailnetUser's one write: create the local user, through the view (an Outcome, the cached list dropped). */
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HsUser } from "../../../headscale/types.js";
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
