/**
 * A stand-in kind for end-to-end tests that isolate one kind: it answers every hook with a valid,
 * deterministic status (each condition Unknown/Stubbed) and no children, and never calls Headscale.
 */
import type { HookKind } from "../../src/api/schemas.js";
import { cond } from "../../src/conditions/condition.js";
import { TailnetCondition } from "../../src/conditions/tables/tailnet.js";
import { assembleStatus, invalidSpecResult } from "../../src/pipeline/status.js";
import type { CustomizeRequest, HookDeps, KindModule, RelatedRule } from "../../src/pipeline/types.js";

export function skeletonModule(
  hookKind: HookKind,
  conditionTypes: readonly string[],
  related: (req: CustomizeRequest, deps: HookDeps) => RelatedRule[],
  invalidType = "Ready",
): KindModule {
  const conditions = () => conditionTypes.map((t) => cond(t, "Unknown", "Stubbed", "stand-in kind of a test"));
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

/** A Tailnet without spec.headscale.apiKeyRotation: every condition but ApiKeyRotation. */
const TAILNET_TYPES = Object.values(TailnetCondition).filter((t) => t !== TailnetCondition.ApiKeyRotation);

/** A skeleton Tailnet (every condition Unknown/Stubbed): a no-op that writes no policy to Headscale. */
export const skeletonTailnet = (): KindModule => skeletonModule("tailnet", TAILNET_TYPES, () => [], "PolicyRendered");

/**
 * A Tailnet stand-in that keeps whatever status the test gave the parent and returns no children, for
 * tests that set the Tailnet's conditions (e.g. PolicyMode, HeadscaleCompatible) by hand.
 */
export const statusKeepingTailnet: KindModule = {
  hookKind: "tailnet",
  customize: () => [],
  sync: async (req) => ({ status: { ...((req.parent.status as Record<string, unknown>) ?? {}) }, children: [] }),
  finalize: async () => ({ status: {}, children: [], finalized: true }),
  invalid: (req) => ({ status: { ...((req.parent.status as Record<string, unknown>) ?? {}) }, children: [] }),
};

/** A Tailnet stand-in that answers with an empty status and no children (the kind under test reads only its spec). */
export const silentTailnet: KindModule = {
  hookKind: "tailnet",
  customize: () => [],
  sync: async () => ({ status: {}, children: [] }),
  finalize: async () => ({ status: {}, children: [], finalized: true }),
  invalid: () => ({ status: {}, children: [] }),
};
