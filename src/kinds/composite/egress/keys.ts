/**
 * When the egress needs a new pre-auth key (pure). The shared rule (src/kinds/shared/authkey.ts)
 * reuses a key until its half-life; Headscale's key list adds three reasons to replace it early,
 * because agents keep their state in memory and register afresh at every pod start:
 * - revoked: the key is gone from Headscale or already expired there (an administrator expired it);
 * - scaledOut: replicas went above 1 while the key is single-use (the second pod could not join);
 * - usedUp: the single-use key was used and no node carries the tag any more (the pod restarted and
 *   its ephemeral node was removed), so the next pod could not join until the half-life.
 */

import type { Obs } from "../../../headscale/errors.js";
import { keyById } from "../../../headscale/lists.js";
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import { type AuthKeyPlan, authKeyPlanFor, type ObservedKey } from "../../shared/authkey.js";
import { nodesWithTag } from "../../shared/node-names.js";

/** Headscale compares with its own clock; year 0001 (no expiration sent) counts as expired, null as never. */
export function keyExpired(key: HsPreAuthKey, now: Date): boolean {
  return key.expiration !== null && Date.parse(key.expiration) <= now.getTime();
}

export type KeyRefresh = "revoked" | "scaledOut" | "usedUp";

/** A key list read this long after the key's creation surely includes it (clock skew between replicas). */
const LISTING_MARGIN_MS = 5000;

export interface EgressKeyPlan {
  plan: AuthKeyPlan;
  /** Why a still-valid key is replaced early (for the log). */
  refresh?: KeyRefresh;
}

export function planEgressKey(input: {
  /** The key Secrets among the children, parsed (observedKeys). */
  keySecrets: readonly ObservedKey[];
  now: Date;
  keys: Obs<HsPreAuthKey[]>;
  nodes: Obs<HsNode[]>;
  tag: string;
  replicas: number;
}): EgressKeyPlan {
  const plan = authKeyPlanFor(input.keySecrets, input.now);
  if (plan.action !== "reuse" || !input.keys.ok) return { plan };
  const current = plan.current;
  const early = (why: "expired" | "halfLife", refresh: KeyRefresh): EgressKeyPlan => ({
    plan: { action: "create", why, current },
    refresh,
  });
  const listed = keyById(input.keys.value, current.keyId);
  if (!listed) {
    // a list read before the key existed (another replica's cache) proves nothing
    const fresh = input.keys.at.getTime() > current.createdAt.getTime() + LISTING_MARGIN_MS;
    return fresh ? early("expired", "revoked") : { plan };
  }
  if (keyExpired(listed, input.now)) return early("expired", "revoked");
  if (listed.reusable) return { plan };
  if (input.replicas > 1) return early("halfLife", "scaledOut");
  if (listed.used && input.nodes.ok && nodesWithTag(input.nodes.value, input.tag).length === 0) {
    return early("halfLife", "usedUp");
  }
  return { plan };
}
