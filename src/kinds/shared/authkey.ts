/**
 * Pre-auth keys of agents and gateways. The key lives in a child Secret that carries its own
 * expiry (annotations), so "reuse while valid, rotate at half-life" is decided from `children`
 * and `now` alone — the server keeps no state. Agents keep one Secret, `<parent>-authkey`, rewritten
 * in place on rotation (an InPlace child; the pods read the key at first login only, issue 32); the
 * gateway's Secrets are `OnDelete` children, so its rotated key gets a new name (`<parent>-authkey-<key id>`).
 */

import { setTimeout as sleep } from "node:timers/promises";
import type { Outcome } from "../../headscale/capabilities.js";
import { hasKeyIndex, keyById, keysWithTag } from "../../headscale/lists.js";
import type { HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { OWNER_UID_LABEL } from "../../k8s/labels.js";
import { type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { previousStatus } from "../../pipeline/status.js";
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
 * How long a key minted for this object and not yet among its observed Secrets counts as "on its way": the
 * other replica's answer is applied and reaches the informer cache within seconds; a Secret still missing
 * after this was lost (an answer Metacontroller dropped, a Secret deleted by hand) and a key is minted anew.
 */
export const PENDING_KEY_GRACE_MS = 60_000;

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

/**
 * Pure: a key in Headscale's list that another replica minted for this object in this rotation. Two replicas
 * share no memory, and Metacontroller may send the next sync of the object to the other replica before the
 * first one's child Secret reached the informer cache, so the `children` it sees still lack the new key. Such a
 * key is recognisable by what every replica mints the same way: exactly this object's tags, the same flags, no
 * user (or exactly the user a TailnetAuthKey names), unexpired, not the observed current key, created after the current key (or the object), and recently.
 */
export function pendingKey(
  listed: readonly HsPreAuthKey[],
  want: {
    tags: readonly string[];
    reusable: boolean;
    ephemeral: boolean;
    notBefore: Date;
    now: Date;
    /** The user id a user's key is minted for (TailnetAuthKey spec.user); absent: a tagged key, no user. */
    user?: string;
  },
  current?: ObservedKey,
): HsPreAuthKey | undefined {
  const since = Math.max(
    want.notBefore.getTime(),
    current?.createdAt.getTime() ?? 0,
    want.now.getTime() - PENDING_KEY_GRACE_MS,
  );
  // A fresh list serves only the handful of mints that share its read: a scan with a cheap first test (tag
  // count, one tag) per mint costs less than indexing the list (a Set and Map entries per key) per read. A list
  // already indexed (the view's cached one) is looked up by tag.
  const tag = want.tags[0];
  const indexed = tag !== undefined && hasKeyIndex(listed);
  const pool = indexed ? keysWithTag(listed, tag) : listed;
  const candidates: HsPreAuthKey[] = [];
  // read in place from the first key that may be recent: a copy of that end was a 160 KB array a mint at 20,000
  // keys, straight into V8's old generation (issue 36: the round after an install retries thousands of mints)
  for (let i = indexed ? 0 : firstKeySince(listed, since); i < pool.length; i++) {
    const k = pool[i];
    if (k.aclTags.length !== want.tags.length || (tag !== undefined && !k.aclTags.includes(tag))) continue;
    const user = k.user === null ? undefined : k.user.id;
    if (k.id === current?.keyId || user !== want.user || !sameSet(k.aclTags, want.tags)) continue;
    if (k.reusable !== want.reusable || k.ephemeral !== want.ephemeral) continue;
    if (k.expiration !== null && Date.parse(k.expiration) <= want.now.getTime()) continue;
    const created = Date.parse(k.createdAt ?? "");
    if (!Number.isNaN(created) && created >= since) candidates.push(k);
  }
  // the newest (highest id on ties), so both replicas wait for the same one
  return candidates.sort(
    (a, b) => Date.parse(b.createdAt ?? "") - Date.parse(a.createdAt ?? "") || Number(b.id) - Number(a.id),
  )[0];
}

/**
 * How far a key's createdAt may run behind a key listed before it. Headscale stamps createdAt just before it
 * inserts the key (juanfont/headscale hscontrol/db/preauth_keys.go), so only creations racing each other, or
 * a clock stepped back, list a later id with an earlier time.
 */
export const KEY_CREATED_ORDER_SLACK_MS = 10 * 60_000;

/**
 * Where the keys begin, at the end of a list, that may have been created at `since` or later (0: all of them; read
 * in place, never copied). Headscale lists keys sorted by
 * id (hscontrol/grpcv1.go ListPreAuthKeys) and ids rise with createdAt (within KEY_CREATED_ORDER_SLACK_MS), so
 * any key created more than the slack before `since` has only keys created before `since` ahead of it. Such a
 * key is found by bisection: a mint at 20,000 keys parses a few timestamps, not all of them (issue 36: a
 * Date.parse per key was most of a mint in a fresh install, whose keys are all recent). An id that does not rise
 * over the keys kept means the list is not in that order: all of it is read.
 */
export function firstKeySince(listed: readonly HsPreAuthKey[], since: number): number {
  const stop = since - KEY_CREATED_ORDER_SLACK_MS;
  // lo: a key created before `stop` (-1: none found); hi: the first key known not to be (n: none)
  let lo = -1;
  let hi = listed.length;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    // a missing or unreadable time (NaN) is not before anything: the key stays among those read
    if (Date.parse(listed[mid].createdAt ?? "") < stop) lo = mid;
    else hi = mid;
  }
  let after = Number.NEGATIVE_INFINITY;
  for (let i = Math.max(lo, 0); i < listed.length; i++) {
    const id = Number(listed[i].id);
    if (!(id > after)) return 0;
    after = id;
  }
  return lo + 1;
}

/**
 * One fresh read of Headscale's key list, shared by the mints of every object on the same connection
 * (single-flight). A first-key wave of thousands of objects otherwise reads the whole list once per mint, so the
 * cost grows with the square of the object count (5k parents: decoding those lists was 18% of the server's CPU).
 *
 * Why a shared read is still fresh enough for the replica rule (pendingKey): the read has to contain every key
 * another replica (or this one) minted for the object before this sync. Such a mint finished before that
 * replica answered its sync of the object, and Metacontroller sends the next sync of an object only after the
 * previous one was answered (one work queue per controller, never two hooks of one object at once). So every
 * mint that matters landed in Headscale before this call began, and any list read that *starts after this call
 * began* holds it. A read already in flight when a caller arrives started earlier and may miss a key that
 * landed in between, so the caller never joins it: it waits for the next read, which starts once the one in
 * flight settled and is shared by everybody who arrived meanwhile. ("Started after this process's previous mint
 * finished" would not do: the other replica's mint can land after that point and before the read starts.)
 * A wave of N concurrent mints thus costs about (wave duration / (list latency + KEY_LIST_GATHER_MS)) + 1 reads,
 * not N.
 * What is left is the window the unshared read had too: a call Metacontroller gave up on (its hook timeout)
 * and the retry of the same object can run at once and both mint.
 * A failed read fails every caller that shared it (each keeps its current Secret, nothing is written).
 * The read in flight and the queued one are the view's soft state (view.soft.keyListFlight).
 */
export function freshKeyList(view: HeadscaleView): Promise<Outcome<HsPreAuthKey[]>> {
  // soft state of the view, i.e. per Headscale connection (HeadscaleViews keeps one view per connection)
  const f = view.soft.keyListFlight;
  const start = (): Promise<Outcome<HsPreAuthKey[]>> => {
    // an Outcome: settles, never rejects
    const read = view.freshPreAuthKeys();
    f.inFlight = read;
    void read.then(() => {
      if (f.inFlight === read) f.inFlight = undefined;
    });
    return read;
  };
  // a read that has not started yet starts after now: join it
  if (f.next) return f.next;
  // Otherwise queue one, to start once the read in flight settled and at least KEY_LIST_GATHER_MS from now:
  // starting later is always safe, and the mints of the other hooks in flight (Metacontroller's workers come
  // back within milliseconds) join it instead of each needing the next one (issue 25: 5 workers, 20,000
  // first mints: a read per 1.6 mints without the wait, of a list up to 20,000 keys long).
  const next = Promise.all([f.inFlight, sleep(KEY_LIST_GATHER_MS)]).then(() => {
    f.next = undefined;
    return start();
  });
  f.next = next;
  return next;
}

/** How long a fresh key-list read waits for more mints to share it (freshKeyList). */
export const KEY_LIST_GATHER_MS = 10;

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
  const read = await freshKeyList(view);
  if (!read.ok) return keep(`the key list could not be read before minting (${read.error.message})`);
  const listed = read.value;
  const created0 = parent.metadata.creationTimestamp ? new Date(parent.metadata.creationTimestamp) : new Date(0);
  const pending = pendingKey(
    listed,
    {
      tags: opts.tags,
      reusable: opts.reusable,
      ephemeral: opts.ephemeral,
      notBefore: Number.isNaN(created0.getTime()) ? new Date(0) : created0,
      now: opts.now,
    },
    plan.current,
  );
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
