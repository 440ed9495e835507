/**
 * The gateway's bootstrap key (pure): one stable Secret, `<parent>-gateway-authkey`, holding a reusable,
 * non-ephemeral key tagged exactly with the gateway tag (issue 32). A replica uses it once, at its first login
 * (or after its state Secret was lost): with its state in the kube store, tailscaled comes back Running and never
 * logs in again (containerboot main.go authLoop, TS_AUTH_ONCE), so nothing rolls, re-registers or fails over when
 * the key rotates. The shared rule only (authkey.ts): create when missing or expired, rotate at half-life, in place
 * (same Secret name, the pod template never names a key). bootstrapKeyTTL is the key's TTL. The older keys are
 * expired once the observed Secret proves it holds the new one (publish first, expire after: expirableKeyIds);
 * expiring a key logs no node out (Headscale checks a key at registration only, hscontrol/state/state.go).
 */
import type { HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { type AuthKeyPlan, decideAuthKey, expirableKeyIds } from "../../shared/authkey.js";
import type { Seen } from "./observe.js";

export interface KeyPlanInput {
  /** The stable key Secret as observed (none or one). */
  secrets: readonly K8sObject[];
  now: Date;
  keys: Seen<HsPreAuthKey[]>;
  /** Every key id this gateway minted that it knows of. */
  owned: ReadonlySet<string>;
}

export interface KeyPlan {
  plan: AuthKeyPlan;
  /** Older keys of ours to expire now (the observed Secret proves it holds a newer one). */
  expire: string[];
  /** Seconds until the half-life rotation. */
  recheckSeconds?: number;
}

export function planBootstrapKey(input: KeyPlanInput): KeyPlan {
  const plan = decideAuthKey(input.secrets, input.now);
  const expire = input.keys.ok ? expirableKeyIds(input.secrets[0], input.owned, input.keys.value, input.now) : [];
  if (plan.action !== "reuse") return { plan, expire };
  const current = plan.current;
  const halfLife = (current.createdAt.getTime() + current.expiresAt.getTime()) / 2;
  return { plan, expire, recheckSeconds: Math.max(1, Math.ceil((halfLife - input.now.getTime()) / 1000)) };
}
