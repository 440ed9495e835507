/**
 * When the gateway gets a new bootstrap key (pure). The key is single-use and the tailscale state
 * lives on an emptyDir (a container restart keeps the node; a new pod starts empty), so every new
 * gateway pod must find an unused key or it cannot log in. On top of
 * the shared rule (authkey.ts: create when missing or expired, rotate at half-life, which keeps
 * check 1 "unexpired" true), the operator mints a fresh key early — only when the current one has
 * already been used, so it never rotates twice while waiting for a pod to use the new one — when:
 *   - the node key changed (IdentityChanged): the gateway re-registers with the fresh key (api.md);
 *   - a new pod template is about to roll out (spec, image or Corefile change): the new pod needs it;
 *   - the gateway is suspended: the pod that starts on resume needs it;
 *   - recovery: every gateway pod has had its tailscale container unready for RECOVERY_GRACE_SECONDS
 *     and no node registered with the key is online (a rescheduled pod found its key spent).
 * With spec.replicas > 1 the key is reusable (every pod registers with it, a new pod finds it unspent), so
 * of those only IdentityChanged mints early. A key whose shape no longer fits the replica count (single-use
 * after a scale-up, reusable after a scale-down from several) is replaced at once ("replicas"), used or not.
 */
import { keyById, nodesOfKeys } from "../../../headscale/lists.js";
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { type AuthKeyPlan, decideAuthKey } from "../../shared/authkey.js";
import type { PodFact, Seen } from "./observe.js";

export const RECOVERY_GRACE_SECONDS = 60;

export type EarlyRotation = "identityChanged" | "rollout" | "suspended" | "recovery" | "replicas";

export interface KeyPlanInput {
  children: readonly K8sObject[];
  now: Date;
  keys: Seen<HsPreAuthKey[]>;
  nodes: Seen<HsNode[]>;
  suspended: boolean;
  identityChanged: boolean;
  /** The live Deployment's template stamp differs from the one rendered with the current key. */
  rolloutPending: boolean;
  pods: readonly PodFact[];
  /** spec.replicas > 1: the key is reusable. */
  reusable?: boolean;
  /**
   * The gateway ran several replicas (status.nodes[] is set): a reusable key is then the previous shape, not
   * a drift, and is replaced on a scale-down to one replica. Without it a reusable key stays a drift (check 1).
   */
  wasReplicated?: boolean;
}

export interface KeyPlan {
  plan: AuthKeyPlan;
  early?: EarlyRotation;
  /** Seconds until this plan should be looked at again (half-life, recovery grace). */
  recheckSeconds?: number;
}

/** Every live pod's tailscale container reports not ready; seconds since the newest one started. */
function unreadySince(pods: readonly PodFact[], now: Date): number | undefined {
  const live = pods.filter((p) => !p.deleting);
  if (live.length === 0 || live.some((p) => p.ready.tailscale !== false || !p.startTime)) return undefined;
  const newest = Math.max(...live.map((p) => (p.startTime as Date).getTime()));
  return (now.getTime() - newest) / 1000;
}

export function planBootstrapKey(input: KeyPlanInput): KeyPlan {
  const base = decideAuthKey(input.children, input.now);
  if (base.action !== "reuse") return { plan: base };
  const current = base.current;
  const halfLife = (current.createdAt.getTime() + current.expiresAt.getTime()) / 2;
  const toHalfLife = Math.max(1, Math.ceil((halfLife - input.now.getTime()) / 1000));
  const record = input.keys.ok ? keyById(input.keys.value, current.keyId) : undefined;
  // Same handling as a half-life rotation: if Headscale refuses the new key, the current one stays.
  const early = (why: EarlyRotation): KeyPlan => ({
    plan: { action: "create", why: "halfLife", current },
    early: why,
  });
  const reusable = input.reusable ?? false;
  if (record && reusable && !record.reusable) return early("replicas");
  if (record && !reusable && record.reusable && input.wasReplicated) return early("replicas");
  if (!record?.used) return { plan: base, recheckSeconds: toHalfLife };

  if (input.identityChanged) return early("identityChanged");
  if (reusable) return { plan: base, recheckSeconds: toHalfLife };
  if (input.suspended) return early("suspended");
  if (input.rolloutPending) return early("rollout");
  const since = unreadySince(input.pods, input.now);
  const keyOnline = !input.nodes.ok || nodesOfKeys(input.nodes.value, [current.keyId]).some((n) => n.online);
  if (since !== undefined && !keyOnline) {
    if (since >= RECOVERY_GRACE_SECONDS) return early("recovery");
    return { plan: base, recheckSeconds: Math.min(toHalfLife, Math.ceil(RECOVERY_GRACE_SECONDS - since)) };
  }
  return { plan: base, recheckSeconds: toHalfLife };
}
