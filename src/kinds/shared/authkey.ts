/**
 * Pre-auth keys of agents and gateways. The key lives in a child Secret that carries its own
 * expiry (annotations), so "reuse while valid, rotate at half-life" is decided from `children`
 * and `now` alone — the server keeps no state. Agents keep one Secret, `<parent>-authkey`, rewritten
 * in place on rotation (an InPlace child; the pods read the key at first login only, issue 32); the
 * gateway's Secrets are `OnDelete` children, so its rotated key gets a new name (`<parent>-authkey-<key id>`).
 */

import { keyById } from "../../headscale/lists.js";
import type { HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { OWNER_UID_LABEL } from "../../k8s/labels.js";
import { type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { previousStatus } from "../../pipeline/status.js";
import { freshKeyList, type PendingAsk, pendingKeyFor } from "./pending-key.js";
import { b64, secretValue } from "./secrets.js";

export const AUTHKEY_LABEL = "tailnet.internal/authkey";
export const KEY_ID_ANNOTATION = "tailnet.internal/key-id";
export const EXPIRES_ANNOTATION = "tailnet.internal/expires-at";
export const CREATED_ANNOTATION = "tailnet.internal/created-at";
export const AUTHKEY_DATA_KEY = "authkey";

/**
 * Agent keys (egress, ingress), whose replicas keep persistent state (issue 32, replica.ts): reusable (a new
 * replica, a scale-up or a lost state registers with it) and not ephemeral, since a node must outlive any pod; the
 * operator deletes the nodes it registered (replica-nodes.ts). Gateways keep single-use bootstrap keys for now:
 * their provenance check relies on exactly one registration per key. Its expiry never logs a node out: Headscale validates a key only at registration
 * (hscontrol/state/state.go HandleNodeFromPreAuthKey), and tagged nodes never expire.
 */
export const REPLICA_KEY_FLAGS = { reusable: true, ephemeral: false } as const;

/**
 * The stable key Secret, `<parent>-authkey`, rotated in place: a new key rewrites its data and annotations under the
 * same name, so the pod template (which names the Secret, never a key) does not change and no pod rolls. Running
 * containers never re-read env, and AUTH_ONCE ignores the key while state exists (containerboot main.go authLoop).
 */
export function stableAuthKeySecretName(parentName: string): string {
  const suffix = "-authkey";
  return `${parentName.slice(0, 253 - suffix.length)}${suffix}`;
}

const listedExpiredAt = (k: HsPreAuthKey, now: Date) =>
  k.expiration !== null && (Date.parse(k.expiration) <= now.getTime() || Number.isNaN(Date.parse(k.expiration)));

const keyAge = (a: HsPreAuthKey, b: HsPreAuthKey) =>
  Date.parse(a.createdAt ?? "") - Date.parse(b.createdAt ?? "") || Number(a.id) - Number(b.id);

/**
 * Publish first, expire after (pure): the older keys this object minted are expired only in a sync whose observed key
 * Secret proves (provenBy) it holds a newer key — Metacontroller applied it, so a replica registering now gets the new
 * one. Until then every key stays valid. Expiring keeps the nodes (a key is checked at registration only).
 */
export function expirableKeyIds(
  observed: K8sObject | undefined,
  owned: ReadonlySet<string>,
  keys: readonly HsPreAuthKey[],
  now: Date,
): string[] {
  const held = observed ? secretValue(observed, AUTHKEY_DATA_KEY) : undefined;
  const id = observed?.metadata.annotations?.[KEY_ID_ANNOTATION];
  if (!held || !id || !owned.has(id)) return [];
  // By id through the list's index (lists.ts), O(owned): a scan of every key of the Tailnet per sync was 18% of
  // the hook server's steady-state CPU at 20,000 parents (issue 36).
  const listed = keyById(keys, id);
  if (!listed || !provenBy(listed, held)) return [];
  const older: HsPreAuthKey[] = [];
  for (const ownedId of owned) {
    const k = ownedId === id ? undefined : keyById(keys, ownedId);
    if (k && !listedExpiredAt(k, now) && keyAge(k, listed) < 0) older.push(k);
  }
  return older.sort(keyAge).map((k) => k.id);
}

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
  return authKeyPlanFor(observedKeys(children), now);
}

/** decideAuthKey over key Secrets already parsed (observedKeys, newest first). */
export function authKeyPlanFor(keys: readonly ObservedKey[], now: Date): AuthKeyPlan {
  const [current] = keys;
  if (!current) return { action: "create", why: "missing" };
  if (now >= current.expiresAt) return { action: "create", why: "expired", current };
  const halfLife = current.createdAt.getTime() + (current.expiresAt.getTime() - current.createdAt.getTime()) / 2;
  if (now.getTime() >= halfLife) return { action: "create", why: "halfLife", current };
  return { action: "reuse", current };
}

/**
 * The listing proves a Secret holds key `id`: 0.28+ lists `hskey-auth-<prefix>-***`, and a full key is
 * `hskey-auth-<prefix>-<secret>` (juanfont/headscale hscontrol/types/preauth_key.go); the prefix is never shown to
 * a tenant, so a Secret whose annotation names someone else's key id proves nothing.
 */
export function provenBy(listed: HsPreAuthKey, secretKey: string): boolean {
  const masked = /^(hskey-auth-[A-Za-z0-9_-]+-)\*\*\*$/.exec(listed.key)?.[1];
  return masked !== undefined && secretKey.startsWith(masked) && secretKey.length > masked.length;
}

export function authKeySecretName(parentName: string, keyId: string): string {
  const suffix = `-authkey-${keyId}`;
  return `${parentName.slice(0, 253 - suffix.length)}${suffix}`;
}

export function authKeySecret(
  parent: K8sObject,
  key: { id: string; key: string; createdAt: Date; expiresAt: Date },
  labels: Record<string, string>,
  /** true: the stable `<parent>-authkey`; a string: that stable name (a kind whose parent name another kind shares). */
  stable: boolean | string = false,
): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name:
        typeof stable === "string"
          ? stable
          : stable
            ? stableAuthKeySecretName(parent.metadata.name)
            : authKeySecretName(parent.metadata.name, key.id),
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
  /** A key minted for this object moments ago whose Secret is not observed yet (another replica's): not minted again. */
  pendingKeyId?: string;
}

/**
 * Carries out the plan: create a tagged key (always with an expiration, no user) when needed.
 * A failure keeps the current Secret (never drop a child because Headscale is down).
 */
export async function ensureAuthKey(
  plan: AuthKeyPlan,
  view: HeadscaleView,
  parent: K8sObject,
  opts: {
    tags: string[];
    reusable: boolean;
    ephemeral: boolean;
    ttlSeconds: number;
    now: Date;
    labels: Record<string, string>;
    /** The stable `<parent>-authkey` Secret, rotated in place (stableAuthKeySecretName), or its name. */
    stable?: boolean | string;
  },
): Promise<AuthKeyOutcome> {
  if (plan.action === "reuse") {
    return { secret: reuseObserved(plan.current.secret), keyId: plan.current.keyId, expiresAt: plan.current.expiresAt };
  }
  const expiresAt = new Date(opts.now.getTime() + opts.ttlSeconds * 1000);
  const keep = (error: string, pendingKeyId?: string): AuthKeyOutcome => {
    const current = plan.current;
    const pending = pendingKeyId ? { pendingKeyId } : {};
    if (current && plan.why !== "expired") {
      return {
        secret: reuseObserved(current.secret),
        keyId: current.keyId,
        expiresAt: current.expiresAt,
        error,
        ...pending,
      };
    }
    return { secret: current ? reuseObserved(current.secret) : undefined, error, ...pending };
  };
  // Read Headscale's key list fresh (not the view's cache) right before minting: another replica may have
  // minted this rotation's key a moment ago (pendingKey). The read is shared with concurrent mints on this
  // connection but always starts after this call (freshKeyList). A list that cannot be read means no write.
  const created0 = parent.metadata.creationTimestamp ? new Date(parent.metadata.creationTimestamp) : new Date(0);
  const ask: PendingAsk = {
    want: {
      tags: opts.tags,
      reusable: opts.reusable,
      ephemeral: opts.ephemeral,
      notBefore: Number.isNaN(created0.getTime()) ? new Date(0) : created0,
      now: opts.now,
    },
    current: plan.current,
  };
  const read = await freshKeyList(view, ask);
  if (!read.ok) return keep(`the key list could not be read before minting (${read.error.message})`);
  const pending = pendingKeyFor(read.value, ask);
  if (pending) {
    return keep(
      `key ${pending.id}, minted for this object at ${pending.createdAt}, is not among its Secrets yet (another replica's answer on its way); waiting for it rather than minting a second key`,
      pending.id,
    );
  }
  // through the view: the write settles into an Outcome and drops the cached key list
  const created = await view.createPreAuthKey({
    aclTags: opts.tags,
    reusable: opts.reusable,
    ephemeral: opts.ephemeral,
    expiration: expiresAt,
  });
  if (!created.ok) return keep(created.error.message);
  const secret = authKeySecret(
    parent,
    { id: created.value.id, key: created.value.key, createdAt: opts.now, expiresAt },
    opts.labels,
    opts.stable ?? false,
  );
  return { secret, keyId: created.value.id, expiresAt };
}

/** The key ids an object's status records as minted by it (`status.preAuthKeyIds`, written by the operator only). */
export function statusKeyIds(parent: K8sObject): string[] {
  const ids = previousStatus(parent).preAuthKeyIds;
  return Array.isArray(ids) ? ids.filter((x): x is string => typeof x === "string" && /^[0-9]+$/.test(x)) : [];
}
