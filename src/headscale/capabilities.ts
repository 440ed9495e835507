/**
 * Capability detection from the API's shape, never from a reported version (NOTES.md §2, §7.1; api.md
 * "HeadscaleCompatible"). `detectCapabilities` is pure; `probeCapabilities` runs the three cheap probes.
 */

import type { HeadscaleClient } from "./client.js";
import { HeadscaleError } from "./errors.js";
import type { HsNode, HsPolicy } from "./types.js";

/** The outcome of one call, without a timestamp (an `Obs` from view.ts is assignable to it). */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: HeadscaleError };

export type PolicyMode = "database" | "file";

export interface Capabilities {
  /** Nodes carry `tags` (0.28+); null without nodes or when the node list failed. */
  nodeTags: boolean | null;
  /** Nodes carry `approvedRoutes` (0.26+); null without nodes or when the node list failed. */
  nodeApprovedRoutes: boolean | null;
  /** `POST /api/v1/policy/check` exists (0.29+); null when the probe failed for another reason. */
  policyCheck: boolean | null;
  /** Server `policy.mode`; null when the policy read failed for an unrelated reason. */
  policyMode: PolicyMode | null;
}

export interface CapabilityInputs {
  /** Result of `nodes.list()`. */
  nodes?: Outcome<HsNode[]>;
  /**
   * Result of `policy.get()`: either the raw client outcome (an empty database is an error there) or the view's
   * form, where `null` means "database mode, nothing stored yet".
   */
  policy?: Outcome<HsPolicy | null>;
  /** Result of `policy.check("{}")`. */
  policyCheck?: Outcome<void>;
}

/** Text sent by the check probe: the empty policy, valid on every version that has the endpoint. */
export const PROBE_POLICY = "{}";

export function detectCapabilities(inputs: CapabilityInputs): Capabilities {
  const nodes = inputs.nodes?.ok && inputs.nodes.value.length > 0 ? inputs.nodes.value : null;
  return {
    nodeTags: nodes ? nodes.some((n) => n.shape.hasTags) : null,
    nodeApprovedRoutes: nodes ? nodes.some((n) => n.shape.hasApprovedRoutes) : null,
    policyCheck: checkSupport(inputs.policyCheck),
    policyMode: policyModeOf(inputs.policy),
  };
}

function checkSupport(outcome: Outcome<void> | undefined): boolean | null {
  if (!outcome) return null;
  if (outcome.ok) return true;
  const { error } = outcome;
  if (error.kind !== "http") return null;
  // Unknown route: 404 from grpc-gateway (≤0.28), 405/501 from anything routing by method.
  if (error.status === 404 || error.status === 405 || error.status === 501) return false;
  // The endpoint answered and judged the text: it exists.
  if (error.status === 400 || error.classification === "policyInvalid") return true;
  return null;
}

/**
 * Database mode stores `updatedAt`; file mode returns null. With database mode and no stored policy, 0.29
 * answers 500 "loading ACL from database: acl policy not found"; an unreadable policy file answers
 * `reading policy from path "...": ...`.
 */
function policyModeOf(outcome: Outcome<HsPolicy | null> | undefined): PolicyMode | null {
  if (!outcome) return null;
  if (outcome.ok) return outcome.value === null || outcome.value.updatedAt !== null ? "database" : "file";
  if (isEmptyDatabasePolicy(outcome.error)) return "database";
  if (outcome.error.kind === "http" && /reading policy from path/i.test(outcome.error.detail)) return "file";
  return null;
}

/**
 * The database holds no policy yet (treat as empty, database mode). Only the not-found text says so: 0.29
 * wraps every database error of GetPolicy with the same "loading ACL from database: " prefix
 * (hscontrol/grpcv1.go), and a locked or unreachable database must not read as "nothing stored" (that would
 * write needlessly and report a false drift).
 */
export function isEmptyDatabasePolicy(error: unknown): boolean {
  return error instanceof HeadscaleError && error.kind === "http" && /acl policy not found/i.test(error.detail);
}

/** Runs the node, policy and check probes (the check with `{}`, which persists nothing) and detects. */
export async function probeCapabilities(client: HeadscaleClient): Promise<Capabilities> {
  const [nodes, policy, policyCheck] = await Promise.all([
    outcomeOf(client.nodes.list()),
    outcomeOf(client.policy.get()),
    outcomeOf(client.policy.check(PROBE_POLICY)),
  ]);
  return detectCapabilities({ nodes, policy, policyCheck });
}

/** Settles a client call into an Outcome; non-Headscale errors are wrapped so nothing escapes. */
export async function outcomeOf<T>(promise: Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error: asHeadscaleError(error) };
  }
}

export function asHeadscaleError(error: unknown, operation = "request"): HeadscaleError {
  if (error instanceof HeadscaleError) return error;
  return new HeadscaleError({
    kind: "transport",
    operation,
    detail: "unexpected client failure",
    classification: "other",
  });
}
