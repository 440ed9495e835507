/**
 * The TailnetUser kind, wiring only: spec → observe → plan → act → decide → respond (src/pipeline/run.ts).
 * A Headscale user by name: created if missing, adopted if present, deleted on deletion only when this
 * object created it and says so (deletionPolicy Delete).
 */
import { USER_REASONS } from "../../../conditions/tables/user.js";
import { type Decision, runSync, type Stages } from "../../../pipeline/run.js";
import { invalidSpecResult } from "../../../pipeline/status.js";
import type { KindModule } from "../../../pipeline/types.js";
import { userRelated } from "../related.js";
import { actUser, type UserOutcome } from "./act.js";
import { decideUser } from "./decide.js";
import { finalizeUser } from "./finalize.js";
import { observeUser, type UserObservation } from "./observe.js";
import { planUser, type UserPlan } from "./plan.js";
import { readUserSpec, type UserSpec } from "./spec.js";

const CONDITION_TYPES = Object.keys(USER_REASONS);

export const userStages: Stages<UserSpec, UserObservation, UserPlan, UserOutcome, Decision> = {
  spec: readUserSpec,
  observe: (req, _spec, deps) => observeUser(req, deps),
  plan: (req, spec, observed) => planUser(req.parent, spec, observed),
  act: actUser,
  decide: decideUser,
};

export const userModule: KindModule = {
  hookKind: "user",
  customize: (req, deps) => userRelated(req.parent, deps.config),
  sync: (req, deps) => runSync(userStages, req, deps),
  finalize: finalizeUser,
  invalid: (req, message, deps) => invalidSpecResult(req, deps, "Ready", CONDITION_TYPES, message),
};
