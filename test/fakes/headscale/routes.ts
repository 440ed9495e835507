/**
 * The fake's `/api/v1` handlers, one per Swagger operation the operator uses (plus GetNode), with Headscale
 * 0.29's behaviour and error wording (`juanfont/headscale` v0.29.x hscontrol/grpcv1.go, hscontrol/state/state.go,
 * hscontrol/policy/v2). Handlers are synchronous and pure
 * over `FakeState`; transport concerns (auth, faults, contract check) live in index.ts.
 */

import ipaddr from "ipaddr.js";
import { invalidLabel } from "./labels.js";
import { policyMessageSize } from "./message-size.js";
import { type FakeVersion, normaliseRoutes, type ParsedPolicy, parsePolicy } from "./policy.js";
import { type FakeState, randomUrlSafe, ts, ZERO_TIME } from "./state.js";

export type PolicyMode = "database" | "file";

export interface HandlerContext {
  state: FakeState;
  version: FakeVersion;
  policyMode: PolicyMode;
  now: () => Date;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Parsed JSON body; `{}` when the request had none. */
  body: Record<string, unknown>;
  onPolicyWrite: () => void;
  /** A "databaseError" fault: the database driver's error for this request's own queries. */
  databaseError?: string;
}

export interface FakeResponse {
  status: number;
  body: unknown;
}

export interface FakeRoute {
  method: "GET" | "POST" | "PUT" | "DELETE";
  template: string;
  handle: (ctx: HandlerContext) => FakeResponse;
  /** The handler words database errors itself; otherwise index.ts answers them as a plain 500. */
  databaseErrors?: boolean;
  /**
   * The protobuf sizes of the request and of a 200's answer, held to grpc-go's 4 MiB cap (message-size.ts);
   * only the policy's messages can come near it at the sizes the fake is used with.
   */
  messageSize?: { request?: (body: Record<string, unknown>) => number; response?: (body: unknown) => number };
}

/** A `google.rpc.Status` error with the HTTP status grpc-gateway derives from the code. */
export function rpcError(status: number, code: number, message: string): FakeResponse {
  return { status, body: { code, message, details: [] } };
}

const ok = (body: unknown): FakeResponse => ({ status: 200, body });
const NODE_NOT_FOUND = () => rpcError(404, 5, "node not found");

/**
 * The policy in force (what the policy manager holds): the file, or in database mode a text a failed PUT left in
 * memory, else the newest row; undefined when the database holds none.
 */
export function currentPolicyText(state: FakeState, mode: PolicyMode): string | undefined {
  return mode === "file" ? state.filePolicy : (state.memoryPolicy ?? state.policies.at(-1)?.text);
}

export function currentPolicy(state: FakeState, mode: PolicyMode, version: FakeVersion): ParsedPolicy | undefined {
  const text = currentPolicyText(state, mode);
  if (text === undefined) return undefined;
  const parsed = parsePolicy(text, version);
  return parsed.ok ? parsed.policy : undefined;
}

function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return undefined;
}

function stringArray(body: Record<string, unknown>, name: string): string[] {
  const value = body[name];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

const TAG_SYNTAX = /^tag:[a-z0-9][a-z0-9-]*$/;

export const ROUTES: FakeRoute[] = [
  {
    method: "GET",
    template: "/api/v1/health",
    databaseErrors: true,
    handle: ({ databaseError }) =>
      databaseError !== undefined
        ? rpcError(500, 2, `pinging database: ${databaseError}`)
        : ok({ databaseConnectivity: true }),
  },
  {
    method: "GET",
    template: "/api/v1/node",
    handle: ({ state, query }) => {
      let nodes = sortedById([...state.nodes.values()]);
      const userName = query.get("user");
      if (userName) {
        const matching = [...state.users.values()].filter((u) => u.name === userName);
        if (matching.length === 0) return rpcError(500, 2, "user not found");
        if (matching.length > 1) return rpcError(500, 2, `expected exactly one user, found ${matching.length}`);
        nodes = nodes.filter((n) => n.userId === matching[0].id && n.tags.length === 0);
      }
      return ok({ nodes: nodes.map((n) => state.nodeJson(n, { listing: true })) });
    },
  },
  {
    method: "GET",
    template: "/api/v1/node/{nodeId}",
    handle: ({ state, params }) => {
      const node = state.nodes.get(params.nodeId);
      return node ? ok({ node: state.nodeJson(node) }) : NODE_NOT_FOUND();
    },
  },
  {
    method: "DELETE",
    template: "/api/v1/node/{nodeId}",
    handle: ({ state, params }) => (state.nodes.delete(params.nodeId) ? ok({}) : NODE_NOT_FOUND()),
  },
  {
    method: "POST",
    template: "/api/v1/node/{nodeId}/expire",
    handle: ({ state, params, now }) => {
      const node = state.nodes.get(params.nodeId);
      // Real 0.29.2 (test/real/headscale.test.ts): a plain error, so 500 with gRPC code 2.
      if (!node) return rpcError(500, 2, `node no longer exists in NodeStore: ${params.nodeId}`);
      node.expiry = now();
      return ok({ node: state.nodeJson(node) });
    },
  },
  {
    method: "POST",
    template: "/api/v1/node/{nodeId}/rename/{newName}",
    handle: ({ state, params }) => {
      // 0.29.3 State.RenameNode (hscontrol/state/state.go l.1040): the label is validated first
      // (types.ValidateGivenName → tailscale util/dnsname ValidLabel), then NodeStore.SetGivenName refuses a name
      // another node holds (node_store.go setName). Every error is a plain Go error: 500, code 2.
      const name = params.newName;
      const invalid = invalidLabel(name);
      if (invalid)
        return rpcError(500, 2, `renaming node: ${JSON.stringify(name)} is not a valid DNS label: ${invalid}`);
      const node = state.nodes.get(params.nodeId);
      if (!node) return rpcError(500, 2, `node no longer exists in NodeStore: ${params.nodeId}`);
      for (const other of state.nodes.values()) {
        if (other.id !== node.id && other.givenName === name) {
          return rpcError(500, 2, `node name is not unique: ${name}`);
        }
      }
      node.givenName = name;
      return ok({ node: state.nodeJson(node) });
    },
  },
  {
    method: "POST",
    template: "/api/v1/node/{nodeId}/tags",
    handle: (ctx) => {
      const node = ctx.state.nodes.get(ctx.params.nodeId);
      if (!node) return NODE_NOT_FOUND();
      const tags = [...new Set(stringArray(ctx.body, "tags"))].sort();
      if (tags.length === 0) {
        return rpcError(400, 3, "cannot remove all tags from a node - tagged nodes must have at least one tag");
      }
      const owners = currentPolicy(ctx.state, ctx.policyMode, ctx.version)?.tagOwners ?? new Set<string>();
      const invalid = tags.filter((t) => !TAG_SYNTAX.test(t) || !owners.has(t));
      if (invalid.length > 0) {
        return rpcError(400, 3, `requested tags [${invalid.join(" ")}] are invalid or not permitted`);
      }
      // Tags are identity (0.28+): a tagged node owns no user, and there is no way back through the API.
      node.tags = tags;
      node.userId = null;
      return ok({ node: ctx.state.nodeJson(node) });
    },
  },
  {
    method: "POST",
    template: "/api/v1/node/{nodeId}/approve_routes",
    handle: ({ state, params, body }) => {
      const node = state.nodes.get(params.nodeId);
      // Real 0.29.2 (seen in test/real/headscale.test.ts): state.go's ErrNodeNotInNodeStore, code 3.
      if (!node) return rpcError(400, 3, `node no longer exists in NodeStore: ${params.nodeId}`);
      const routes = stringArray(body, "routes");
      for (const route of routes) {
        if (!ipaddr.isValidCIDR(route))
          return rpcError(500, 2, `parsing route: netip.ParsePrefix("${route}"): invalid`);
      }
      node.approvedRoutes = normaliseRoutes(routes);
      return ok({ node: state.nodeJson(node, { subnetRoutes: true }) });
    },
  },
  {
    method: "GET",
    template: "/api/v1/user",
    handle: ({ state, query }) => {
      let users = sortedById([...state.users.values()]);
      const name = query.get("name");
      const email = query.get("email");
      const id = query.get("id");
      if (name) users = users.filter((u) => u.name === name);
      else if (email) users = users.filter((u) => u.email === email);
      else if (id) users = users.filter((u) => u.id === id);
      return ok({ users: users.map((u) => state.userJson(u)) });
    },
  },
  {
    method: "POST",
    template: "/api/v1/user",
    handle: ({ state, body, now }) => {
      // 0.29 CreateUser (hscontrol/grpcv1.go): always a local user; names are unique among local users only
      // (hscontrol/db/schema.sql partial index), a duplicate is SQLite's constraint error, code 13.
      const name = stringField(body, "name") ?? "";
      if (!name) return rpcError(500, 13, "creating user: creating user: name cannot be empty");
      if ([...state.users.values()].some((u) => u.name === name && !u.providerId)) {
        return rpcError(500, 13, "creating user: creating user: UNIQUE constraint failed: users.name");
      }
      const id = state.nextUserId();
      const user = {
        id,
        name,
        displayName: stringField(body, "displayName") ?? "",
        email: stringField(body, "email") ?? "",
        providerId: "",
        provider: "",
        profilePicUrl: stringField(body, "pictureUrl") ?? "",
        createdAt: now(),
      };
      state.users.set(id, user);
      return ok({ user: state.userJson(user) });
    },
  },
  {
    method: "DELETE",
    template: "/api/v1/user/{id}",
    handle: ({ state, params }) => {
      // 0.29 DeleteUser: unknown id → ErrUserNotFound; a user owning nodes → ErrUserStillHasNodes (tagged
      // nodes own no user); the user's pre-auth keys go with it (hscontrol/db/users.go DestroyUser).
      const user = state.users.get(params.id);
      if (!user) return rpcError(500, 2, "user not found");
      if ([...state.nodes.values()].some((n) => n.userId === user.id)) {
        return rpcError(500, 2, "user not empty: node(s) found");
      }
      for (const [id, key] of state.preAuthKeys) if (key.userId === user.id) state.preAuthKeys.delete(id);
      state.users.delete(user.id);
      return ok({});
    },
  },
  {
    method: "GET",
    template: "/api/v1/apikey",
    handle: ({ state }) => ok({ apiKeys: sortedById([...state.apiKeys.values()]).map((k) => state.apiKeyJson(k)) }),
  },
  {
    method: "POST",
    template: "/api/v1/apikey",
    handle: ({ state, body, now }) => {
      // 0.29 CreateApiKey (hscontrol/grpcv1.go): a missing expiration is the zero time, a key born expired.
      const expiration = parseTimestamp(stringField(body, "expiration")) ?? ZERO_TIME;
      // hskey-api-<12 base64url>-<64 base64url>, shown once (hscontrol/db/api_key.go CreateAPIKey).
      const prefix = randomUrlSafe(12);
      const key = `hskey-api-${prefix}-${randomUrlSafe(64)}`;
      const id = state.nextApiKeyId();
      state.apiKeys.set(id, { id, prefix: `hskey-api-${prefix}-***`, key, expiration, createdAt: now() });
      return ok({ apiKey: key });
    },
  },
  {
    method: "POST",
    template: "/api/v1/apikey/expire",
    handle: ({ state, body, now }) => {
      // 0.29 ExpireApiKey → getAPIKey: exactly one of id and prefix; the prefix in any listed form
      // (hscontrol/db/api_key.go ParseAPIKeyPrefix); an unknown one is gorm's plain "record not found" (code 2).
      const id = stringField(body, "id") ?? "";
      const prefix = stringField(body, "prefix") ?? "";
      const hasId = id !== "" && id !== "0";
      if (hasId && prefix) return rpcError(400, 3, "provide either id or prefix, not both");
      if (!hasId && !prefix) return rpcError(400, 3, "must provide id or prefix");
      const bare = (listed: string) => /^hskey-api-([A-Za-z0-9_-]{12})/.exec(listed)?.[1] ?? listed;
      const wanted = hasId ? undefined : bare(prefix);
      const key = hasId
        ? state.apiKeys.get(id)
        : [...state.apiKeys.values()].find((k) => bare(k.prefix) === wanted || k.prefix === `${wanted}***`);
      if (!key) return rpcError(500, 2, "record not found");
      key.expiration = now();
      return ok({});
    },
  },
  {
    method: "POST",
    template: "/api/v1/preauthkey",
    handle: ({ state, body, now }) => {
      const userId = stringField(body, "user") || null;
      const aclTags = stringArray(body, "aclTags");
      const bad = aclTags.find((t) => !TAG_SYNTAX.test(t));
      if (bad !== undefined) return rpcError(400, 3, `invalid tag "${bad}"`);
      if (userId && !state.users.has(userId)) return rpcError(500, 2, "user not found");
      if (!userId && aclTags.length === 0) {
        return rpcError(500, 2, "creating pre auth key: either a user or tags must be provided");
      }
      const expiration = parseTimestamp(stringField(body, "expiration")) ?? ZERO_TIME;
      // base64url prefix and secret, as Headscale mints them (hscontrol/db/preauth_keys.go).
      const prefix = randomUrlSafe(12);
      const key = {
        id: state.nextKeyId(),
        prefix,
        key: `hskey-auth-${prefix}-${randomUrlSafe(64)}`,
        userId,
        reusable: body.reusable === true,
        ephemeral: body.ephemeral === true,
        used: false,
        expiration,
        createdAt: now(),
        aclTags: [...new Set(aclTags)].sort(),
      };
      state.preAuthKeys.set(key.id, key);
      return ok({ preAuthKey: state.preAuthKeyJson(key, true) });
    },
  },
  {
    method: "GET",
    template: "/api/v1/preauthkey",
    handle: ({ state }) =>
      ok({ preAuthKeys: sortedById([...state.preAuthKeys.values()]).map((k) => state.preAuthKeyJson(k)) }),
  },
  {
    method: "POST",
    template: "/api/v1/preauthkey/expire",
    handle: ({ state, body, now }) => {
      // 0.29: an unknown id silently succeeds (NOTES §1.5).
      const key = state.preAuthKeys.get(stringField(body, "id") ?? "");
      if (key) key.expiration = now();
      return ok({});
    },
  },
  {
    method: "GET",
    template: "/api/v1/policy",
    databaseErrors: true,
    messageSize: { response: answerSize },
    handle: ({ state, policyMode, databaseError }) => {
      if (policyMode === "file") return ok({ policy: state.filePolicy, updatedAt: null });
      // Every database error gets the prefix "no policy stored" has (hscontrol/grpcv1.go GetPolicy); only the
      // text after it tells them apart. GET reads the database, never the policy held in memory.
      if (databaseError !== undefined) return rpcError(500, 2, `loading ACL from database: ${databaseError}`);
      const latest = state.policies.at(-1);
      if (!latest) return rpcError(500, 2, "loading ACL from database: acl policy not found");
      return ok({ policy: latest.text, updatedAt: ts(latest.updatedAt) });
    },
  },
  {
    method: "PUT",
    template: "/api/v1/policy",
    databaseErrors: true,
    // A too-large answer comes after the handler: the policy is stored and live, the client told 429.
    messageSize: { request: policyMessageSize, response: answerSize },
    handle: ({ state, policyMode, version, body, now, onPolicyWrite, databaseError }) => {
      if (policyMode === "file") return rpcError(500, 2, "update is disabled for modes other than 'database'");
      const text = stringField(body, "policy") ?? "";
      const parsed = parsePolicy(text, version, state.policyWorld());
      if (!parsed.ok) return rpcError(500, 2, `setting policy: ${parsed.message}`);
      // 0.29 swaps the live policy manager here, before the SSH check and the insert (hscontrol/grpcv1.go
      // SetPolicy): an insert that fails leaves the new policy live in memory, unstored, with no reload.
      if (databaseError !== undefined) {
        state.memoryPolicy = text;
        return rpcError(500, 2, databaseError);
      }
      state.memoryPolicy = undefined;
      const row = { text, updatedAt: now() };
      state.policies.push(row);
      onPolicyWrite();
      // The reload after every PUT re-runs auto-approval for all nodes, even for identical text.
      state.autoApproveAll(parsed.policy);
      return ok({ policy: row.text, updatedAt: ts(row.updatedAt) });
    },
  },
  {
    method: "POST",
    template: "/api/v1/policy/check",
    messageSize: { request: policyMessageSize },
    handle: ({ state, version, body }) => {
      const parsed = parsePolicy(stringField(body, "policy") ?? "", version, state.policyWorld());
      return parsed.ok ? ok({}) : rpcError(400, 3, parsed.message);
    },
  },
];

function answerSize(body: unknown): number {
  return typeof body === "object" && body !== null ? policyMessageSize(body as Record<string, unknown>) : 0;
}

/** 0.28 has no policy/check: the path falls through to grpc-gateway's 404. */
export function routesFor(version: FakeVersion): FakeRoute[] {
  return version === "0.28" ? ROUTES.filter((r) => r.template !== "/api/v1/policy/check") : ROUTES;
}

function sortedById<T extends { id: string }>(items: T[]): T[] {
  return items.sort((a, b) => Number(a.id) - Number(b.id));
}

function parseTimestamp(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
