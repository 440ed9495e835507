/**
 * The TailnetAuthKey kind, wiring only: spec → observe → plan → act → decide → respond (src/pipeline/run.ts).
 * A pre-auth key for machines outside the cluster, delivered into a Secret the user names and renewed before it
 * expires (plan.ts: publish first, expire the old key once the Secret is observed holding the new one).
 */
import { AUTHKEY_REASONS } from "../../../conditions/tables/authkey.js";
import { runSync, type Stages } from "../../../pipeline/run.js";
import { invalidSpecResult } from "../../../pipeline/status.js";
import type { KindModule } from "../../../pipeline/types.js";
import { authKeyRelated } from "../related.js";
import { type AuthKeyOutcome, actAuthKey } from "./act.js";
import { type AuthKeyDecision, decideAuthKey } from "./decide.js";
import { finalizeAuthKey } from "./finalize.js";
import { publishAuthKeyMetrics } from "./metrics.js";
import { type AuthKeyObservation, observeAuthKey } from "./observe.js";
import { type AuthKeyPlan, planAuthKey } from "./plan.js";
import { type AuthKeySpec, authKeySpecProblem, readAuthKeySpec } from "./spec.js";

const CONDITION_TYPES = Object.keys(AUTHKEY_REASONS);

export const authKeyStages: Stages<AuthKeySpec, AuthKeyObservation, AuthKeyPlan, AuthKeyOutcome, AuthKeyDecision> = {
  spec: readAuthKeySpec,
  observe: (req, spec, deps) => observeAuthKey(req, spec, deps),
  plan: (req, spec, observed) => planAuthKey(req.parent, spec, observed),
  act: actAuthKey,
  decide: decideAuthKey,
  publish: (req, decision, _observed, deps) => publishAuthKeyMetrics(deps.metrics, req.parent, decision.expiresAt),
};

export const authKeyModule: KindModule = {
  hookKind: "authkey",
  customize: (req, deps) => authKeyRelated(req.parent, deps.config),
  specProblem: authKeySpecProblem,
  sync: (req, deps) => runSync(authKeyStages, req, deps),
  finalize: finalizeAuthKey,
  invalid: (req, message, deps) => invalidSpecResult(req, deps, "Ready", CONDITION_TYPES, message),
};
