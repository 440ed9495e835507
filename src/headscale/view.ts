/**
 * The Headscale snapshot cache (architecture.md "Observe"): one `HeadscaleView` per connection, shared by every
 * sync in the process. Each part (nodes, policy, …) is fetched lazily, kept for `cacheTTLSeconds` (the slow
 * parts for `slowPartTTLSeconds`, see SLOW_PARTS), and single-flight, so a wave of a thousand syncs costs one
 * request per part. Failures are observations, never thrown, and are kept only briefly so a recovered server is
 * seen quickly.
 */

import { createHash } from "node:crypto";
import type { Dispatcher } from "undici";
import { CachedPart } from "./cached-part.js";
import {
  type Capabilities,
  detectCapabilities,
  isEmptyDatabasePolicy,
  type Outcome,
  outcomeOf,
  PROBE_POLICY,
} from "./capabilities.js";
import {
  type CreatePreAuthKeyInput,
  type CreateUserInput,
  createHeadscaleClient,
  type HeadscaleClient,
} from "./client.js";
import type { HeadscaleError, Obs } from "./errors.js";
import type { RequestMetric } from "./http.js";
import { appendKey, keyById } from "./lists.js";
import type { HsApiKey, HsNode, HsPolicy, HsPreAuthKey, HsUser } from "./types.js";

/** An observation: a value or the error that prevented it, stamped with when it was made. */

export interface HeadscaleConnection {
  url: string;
  apiKey: string;
  ca?: string;
}

/** What each cached part holds. */
interface PartValues {
  apiHealth: { databaseConnectivity: boolean };
  nodes: HsNode[];
  users: HsUser[];
  policy: HsPolicy | null;
  apiKeys: HsApiKey[];
  preAuthKeys: HsPreAuthKey[];
  /** The `{}` probe's verdict: only whether it was accepted. */
  policyCheck: undefined;
}

export type ViewPart = keyof PartValues;

export interface HeadscaleViewsOptions {
  /** Per-request timeout of every client. */
  timeoutMs: number;
  /** How long a successful observation is reused. */
  cacheTTLSeconds: number;
  /** How long a successful observation of a slow part (SLOW_PARTS) is reused; default and floor: cacheTTLSeconds. */
  slowPartTTLSeconds?: number;
  /** Injectable clock for cache expiry and `Obs.at`. */
  now?: () => Date;
  onRequest?: (metric: RequestMetric) => void;
  /** Dispatcher per connection (tests: a MockAgent); default: each client owns an undici Agent. */
  dispatcherFactory?: (conn: { url: string; ca?: string }) => Dispatcher;
  /** GET retries per client (see HeadscaleClientOptions.retries). */
  retries?: number;
}

/**
 * Parts re-read on the slow cadence (issue 25: every authenticated call costs Headscale a bcrypt check of the
 * API key, juanfont/headscale hscontrol/db/api_key.go validateAPIKey, and the key list is its largest answer).
 * Users and API keys change rarely, and through this view when it is us (a write drops the part). /health only
 * says whether the server answers: any failed read of another part says so sooner, and drops these parts
 * (noticeFailure) so the next Tailnet sync re-reads them. The pre-auth key list changes under us through
 * other replicas' mints, nodes using keys and expiries: this view appends its own mints, its expiries drop the
 * list, and every mint decision reads the list fresh (src/kinds/shared/authkey.ts freshKeyList), never from
 * here; what a stale cached list can delay is noticing a key an administrator expired (a key used is seen with
 * the node list: checkKeysUsed).
 */
export const SLOW_PARTS: readonly ViewPart[] = ["apiHealth", "users", "apiKeys", "preAuthKeys"];
/** Slow parts dropped when another part's read fails as if the server were down (not the key list). */
const HEALTH_PARTS: readonly ViewPart[] = ["apiHealth", "users", "apiKeys"];

/** A view not used for this long (and at least 10 TTLs) is closed on the next `view()` call. */
const MIN_IDLE_EVICTION_MS = 10 * 60 * 1000;

export class HeadscaleViews {
  private readonly views = new Map<string, { view: HeadscaleView; lastUsed: number }>();
  private readonly now: () => Date;

  constructor(private readonly opts: HeadscaleViewsOptions) {
    this.now = opts.now ?? (() => new Date());
  }

  /** The shared view for a connection; keyed by a hash so the API key is never held as a map key. */
  view(conn: HeadscaleConnection): HeadscaleView {
    const nowMs = this.now().getTime();
    this.evictIdle(nowMs);
    const key = connectionKey(conn);
    const existing = this.views.get(key);
    if (existing) {
      existing.lastUsed = nowMs;
      return existing.view;
    }
    const client = createHeadscaleClient({
      url: conn.url,
      apiKey: conn.apiKey,
      ca: conn.ca,
      timeoutMs: this.opts.timeoutMs,
      retries: this.opts.retries,
      onRequest: this.opts.onRequest,
      dispatcher: this.opts.dispatcherFactory?.({ url: conn.url, ca: conn.ca }),
    });
    const ttlMs = this.opts.cacheTTLSeconds * 1000;
    const slowTtlMs = Math.max(ttlMs, (this.opts.slowPartTTLSeconds ?? this.opts.cacheTTLSeconds) * 1000);
    const view = new HeadscaleView(client, ttlMs, this.now, slowTtlMs);
    this.views.set(key, { view, lastUsed: nowMs });
    return view;
  }

  /** Number of live views (for tests and debugging). */
  get size(): number {
    return this.views.size;
  }

  /** Closes every client. The cache uses no timers, so nothing else is left running. */
  async close(): Promise<void> {
    const views = [...this.views.values()];
    this.views.clear();
    await Promise.all(views.map((entry) => entry.view.client.close()));
  }

  private evictIdle(nowMs: number): void {
    const idleMs = Math.max(MIN_IDLE_EVICTION_MS, 10 * this.opts.cacheTTLSeconds * 1000);
    for (const [key, entry] of this.views) {
      if (nowMs - Math.max(entry.lastUsed, entry.view.lastUsedMs) > idleMs) {
        this.views.delete(key);
        void entry.view.client.close();
      }
    }
  }
}

export function connectionKey(conn: HeadscaleConnection): string {
  return createHash("sha256")
    .update(`${conn.url}|${conn.apiKey}|${conn.ca ?? ""}`)
    .digest("hex");
}

export class HeadscaleView {
  private readonly parts: { [P in ViewPart]: CachedPart<PartValues[P]> };
  /** Last time any part was read, in clock milliseconds. */
  lastUsedMs = 0;
  /** What syncs remember between each other on this connection (see SoftState); dies with the view. */
  readonly soft = new SoftState();

  constructor(
    readonly client: HeadscaleClient,
    ttlMs: number,
    private readonly now: () => Date,
    slowTtlMs = ttlMs,
  ) {
    const onFailure = (error: HeadscaleError) => this.noticeFailure(error);
    const part = <T>(name: ViewPart, load: () => Promise<T>) =>
      new CachedPart<T>(load, SLOW_PARTS.includes(name) ? slowTtlMs : ttlMs, now, onFailure);
    this.parts = {
      apiHealth: part("apiHealth", () => client.apiHealth()),
      nodes: part("nodes", async () => this.checkKeysUsed(await client.nodes.list())),
      users: part("users", () => client.users.list()),
      policy: part("policy", () => livePolicy(client)),
      apiKeys: part("apiKeys", () => client.apiKeys.list()),
      preAuthKeys: part("preAuthKeys", () => client.preAuthKeys.list()),
      policyCheck: part("policyCheck", async () => {
        await client.policy.check(PROBE_POLICY);
        return undefined;
      }),
    };
  }

  /** GET /api/v1/health: key validity and database connectivity. */
  apiHealth(): Promise<Obs<{ databaseConnectivity: boolean }>> {
    return this.get("apiHealth");
  }

  /** All nodes from ListNodes (with subnetRoutes). */
  nodes(): Promise<Obs<HsNode[]>> {
    return this.get("nodes");
  }

  users(): Promise<Obs<HsUser[]>> {
    return this.get("users");
  }

  /** The live policy; `null` = database mode with no policy stored yet (Headscale's "acl policy not found"). */
  policy(): Promise<Obs<HsPolicy | null>> {
    return this.get("policy");
  }

  apiKeys(): Promise<Obs<HsApiKey[]>> {
    return this.get("apiKeys");
  }

  preAuthKeys(): Promise<Obs<HsPreAuthKey[]>> {
    return this.get("preAuthKeys");
  }

  /** Detected from the cached node list and policy plus a `{}` policy/check probe (one per TTL). Always ok. */
  async capabilities(): Promise<Obs<Capabilities>> {
    const [nodes, policy, policyCheck] = await Promise.all([this.nodes(), this.policy(), this.get("policyCheck")]);
    return { ok: true, value: detectCapabilities({ nodes, policy, policyCheck }), at: this.now() };
  }

  // Writes and uncached reads. Every write goes through one of these: each settles into an Outcome (never
  // throws) and drops the cached part it changed, also when the answer was lost (a timeout may have been
  // applied); only a definite refusal (an HTTP status below 500 but 404) leaves the cache as it was.

  /** DELETE a node. */
  deleteNode(id: string): Promise<Outcome<void>> {
    return this.write("nodes", this.client.nodes.delete(id));
  }

  /**
   * Rename a node (its givenName, the MagicDNS label). Like every node write it drops the cached node list, also
   * on a refusal: 0.29 answers a taken or invalid name with a 500 (hscontrol/state/state.go RenameNode).
   */
  renameNode(id: string, name: string): Promise<Outcome<HsNode>> {
    return this.write("nodes", this.client.nodes.rename(id, name));
  }

  /** Replace a node's whole approved-route set (the caller does the read-modify-write). */
  approveRoutes(id: string, routes: string[]): Promise<Outcome<HsNode>> {
    return this.write("nodes", this.client.nodes.approveRoutes(id, routes));
  }

  /**
   * Create a tagged pre-auth key; the value carries the secret (shown once). A created key is added to the cached
   * key list (and to a read of it in flight, which may have started before the key existed) in the form Headscale
   * lists it, secret masked, instead of dropping the list: dropping it made every sync after a mint re-read every
   * key, so a fresh install of n objects read n lists of up to n keys (issue 25). An answer lost or refused drops
   * the list as any write does. Reads that must see other replicas' mints use `freshPreAuthKeys`, never this cache.
   */
  async createPreAuthKey(input: CreatePreAuthKeyInput): Promise<Outcome<HsPreAuthKey>> {
    const outcome = await outcomeOf(this.client.preAuthKeys.create(input));
    if (!outcome.ok) return this.settleWrite("preAuthKeys", outcome);
    const listed = { ...outcome.value, key: maskedKey(outcome.value.key) };
    this.parts.preAuthKeys.amend((keys) => appendKey(keys, listed));
    return outcome;
  }

  /** Expire a pre-auth key now. */
  expirePreAuthKey(id: string): Promise<Outcome<void>> {
    return this.write("preAuthKeys", this.client.preAuthKeys.expire(id));
  }

  /** Create a local user (TailnetUser); the value is the user as Headscale stored it. */
  createUser(input: CreateUserInput): Promise<Outcome<HsUser>> {
    return this.write("users", this.client.users.create(input));
  }

  /** Delete a user by id (TailnetUser with deletionPolicy Delete, only a user it created). */
  deleteUser(id: string): Promise<Outcome<void>> {
    return this.write("users", this.client.users.delete(id));
  }

  /** Create an API key expiring at `expiration`; the value is the full key (shown once: keep it, never log it). */
  createApiKey(expiration: Date): Promise<Outcome<string>> {
    return this.write("apiKeys", this.client.apiKeys.create(expiration));
  }

  /** Expire an API key now, by its listed prefix. */
  expireApiKey(prefix: string): Promise<Outcome<void>> {
    return this.write("apiKeys", this.client.apiKeys.expire(prefix));
  }

  /** PUT the policy text (database mode only). */
  putPolicy(text: string): Promise<Outcome<HsPolicy>> {
    return this.write("policy", this.client.policy.put(text));
  }

  /** POST policy/check: validate without storing; writes nothing, so the cache is kept. */
  checkPolicy(text: string): Promise<Outcome<void>> {
    return outcomeOf(this.client.policy.check(text));
  }

  /** The pre-auth key list read now, bypassing the cache (and not refreshing it). */
  freshPreAuthKeys(): Promise<Outcome<HsPreAuthKey[]>> {
    return outcomeOf(this.client.preAuthKeys.list());
  }

  /**
   * The live policy read now (null: a database holding no policy yet): the cached one is dropped first and the
   * fresh read takes its place, so the next sync plans from it rather than from the older cached read.
   */
  freshPolicy(): Promise<Obs<HsPolicy | null>> {
    this.invalidate("policy");
    return this.get("policy");
  }

  /**
   * The node list read now, for a read-modify-write of approved routes (approveRoutes replaces the whole set):
   * the cached list is dropped first and the fresh read takes its place.
   */
  freshNodes(): Promise<Obs<HsNode[]>> {
    this.invalidate("nodes");
    return this.get("nodes");
  }

  private async write<T>(part: ViewPart, call: Promise<T>): Promise<Outcome<T>> {
    return this.settleWrite(part, await outcomeOf(call));
  }

  private settleWrite<T>(part: ViewPart, outcome: Outcome<T>): Outcome<T> {
    // A 404 is no refusal of a delete or expire: the object is gone, so the cached list is stale too.
    const status = outcome.ok ? undefined : outcome.error.status;
    const refused = status !== undefined && status < 500 && status !== 404;
    if (!refused) this.invalidate(part);
    if (!outcome.ok) this.noticeFailure(outcome.error);
    return outcome;
  }

  /**
   * A node lists its key used while our cached key list still shows it unused: the list is older than the node,
   * so it is dropped and the next key read is fresh. Keeps what the slow key-list cadence could hide (a key
   * used: egress usedUp, the gateway's bootstrap) as current as the node list. Once used, a key stays used, so
   * this drops the list once per registration, not once per node read.
   */
  private checkKeysUsed(nodes: HsNode[]): HsNode[] {
    const keys = this.parts.preAuthKeys.cachedValue();
    if (!keys) return nodes;
    for (const n of nodes) {
      const listed = n.preAuthKey?.used ? keyById(keys, n.preAuthKey.id) : undefined;
      if (listed && !listed.used) {
        this.parts.preAuthKeys.dropSuccess();
        break;
      }
    }
    return nodes;
  }

  /**
   * A call that failed as if the server were down or our key refused (no answer, 5xx, 401) drops the health
   * parts held from before, so the next sync reading them (the Tailnet: ApiReachable, ApiKeyValid) asks again
   * instead of reusing a minute-old success. A part's own failure is kept (briefly, cached-part.ts MAX_FAILURE_TTL_MS).
   */
  private noticeFailure(error: HeadscaleError): void {
    const status = error.status;
    if (status !== undefined && status < 500 && status !== 401) return;
    for (const p of HEALTH_PARTS) this.parts[p].dropSuccess();
  }

  /** Drops cached parts (all when no part is named), e.g. after our own writes; in-flight reads are not reused. */
  invalidate(part?: ViewPart): void {
    if (part) this.parts[part].invalidate();
    else for (const p of Object.values(this.parts)) p.invalidate();
  }

  private get<P extends ViewPart>(name: P): Promise<Obs<PartValues[P]>> {
    this.lastUsedMs = this.now().getTime();
    return (this.parts[name] as CachedPart<PartValues[P]>).get();
  }
}

async function livePolicy(client: HeadscaleClient): Promise<HsPolicy | null> {
  try {
    return await client.policy.get();
  } catch (error) {
    if (isEmptyDatabasePolicy(error)) return null;
    throw error;
  }
}

/** How Headscale lists a key: `hskey-auth-<12-character prefix>-***` (0.28+); never the secret. */
export function maskedKey(key: string): string {
  const m = /^(hskey-auth-[A-Za-z0-9_-]{12})-/.exec(key);
  return m ? `${m[1]}-***` : "***";
}

// Soft state: memory a sync may lose at any time (a restart, an evicted view) at the cost of one more request,
// never of a wrong answer. Kept on the view so it lives and dies with the connection it is about; only what is
// about Headscale's requests lives here (a kind's own memory of a connection lives with the kind, e.g.
// src/kinds/composite/tailnet/soft-state.ts).

export class SoftState {
  /** The fresh key-list reads shared by concurrent mints (src/kinds/shared/authkey.ts freshKeyList). */
  readonly keyListFlight: KeyListFlight = {};
  /**
   * The tail of this connection's approve_routes queue (src/kinds/composite/site/act.ts): approvals and withdrawals are
   * read-modify-writes of a node's whole approved set, run one at a time within the process.
   */
  readonly routeWrites: { tail?: Promise<unknown> } = {};
}

/** A fresh pre-auth key list read in flight, and the one queued to start after it. */
export interface KeyListFlight {
  /** The read in flight; it started before anyone arriving now, so they wait for `next`. */
  inFlight?: Promise<Outcome<HsPreAuthKey[]>>;
  /** The read that starts once `inFlight` settled; joined by every caller arriving before it starts. */
  next?: Promise<Outcome<HsPreAuthKey[]>>;
}
