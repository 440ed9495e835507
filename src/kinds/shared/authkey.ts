/**
 * Pre-auth keys of agents and gateways. The key lives in a child Secret that carries its own
 * expiry (annotations), so "reuse while valid, rotate at half-life" is decided from `children`
 * and `now` alone — the server keeps no state. Secrets holding keys are `OnDelete` children, so
 * a rotated key gets a new Secret name (`<parent>-authkey-<key id>`) and the old one is dropped.
 */
import type { HeadscaleClient } from "../../headscale/client.js";
import { HeadscaleError } from "../../headscale/errors.js";
import { OWNER_UID_LABEL } from "../../k8s/labels.js";
import { type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { b64 } from "./secrets.js";

export const AUTHKEY_LABEL = "tailnet.internal/authkey";
export const KEY_ID_ANNOTATION = "tailnet.internal/key-id";
export const EXPIRES_ANNOTATION = "tailnet.internal/expires-at";
export const CREATED_ANNOTATION = "tailnet.internal/created-at";
export const AUTHKEY_DATA_KEY = "authkey";

/**
 * Agent keys (egress, ingress) are reusable and ephemeral, whatever the replica count: tailscaled
 * keeps its state on an emptyDir that lives as long as the pod, so every new pod (an eviction, a
 * rollout, a reschedule) registers again, and a used one-time key would leave it unable to join
 * until the next rotation.
 * Ephemeral nodes disappear from Headscale once offline, and the key is tagged and short-lived
 * (Tailnet.spec.authKeyTTL, rotated at half-life). Gateways keep single-use bootstrap keys: their
 * provenance check relies on exactly one registration per key.
 */
export const AGENT_KEY_FLAGS = { reusable: true, ephemeral: true } as const;

export interface ObservedKey {
  secret: K8sObject;
  keyId: string;
  createdAt: Date;
  expiresAt: Date;
}

export type AuthKeyPlan =
  | { action: "reuse"; current: ObservedKey }
  | { action: "create"; why: "missing" | "halfLife" | "expired"; current?: ObservedKey };

export function observedKeys(children: readonly K8sObject[]): ObservedKey[] {
  const out: ObservedKey[] = [];
  for (const s of children) {
    if (s.kind !== "Secret" || s.metadata.labels?.[AUTHKEY_LABEL] !== "true") continue;
    const a = s.metadata.annotations ?? {};
    const createdAt = new Date(a[CREATED_ANNOTATION] ?? "");
    const expiresAt = new Date(a[EXPIRES_ANNOTATION] ?? "");
    const keyId = a[KEY_ID_ANNOTATION];
    if (!keyId || Number.isNaN(createdAt.getTime()) || Number.isNaN(expiresAt.getTime())) continue;
    out.push({ secret: s, keyId, createdAt, expiresAt });
  }
  // newest first; ties broken by name so the choice is deterministic
  return out.sort(
    (a, b) =>
      b.createdAt.getTime() - a.createdAt.getTime() || a.secret.metadata.name.localeCompare(b.secret.metadata.name),
  );
}

/** Pure: reuse the newest key until half its lifetime has passed, then rotate. */
export function decideAuthKey(children: readonly K8sObject[], now: Date): AuthKeyPlan {
  const [current] = observedKeys(children);
  if (!current) return { action: "create", why: "missing" };
  if (now >= current.expiresAt) return { action: "create", why: "expired", current };
  const halfLife = current.createdAt.getTime() + (current.expiresAt.getTime() - current.createdAt.getTime()) / 2;
  if (now.getTime() >= halfLife) return { action: "create", why: "halfLife", current };
  return { action: "reuse", current };
}

export function authKeySecretName(parentName: string, keyId: string): string {
  const suffix = `-authkey-${keyId}`;
  return `${parentName.slice(0, 253 - suffix.length)}${suffix}`;
}

export function authKeySecret(
  parent: K8sObject,
  key: { id: string; key: string; createdAt: Date; expiresAt: Date },
  labels: Record<string, string>,
): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: authKeySecretName(parent.metadata.name, key.id),
      namespace: parent.metadata.namespace,
      labels: { ...labels, [AUTHKEY_LABEL]: "true", [OWNER_UID_LABEL]: parent.metadata.uid ?? "" },
      annotations: {
        [KEY_ID_ANNOTATION]: key.id,
        [CREATED_ANNOTATION]: key.createdAt.toISOString(),
        [EXPIRES_ANNOTATION]: key.expiresAt.toISOString(),
      },
    },
    type: "Opaque",
    data: { [AUTHKEY_DATA_KEY]: b64(key.key) },
  };
}

export interface AuthKeyOutcome {
  /** The Secret to return as a child (undefined: no key yet and none could be created). */
  secret?: K8sObject;
  keyId?: string;
  expiresAt?: Date;
  /** Why there is no fresh key, for a condition message (never contains the key). */
  error?: string;
}

/**
 * Carries out the plan: create a tagged key (always with an expiration, no user) when needed.
 * A failure keeps the current Secret (never drop a child because Headscale is down).
 */
export async function ensureAuthKey(
  plan: AuthKeyPlan,
  client: HeadscaleClient,
  parent: K8sObject,
  opts: {
    tags: string[];
    reusable: boolean;
    ephemeral: boolean;
    ttlSeconds: number;
    now: Date;
    labels: Record<string, string>;
  },
): Promise<AuthKeyOutcome> {
  if (plan.action === "reuse") {
    return { secret: reuseObserved(plan.current.secret), keyId: plan.current.keyId, expiresAt: plan.current.expiresAt };
  }
  const expiresAt = new Date(opts.now.getTime() + opts.ttlSeconds * 1000);
  try {
    const created = await client.preAuthKeys.create({
      aclTags: opts.tags,
      reusable: opts.reusable,
      ephemeral: opts.ephemeral,
      expiration: expiresAt,
    });
    const secret = authKeySecret(
      parent,
      { id: created.id, key: created.key, createdAt: opts.now, expiresAt },
      opts.labels,
    );
    return { secret, keyId: created.id, expiresAt };
  } catch (e) {
    const error = e instanceof HeadscaleError ? e.message : "creating a pre-auth key failed";
    if (plan.current && plan.why !== "expired") {
      return {
        secret: reuseObserved(plan.current.secret),
        keyId: plan.current.keyId,
        expiresAt: plan.current.expiresAt,
        error,
      };
    }
    return { secret: plan.current ? reuseObserved(plan.current.secret) : undefined, error };
  }
}
