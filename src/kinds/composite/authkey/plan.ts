/**
 * Which Headscale writes a TailnetAuthKey sync wants (pure):
 * - mint a key when the Secret holds none, when its key is due (renewAt = expiresAt − renewBefore), or when
 *   Headscale no longer lists it valid (an administrator expired it);
 * - retire (expire) the keys this object minted before the one the Secret holds — only once the observed
 *   Secret is proven to hold that newer key: its value starts with the prefix Headscale lists for the key id
 *   it names. So the old key is expired only after Metacontroller applied the new Secret, never in the sync
 *   that mints (whose answer may still be lost).
 * Ownership is proven, not inferred: status.preAuthKeyIds (written in the answer that mints a key; editors
 * cannot write status) plus the Secret's key when the listing proves it and it has exactly this spec's shape.
 * A key list that could not be read plans no write.
 */
import type { HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { provenBy, statusKeyIds } from "../../shared/authkey.js";
import { PENDING_KEY_GRACE_MS } from "../../shared/pending-key.js";
import type { ObservedAuthKeySecret } from "./children.js";
import type { AuthKeyObservation } from "./observe.js";
import type { AuthKeySpec } from "./spec.js";

/** A key list read this long after the key's creation surely includes it (clock skew between replicas). */
const LISTING_MARGIN_MS = 5000;

export type MintWhy = "missing" | "due" | "revoked" | "changed";

export interface AuthKeyPlan {
  /** Mint a new key (and publish it in the Secret). */
  mint?: MintWhy;
  /** Ids of this object's keys older than the proven current one, still valid in Headscale: expire now. */
  retire: string[];
  /** The keys this object owns (status.preAuthKeyIds ∪ the proven Secret key). */
  owned: ReadonlySet<string>;
  /** The Secret's key as Headscale lists it, when the listing proves the Secret holds it. */
  current?: HsPreAuthKey;
  /**
   * The proven key's expiry as Headscale lists it and its renewal time under today's spec.renewBefore: the
   * Secret's annotations are the user's to edit, so they never decide when to mint.
   */
  times?: { expiresAt: Date; renewAt: Date };
  /** Why a wanted mint is not attempted (the key list could not be read). */
  blocked?: string;
}

/** Headscale compares with its own clock; year 0001 (no expiration sent) counts as expired, null as never. */
export function listedExpired(key: HsPreAuthKey, now: Date): boolean {
  return key.expiration !== null && Date.parse(key.expiration) <= now.getTime();
}

export { provenBy };

const sameTags = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((t, i) => t === [...b].sort()[i]);

/** A listed key has exactly the shape this spec mints: its tags or its user, its flags, after the object. */
export function hasSpecShape(k: HsPreAuthKey, spec: AuthKeySpec, userId: string | undefined, parent: K8sObject) {
  const user = k.user === null ? undefined : k.user.id;
  const born = Date.parse(parent.metadata.creationTimestamp ?? "");
  const created = Date.parse(k.createdAt ?? "");
  return (
    user === userId &&
    sameTags(k.aclTags, spec.tags) &&
    k.reusable === spec.reusable &&
    k.ephemeral === spec.ephemeral &&
    !(created < born)
  );
}

const byAge = (a: HsPreAuthKey, b: HsPreAuthKey) =>
  Date.parse(a.createdAt ?? "") - Date.parse(b.createdAt ?? "") || Number(a.id) - Number(b.id);

/**
 * The keys an object owns when it will mint no more (finalize, a refusal): status.preAuthKeyIds plus the key its
 * Secret is proven to hold with this spec's shape — a user's key whichever user it names, since the TailnetUser
 * may be gone or no longer list the namespace.
 */
export function ownedForCleanup(
  parent: K8sObject,
  spec: AuthKeySpec,
  secret: ObservedAuthKeySecret | undefined,
  keys: readonly HsPreAuthKey[],
): Set<string> {
  const owned = new Set(statusKeyIds(parent));
  const listed = secret ? keys.find((k) => k.id === secret.id) : undefined;
  const shapeUser = spec.user ? listed?.user?.id : undefined;
  if (secret && listed && provenBy(listed, secret.key) && hasSpecShape(listed, spec, shapeUser, parent)) {
    owned.add(listed.id);
  }
  return owned;
}

export function planAuthKey(parent: K8sObject, spec: AuthKeySpec, observed: AuthKeyObservation): AuthKeyPlan {
  const recorded = new Set(statusKeyIds(parent));
  if (!observed.ok) {
    // refused (a withdrawn grant, a user that no longer lists the namespace, a lifetime past the Tailnet's bound):
    // the keys it minted are expired on this sync, nothing else (issue 31)
    const keys = observed.withdraw?.keys;
    if (!keys?.ok) return { retire: [], owned: recorded };
    const owned = ownedForCleanup(parent, spec, observed.secret, keys.value);
    return { retire: planRetireAll(owned, keys.value, observed.now), owned };
  }
  const { keys, secret, now } = observed;
  if (!keys.ok) {
    const wanted = mintWanted(secret, now);
    return {
      retire: [],
      owned: recorded,
      ...(wanted ? { mint: wanted, blocked: `the key list could not be read (${keys.error.message})` } : {}),
    };
  }
  const listed = secret ? keys.value.find((k) => k.id === secret.id) : undefined;
  const proven = secret && listed && provenBy(listed, secret.key) ? listed : undefined;
  const owned = new Set(recorded);
  if (proven && hasSpecShape(proven, spec, observed.userId, parent)) owned.add(proven.id);
  const retire =
    proven && owned.has(proven.id)
      ? keys.value
          .filter((k) => owned.has(k.id) && k.id !== proven.id && !listedExpired(k, now) && byAge(k, proven) < 0)
          .sort(byAge)
          .map((k) => k.id)
      : [];
  // a key the listing does not prove (absent, expired by an admin, another key pasted in) is replaced — but a
  // list read before the key existed (another replica's mint, this replica's cache) proves nothing
  const fresh = secret !== undefined && keys.at.getTime() > secret.createdAt.getTime() + LISTING_MARGIN_MS;
  const revoked = secret && ((!proven && (listed !== undefined || fresh)) || (proven && listedExpired(proven, now)));
  // spec.tags, user or flags changed: the key in the Secret no longer is what the spec asks for
  const changed = proven && !hasSpecShape(proven, spec, observed.userId, parent);
  const expires = proven ? Date.parse(proven.expiration ?? "") : Number.NaN;
  const times = Number.isNaN(expires)
    ? undefined
    : { expiresAt: new Date(expires), renewAt: new Date(expires - spec.renewBeforeSeconds * 1000) };
  const mint = revoked ? "revoked" : changed ? "changed" : mintWanted(secret, now, times?.renewAt);
  const lost = mint && (!secret || proven) ? undelivered(keys.value, owned, proven, now) : [];
  return {
    retire: [...retire, ...lost],
    owned,
    ...(proven ? { current: proven } : {}),
    ...(times ? { times } : {}),
    ...(mint ? { mint } : {}),
  };
}

/**
 * At most one undelivered key per object (issue 31): before a mint, the object's keys newer than the one its
 * Secret is proven to hold (or any, without a Secret) and older than the pending grace are keys whose answer was
 * lost (or whose Secret could not be written); nobody holds them, so they are expired rather than left valid
 * beside the next one. A younger one is another replica's mint on its way (act: pendingKey waits for it).
 */
function undelivered(
  listed: readonly HsPreAuthKey[],
  owned: ReadonlySet<string>,
  proven: HsPreAuthKey | undefined,
  now: Date,
): string[] {
  const before = now.getTime() - PENDING_KEY_GRACE_MS;
  return listed
    .filter(
      (k) =>
        owned.has(k.id) &&
        k.id !== proven?.id &&
        !listedExpired(k, now) &&
        (!proven || byAge(k, proven) > 0) &&
        Date.parse(k.createdAt ?? "") < before,
    )
    .sort(byAge)
    .map((k) => k.id);
}

/** No key yet, or past the renewal time (Headscale's, when the key is proven; else the Secret's own record). */
function mintWanted(secret: ObservedAuthKeySecret | undefined, now: Date, renewAt?: Date) {
  if (!secret) return "missing" as const;
  if (now.getTime() >= (renewAt ?? secret.renewAt).getTime()) return "due" as const;
  return undefined;
}

/** What finalize expires: every key this object owns that Headscale still lists valid. */
export function planRetireAll(owned: ReadonlySet<string>, keys: readonly HsPreAuthKey[], now: Date): string[] {
  return keys
    .filter((k) => owned.has(k.id) && !listedExpired(k, now))
    .sort(byAge)
    .map((k) => k.id);
}
