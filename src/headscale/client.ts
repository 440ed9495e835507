/**
 * A narrow Headscale `/api/v1` client, grouped by resource like Tailscale's k8s-operator tsclient: only the calls
 * the operator makes. Every method rejects with `HeadscaleError` (see errors.ts); no method logs or returns the
 * API key. Request/response shapes follow the Swagger document Headscale generates (`juanfont/headscale
 * gen/openapiv2/headscale/v1/headscale.swagger.json` at v0.29.x).
 */

import { createRequester, type Requester, type RequesterOptions } from "./http.js";
import { ReusingListDecoder } from "./list-memo.js";
import {
  DecodeProblem,
  decodeApiHealth,
  decodeApiKeyList,
  decodeCreatedPreAuthKey,
  decodeEmpty,
  decodeNodeList,
  decodeNodeResponse,
  decodePolicy,
  decodePreAuthKey,
  decodePreAuthKeyList,
  decodeServerHealth,
  decodeUser,
  decodeUserList,
  type HsApiKey,
  type HsNode,
  type HsPolicy,
  type HsPreAuthKey,
  type HsUser,
  ListInterner,
} from "./types.js";

/**
 * url: base URL, http or https (a path prefix of a reverse proxy is kept; anything else fails every
 * call); ca: PEM bundle to trust for https; timeoutMs: per-attempt budget for connect + headers +
 * body; retries: extra attempts for GETs only, on transport errors and 502/503/504 (default 2,
 * backoff 50ms·2^n); dispatcher: used instead of an own undici Agent (e.g. a MockAgent), never
 * closed by the client; onRequest: called once per HTTP attempt, for metrics.
 */
export type HeadscaleClientOptions = RequesterOptions;

export interface CreatePreAuthKeyInput {
  aclTags: string[];
  /** A user id (a user's key); omitted for a tagged key. Headscale 0.28+ tags a node whose key has tags. */
  user?: string;
  reusable: boolean;
  ephemeral: boolean;
  /** Always sent: Headscale stores year 0001 (already expired) when it is omitted. */
  expiration: Date;
}

export interface CreateUserInput {
  name: string;
  displayName?: string;
  email?: string;
}

export interface HeadscaleClient {
  /** GET /health (no auth): server liveness, `{status:"pass"}`. */
  health(): Promise<{ status: string }>;
  /** GET /api/v1/health: API key validity and database connectivity in one call (0.27+). */
  apiHealth(): Promise<{ databaseConnectivity: boolean }>;
  nodes: {
    /** GET /api/v1/node: every node, sorted by id; the only read that fills `subnetRoutes`. */
    list(): Promise<HsNode[]>;
    /** DELETE /api/v1/node/{nodeId}. */
    delete(id: string): Promise<void>;
    /** POST /api/v1/node/{nodeId}/expire: expire now; the client must re-authenticate. */
    expire(id: string): Promise<HsNode>;
    /** POST /api/v1/node/{nodeId}/tags: replace the node's tags (each must be in the policy's tagOwners). */
    setTags(id: string, tags: string[]): Promise<HsNode>;
    /** POST /api/v1/node/{nodeId}/approve_routes: replace-all approved set; the caller does read-modify-write. */
    approveRoutes(id: string, routes: string[]): Promise<HsNode>;
    /**
     * POST /api/v1/node/{nodeId}/rename/{newName}: set the node's givenName (its MagicDNS label). 0.29 refuses an
     * invalid DNS label and a name another node holds (500 `node name is not unique: <name>`, classification
     * duplicate); hscontrol/state/state.go RenameNode.
     */
    rename(id: string, name: string): Promise<HsNode>;
  };
  users: {
    /** GET /api/v1/user: every user, sorted by id. */
    list(): Promise<HsUser[]>;
    /**
     * POST /api/v1/user `{name, displayName, email}`: a local user (no provider). v1 has no call that changes a
     * user's display name or e-mail afterwards, only a rename (hscontrol/grpcv1.go CreateUser, RenameUser).
     */
    create(input: CreateUserInput): Promise<HsUser>;
    /** DELETE /api/v1/user/{id}: refused while the user owns nodes; deletes the user's pre-auth keys. */
    delete(id: string): Promise<void>;
  };
  apiKeys: {
    /** GET /api/v1/apikey: API keys with masked prefixes and expirations. */
    list(): Promise<HsApiKey[]>;
    /**
     * POST /api/v1/apikey `{expiration}`: a new API key; the full key is in this answer only. Always send the
     * expiration: 0.29 stores a missing one as 0001-01-01, a key born expired (hscontrol/grpcv1.go CreateApiKey).
     */
    create(expiration: Date): Promise<string>;
    /** POST /api/v1/apikey/expire `{prefix}` (the listed `hskey-api-<prefix>-***` form or the bare prefix). */
    expire(prefix: string): Promise<void>;
  };
  preAuthKeys: {
    /** POST /api/v1/preauthkey: a tagged key without user; the result carries the full secret (shown once). */
    create(input: CreatePreAuthKeyInput): Promise<HsPreAuthKey>;
    /** GET /api/v1/preauthkey: every key, masked (0.28+). */
    list(): Promise<HsPreAuthKey[]>;
    /** POST /api/v1/preauthkey/expire with `{id}` (0.28+). */
    expire(id: string): Promise<void>;
  };
  policy: {
    /** GET /api/v1/policy: the live HuJSON text; `updatedAt` null in file mode. */
    get(): Promise<HsPolicy>;
    /** PUT /api/v1/policy: store a new version (database mode only) and re-run auto-approval. */
    put(text: string): Promise<HsPolicy>;
    /** POST /api/v1/policy/check (0.29+): validate without persisting; a 400 is classification policyInvalid. */
    check(text: string): Promise<void>;
  };
  /** Closes the client's own connection pool; later calls fail with a transport error. */
  close(): Promise<void>;
}

export function createHeadscaleClient(opts: HeadscaleClientOptions): HeadscaleClient {
  const http = createRequester(opts);
  return {
    health: () => http.call({ method: "GET", template: "/health", auth: false, decode: decodeServerHealth }),
    apiHealth: () => http.call({ method: "GET", template: "/api/v1/health", decode: decodeApiHealth }),
    nodes: nodeCalls(http),
    users: userCalls(http),
    apiKeys: apiKeyCalls(http),
    preAuthKeys: preAuthKeyCalls(http),
    policy: policyCalls(http),
    close: () => http.close(),
  };
}

function nodeCalls(http: Requester): HeadscaleClient["nodes"] {
  const nodeId = (id: string) => ({ nodeId: id });
  return {
    list: () => http.call({ method: "GET", template: "/api/v1/node", decode: decodeNodeList }),
    delete: (id) =>
      http.call({ method: "DELETE", template: "/api/v1/node/{nodeId}", params: nodeId(id), decode: decodeEmpty }),
    expire: (id) =>
      http.call({
        method: "POST",
        template: "/api/v1/node/{nodeId}/expire",
        params: nodeId(id),
        decode: decodeNodeResponse,
      }),
    setTags: (id, tags) =>
      http.call({
        method: "POST",
        template: "/api/v1/node/{nodeId}/tags",
        params: nodeId(id),
        body: { tags },
        decode: decodeNodeResponse,
      }),
    approveRoutes: (id, routes) =>
      http.call({
        method: "POST",
        template: "/api/v1/node/{nodeId}/approve_routes",
        params: nodeId(id),
        body: { routes },
        decode: decodeNodeResponse,
      }),
    rename: (id, name) =>
      http.call({
        method: "POST",
        template: "/api/v1/node/{nodeId}/rename/{newName}",
        params: { nodeId: id, newName: name },
        decode: decodeNodeResponse,
      }),
  };
}

function userCalls(http: Requester): HeadscaleClient["users"] {
  return {
    list: () => http.call({ method: "GET", template: "/api/v1/user", decode: decodeUserList }),
    create: (input) =>
      http.call({
        method: "POST",
        template: "/api/v1/user",
        body: {
          name: input.name,
          ...(input.displayName ? { displayName: input.displayName } : {}),
          ...(input.email ? { email: input.email } : {}),
        },
        decode: decodeCreatedUser,
      }),
    delete: (id) => http.call({ method: "DELETE", template: "/api/v1/user/{id}", params: { id }, decode: decodeEmpty }),
  };
}

function apiKeyCalls(http: Requester): HeadscaleClient["apiKeys"] {
  return {
    list: () => http.call({ method: "GET", template: "/api/v1/apikey", decode: decodeApiKeyList }),
    create: (expiration) =>
      http.call({
        method: "POST",
        template: "/api/v1/apikey",
        body: { expiration: toRfc3339(expiration) },
        decode: decodeCreatedApiKey,
      }),
    expire: (prefix) =>
      http.call({ method: "POST", template: "/api/v1/apikey/expire", body: { prefix }, decode: decodeEmpty }),
  };
}

function preAuthKeyCalls(http: Requester): HeadscaleClient["preAuthKeys"] {
  // one interner for the client's life: appended keys share the users of the ones decoded before (types.ts)
  const keyInterner = new ListInterner();
  const keyList = new ReusingListDecoder("preAuthKeys", (v) => decodePreAuthKey(v, keyInterner));
  return {
    create: async (input) =>
      http.call({
        method: "POST",
        template: "/api/v1/preauthkey",
        body: {
          ...(input.user ? { user: input.user } : {}),
          reusable: input.reusable,
          ephemeral: input.ephemeral,
          expiration: toRfc3339(input.expiration),
          aclTags: input.aclTags,
        },
        decode: decodeCreatedPreAuthKey,
      }),
    // every key, sorted by id: a read after mints is the last one with keys appended (list-memo.ts)
    list: () =>
      http.call<HsPreAuthKey[]>({
        method: "GET",
        template: "/api/v1/preauthkey",
        decode: decodePreAuthKeyList,
        reuse: keyList,
      }),
    expire: (id) =>
      http.call({ method: "POST", template: "/api/v1/preauthkey/expire", body: { id }, decode: decodeEmpty }),
  };
}

function policyCalls(http: Requester): HeadscaleClient["policy"] {
  // An unchanged policy is handed out as the one string it was read as first. Each read decodes a new copy, and
  // what is memoised by the text (the TagKnown owners, the live hash, the parsed sections) kept its own: at 20,000
  // workload objects three 3 MB copies of one policy were live (issue 36). Equal texts are compared once a read.
  let last: string | undefined;
  const decode = (body: unknown): HsPolicy => {
    const p = decodePolicy(body);
    if (p.policy !== last) last = p.policy;
    return { ...p, policy: last };
  };
  return {
    get: () => http.call({ method: "GET", template: "/api/v1/policy", decode }),
    put: (text) => http.call({ method: "PUT", template: "/api/v1/policy", body: { policy: text }, decode }),
    check: (text) =>
      http.call({
        method: "POST",
        template: "/api/v1/policy/check",
        body: { policy: text },
        badRequestAs: "policyInvalid",
        decode: decodeEmpty,
      }),
  };
}

/** The created user (`{"user": User}`). */
function decodeCreatedUser(body: unknown): HsUser {
  const user = body && typeof body === "object" ? (body as Record<string, unknown>).user : undefined;
  const decoded = decodeUser(user);
  if (!decoded.id) throw new DecodeProblem("created user carries no id");
  return decoded;
}

/** The created API key (`{"apiKey": "hskey-api-…"}`); the message of a failure never carries the body. */
function decodeCreatedApiKey(body: unknown): string {
  const key = body && typeof body === "object" ? (body as Record<string, unknown>).apiKey : undefined;
  if (typeof key !== "string" || key.length < 16) throw new DecodeProblem("created API key carries no key");
  return key;
}

/** RFC 3339 in UTC without milliseconds, the form Headscale itself emits. */
function toRfc3339(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new Error("key expiration is not a valid date");
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
