/**
 * The replica rule's half that reads Headscale's key list before a mint: a key another replica minted for
 * this object moments ago is waited for, not minted again. One fresh read serves the concurrent mints of a
 * connection (freshKeyList), and one pass over it answers all of them (pendingKeys).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Outcome } from "../../headscale/capabilities.js";
import { hasKeyIndex, keysWithTag } from "../../headscale/lists.js";
import type { HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { attachedMemo } from "../../k8s/attached.js";

/**
 * How long a key minted for this object and not yet among its observed Secrets counts as "on its way": the
 * other replica's answer is applied and reaches the informer cache within seconds; a Secret still missing
 * after this was lost (an answer Metacontroller dropped, a Secret deleted by hand) and a key is minted anew.
 */
export const PENDING_KEY_GRACE_MS = 60_000;

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

/** What a mint would mint (pendingKey): the key another replica's mint of this rotation looks like. */
export interface PendingWant {
  tags: readonly string[];
  reusable: boolean;
  ephemeral: boolean;
  notBefore: Date;
  now: Date;
  /** The user id a user's key is minted for (TailnetAuthKey spec.user); absent: a tagged key, no user. */
  user?: string;
}

/** What pendingKey reads of the object's current key (authkey.ts ObservedKey). */
export interface CurrentKey {
  keyId: string;
  createdAt: Date;
}

/** One mint's question to a fresh key list (freshKeyList, pendingKeyFor). */
export interface PendingAsk {
  want: PendingWant;
  current?: CurrentKey;
}

const sinceOf = (want: PendingWant, current?: CurrentKey) =>
  Math.max(want.notBefore.getTime(), current?.createdAt.getTime() ?? 0, want.now.getTime() - PENDING_KEY_GRACE_MS);

/** Whether the listed key is one another replica minted for this object since `since` (pendingKey's rule). */
function isPending(k: HsPreAuthKey, want: PendingWant, current: CurrentKey | undefined, since: number): boolean {
  const tag = want.tags[0];
  if (k.aclTags.length !== want.tags.length || (tag !== undefined && !k.aclTags.includes(tag))) return false;
  const user = k.user === null ? undefined : k.user.id;
  if (k.id === current?.keyId || user !== want.user || !sameSet(k.aclTags, want.tags)) return false;
  if (k.reusable !== want.reusable || k.ephemeral !== want.ephemeral) return false;
  if (k.expiration !== null && Date.parse(k.expiration) <= want.now.getTime()) return false;
  const created = Date.parse(k.createdAt ?? "");
  return !Number.isNaN(created) && created >= since;
}

/** The newest (highest id on ties), so both replicas wait for the same one. */
const newest = (candidates: HsPreAuthKey[]) =>
  candidates.sort(
    (a, b) => Date.parse(b.createdAt ?? "") - Date.parse(a.createdAt ?? "") || Number(b.id) - Number(a.id),
  )[0];

/**
 * Pure: a key in Headscale's list that another replica minted for this object in this rotation. Two replicas
 * share no memory, and Metacontroller may send the next sync of the object to the other replica before the
 * first one's child Secret reached the informer cache, so the `children` it sees still lack the new key. Such a
 * key is recognisable by what every replica mints the same way: exactly this object's tags, the same flags, no
 * user (or exactly the user a TailnetAuthKey names), unexpired, not the observed current key, created after the current key (or the object), and recently.
 */
export function pendingKey(
  listed: readonly HsPreAuthKey[],
  want: PendingWant,
  current?: CurrentKey,
): HsPreAuthKey | undefined {
  const since = sinceOf(want, current);
  // A list already indexed (the view's cached one) is looked up by tag; a fresh one is scanned (pendingKeys reads
  // it once for all the mints that share it)
  const tag = want.tags[0];
  const indexed = tag !== undefined && hasKeyIndex(listed);
  const pool = indexed ? keysWithTag(listed, tag) : listed;
  const candidates: HsPreAuthKey[] = [];
  // read in place from the first key that may be recent: a copy of that end was a 160 KB array a mint at 20,000
  // keys, straight into V8's old generation (issue 36: the round after an install retries thousands of mints)
  for (let i = indexed ? 0 : firstKeySince(listed, since); i < pool.length; i++) {
    if (isPending(pool[i], want, current, since)) candidates.push(pool[i]);
  }
  return newest(candidates);
}

/**
 * pendingKey for each ask, in one pass over the list: the mints sharing a fresh read each scanned all of it, and
 * right after an install every key is recent, so at 20,000 keys that was a walk of 20,000 scattered objects per mint
 * (issue 36: a fifth of the loop's long turns in the round after an install). Each ask is looked up by its first
 * tag, and answered exactly as pendingKey answers it.
 */
export function pendingKeys(
  listed: readonly HsPreAuthKey[],
  asks: readonly PendingAsk[],
): (HsPreAuthKey | undefined)[] {
  if (asks.length < 2 || hasKeyIndex(listed) || asks.some((a) => a.want.tags[0] === undefined)) {
    return asks.map((a) => pendingKey(listed, a.want, a.current));
  }
  const sinces = asks.map((a) => sinceOf(a.want, a.current));
  const starts = sinces.map((since) => firstKeySince(listed, since));
  const byTag = new Map<string, number[]>();
  asks.forEach((a, i) => {
    const tag = a.want.tags[0] as string;
    const had = byTag.get(tag);
    if (had) had.push(i);
    else byTag.set(tag, [i]);
  });
  const found: HsPreAuthKey[][] = asks.map(() => []);
  for (let k = Math.min(...starts); k < listed.length; k++) {
    const key = listed[k];
    const tags = key.aclTags;
    for (let j = 0; j < tags.length; j++) {
      const hit = byTag.get(tags[j]);
      // each distinct tag once: an ask is judged once per key
      if (!hit || tags.indexOf(tags[j]) !== j) continue;
      for (const i of hit) {
        if (k >= starts[i] && isPending(key, asks[i].want, asks[i].current, sinces[i])) found[i].push(key);
      }
    }
  }
  return found.map(newest);
}

/** Per fresh read: the asks of the mints that shared it, and their answers once one of them asked. */
const readBatches = attachedMemo<
  readonly HsPreAuthKey[],
  { asks: readonly PendingAsk[]; answers?: (HsPreAuthKey | undefined)[] }
>("pendingAsks");

/**
 * pendingKey for a mint that registered `ask` with freshKeyList: the answers of every mint sharing the read are
 * found in one pass (pendingKeys) by the first of them to ask. Any other list or ask is answered alone.
 */
export function pendingKeyFor(listed: readonly HsPreAuthKey[], ask: PendingAsk): HsPreAuthKey | undefined {
  const batch = readBatches.peek(listed);
  const at = batch ? batch.asks.indexOf(ask) : -1;
  if (!batch || at < 0) return pendingKey(listed, ask.want, ask.current);
  batch.answers ??= pendingKeys(listed, batch.asks);
  return batch.answers[at];
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
  return idsRiseFrom(listed) <= Math.max(lo, 0) ? lo + 1 : 0;
}

/** Per list array: from which index on its ids rise to its end, for the length it had then (idsRiseFrom). */
const risingTails = attachedMemo<readonly HsPreAuthKey[], { length: number; from: number }>("keyIdsRiseFrom");

/**
 * The first index from which the keys' ids rise to the end of the list, found once per list (the mints sharing
 * one fresh read each walked all of it: at 20,000 recent keys a `Number` per key, four times a read).
 */
function idsRiseFrom(listed: readonly HsPreAuthKey[]): number {
  const memo = risingTails.of(listed, () => ({ length: -1, from: 0 }));
  if (memo.length !== listed.length) {
    let from = listed.length;
    let above = Number.POSITIVE_INFINITY;
    for (let i = listed.length - 1; i >= 0; i--) {
      const id = Number(listed[i].id);
      if (!(id < above)) break;
      above = id;
      from = i;
    }
    memo.length = listed.length;
    memo.from = from;
  }
  return memo.from;
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
export function freshKeyList(view: HeadscaleView, ask?: PendingAsk): Promise<Outcome<HsPreAuthKey[]>> {
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
  // a read that has not started yet starts after now: join it (and its batch of asks, pendingKeyFor)
  if (f.next) {
    if (ask) askingNext.peek(f.next)?.push(ask);
    return f.next;
  }
  // Otherwise queue one, to start once the read in flight settled and at least KEY_LIST_GATHER_MS from now:
  // starting later is always safe, and the mints of the other hooks in flight (Metacontroller's workers come
  // back within milliseconds) join it instead of each needing the next one (issue 25: 5 workers, 20,000
  // first mints: a read per 1.6 mints without the wait, of a list up to 20,000 keys long).
  const asks: PendingAsk[] = ask ? [ask] : [];
  const next = Promise.all([f.inFlight, sleep(KEY_LIST_GATHER_MS)])
    .then(() => {
      f.next = undefined;
      return start();
    })
    .then((read) => {
      // before any caller resumes: the asks of everybody who joined this read go with its list
      if (read.ok && asks.length) readBatches.of(read.value, () => ({ asks }));
      return read;
    });
  askingNext.of(next, () => asks);
  f.next = next;
  return next;
}

/** The asks registered with a queued read (freshKeyList), until it starts. */
const askingNext = attachedMemo<Promise<Outcome<HsPreAuthKey[]>>, PendingAsk[]>("queuedAsks");

/** How long a fresh key-list read waits for more mints to share it (freshKeyList). */
export const KEY_LIST_GATHER_MS = 10;
