/**
 * A kind whose logic has not landed yet: it answers every hook with a valid, deterministic status
 * (each condition Unknown/NotImplemented) and no children, so the contract is exercised end to end.
 */
import type { HookKind } from "../api/schemas.js";
import { cond } from "../conditions/condition.js";
import { CommonReason } from "../conditions/reasons.js";
import { assembleStatus, invalidSpecResult } from "./common.js";
import type { CustomizeRequest, HookDeps, KindModule, RelatedRule } from "./types.js";

export function skeletonModule(
  hookKind: HookKind,
  conditionTypes: readonly string[],
  related: (req: CustomizeRequest, deps: HookDeps) => RelatedRule[],
  invalidType = "Ready",
): KindModule {
  const conditions = () =>
    conditionTypes.map((t) => cond(t, "Unknown", CommonReason.NotImplemented, "not implemented in this version"));
  return {
    hookKind,
    customize: related,
    async sync(req, deps) {
      return { status: assembleStatus(req, deps, conditions()), children: [] };
    },
    async finalize(req, deps) {
      return { status: assembleStatus(req, deps, conditions(), {}, { publish: false }), children: [], finalized: true };
    },
    invalid(req, message, deps) {
      return invalidSpecResult(req, deps, invalidType, conditionTypes, message);
    },
  };
}
