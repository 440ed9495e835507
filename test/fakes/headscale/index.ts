/**
 * A fake Headscale (0.29, or 0.28) for tests: a fastify app on 127.0.0.1:0 with in-memory state, Headscale's
 * auth and error shapes, a request log ("exactly one PUT /api/v1/policy"), fault injection, and a contract check
 * of every JSON reply against the Swagger document (contract.ts). Use `useFakeHeadscale(t)` in tests: it closes
 * the fake after the test and fails it if any reply broke the contract.
 */

import type { FastifyInstance } from "fastify";
import { loadContract } from "./contract.js";
import { type FakeVersion, parsePolicy } from "./policy.js";
import {
  disconnect,
  type ReconnectInput,
  type RegisterInput,
  type Registration,
  reconnect,
  register,
  sweepEphemeral,
} from "./register.js";
import { currentPolicy, type PolicyMode, routesFor } from "./routes.js";
import { type AddNodeInput, type AddUserInput, addNode, addUser } from "./seed.js";
import { compileRoutes, contractChecked, fakeApp, listening, releaseHung, type Served } from "./server.js";
import { type FakeNode, FakeState, type FakeUser, randomUrlSafe } from "./state.js";

export type { FakeVersion } from "./policy.js";
export type { ReconnectInput, RegisterInput, Registration } from "./register.js";
export type { PolicyMode } from "./routes.js";
export { SQLITE_BUSY } from "./server.js";
export type { FakeApiKey, FakeNode, FakePreAuthKey, FakeState, FakeUser, PolicyVersion } from "./state.js";

export interface FakeHeadscaleOptions {
  version?: FakeVersion;
  policyMode?: PolicyMode;
  /**
   * Default `hskey-api-tEst_prEf-x1-` + 64 random base64url characters: a real 12-character prefix, with the
   * "-" and "_" that Headscale's base64url prefixes hold a third of the time (hscontrol/db/api_key.go).
   */
  apiKey?: string;
  /** Initial policy: the file in file mode (default "{}"), the first stored row in database mode (default none). */
  policy?: string;
  /** Clock for timestamps the fake writes (default: wall clock). */
  now?: () => Date;
  /** Serve HTTPS with this certificate (PEM) instead of plain HTTP. */
  tls?: { cert: string; key: string };
}

export type FaultKind =
  | "refused"
  | "reset"
  | "timeout"
  | "status"
  | "malformed"
  | "slow"
  | "unauthorized"
  | "databaseError";

export interface FaultSpec {
  kind: FaultKind;
  /** For "status": the HTTP status to answer (with a matching rpcStatus body). */
  status?: number;
  /** How many matching requests it applies to; default Infinity. Ignored for "refused". */
  times?: number;
  /** Only requests whose path matches. Ignored for "refused". */
  path?: RegExp;
  /** Only requests with this HTTP method (e.g. the PUT of /api/v1/policy, not the GET before it). */
  method?: string;
  /** For "slow": delay before answering normally (default 1000). */
  delayMs?: number;
  /**
   * For "databaseError": the database driver's error text (default SQLite's busy error). The database answers
   * the API-key lookup but fails the operation's own query: GET /api/v1/policy wraps it as "loading ACL from
   * database: …"; PUT /api/v1/policy fails at the insert after the policy was already swapped in memory; any
   * other path answers it as a plain 500.
   */
  message?: string;
}

export interface LoggedRequest {
  method: string;
  /** Path without query string. */
  path: string;
  /** Query string including "?", or "". */
  query: string;
  /** Parsed JSON body, the raw text if it was not JSON, undefined when empty. */
  body: unknown;
  /** HTTP status sent; undefined while pending or when no response was sent (reset, timeout). */
  status?: number;
}

export interface FakeHeadscale {
  url: string;
  apiKey: string;
  version: FakeVersion;
  policyMode: PolicyMode;
  state: FakeState;
  requests: LoggedRequest[];
  /** Number of logged requests with this method whose path matches. */
  count(method: string, path: RegExp): number;
  /** Logged non-GET requests except the non-mutating policy/check. */
  writes(): LoggedRequest[];
  /** PUT /api/v1/policy calls that stored the policy (one answered 429 for its answer's size too: message-size.ts). */
  readonly policyWrites: number;
  /** Contract violations found so far (the offending reply was replaced by a 500). */
  violations: string[];
  assertNoViolations(): void;
  addUser(input: AddUserInput): FakeUser;
  addNode(input: AddNodeInput): FakeNode;
  /** A login with a pre-auth key (register.ts): the machine's node updated in place, or a new node. */
  registerWithKey(keyIdOrSecret: string, input: RegisterInput): FakeNode;
  /** registerWithKey, saying whether the node is new. */
  register(keyIdOrSecret: string, input: RegisterInput): Registration;
  /** tailscaled restarting with its state (Auth nil): the same node, online again; no key involved. */
  reconnect(input: ReconnectInput): FakeNode;
  /** The node's session ends: offline, last seen now. */
  disconnect(nodeId: string): void;
  /** Headscale's ephemeral GC at this moment: deletes ephemeral nodes offline for 120 s (0.29.3's default); the deleted ids. */
  sweepEphemeral(timeoutMs?: number): string[];
  /** Out-of-band policy change (file edit + SIGHUP, or a DB row); re-runs auto-approval; not a policyWrite. */
  setPolicy(text: string): void;
  /**
   * The database goes away: /health answers 500 {"status":"fail"} and, because Headscale looks the API key up
   * in the database before routing, every /api/v1 call is a plain-text 401 — exactly as for a revoked key.
   */
  setDatabaseDown(down: boolean): void;
  fault(spec: FaultSpec): Promise<void>;
  clearFaults(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeHeadscale(opts: FakeHeadscaleOptions = {}): Promise<FakeHeadscale> {
  const version = opts.version ?? "0.29";
  const policyMode = opts.policyMode ?? "database";
  const apiKey = opts.apiKey ?? `hskey-api-tEst_prEf-x1-${randomUrlSafe(64)}`;
  const now = opts.now ?? (() => new Date());
  const contract = loadContract(version);
  const routes = compileRoutes(routesFor(version));
  const state = new FakeState();
  seedState(state, opts, policyMode, apiKey, now());
  const violations: string[] = [];
  const served: Served = {
    state,
    version,
    policyMode,
    now,
    routes,
    requests: [],
    logEntries: new WeakMap(),
    hungSockets: new Set(),
    live: { faults: [], refused: false, closed: false, policyWrites: 0 },
    sendJson: contractChecked(contract, violations),
  };
  const app = fakeApp(opts, served);
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("fake headscale: no TCP address");
  return fakeHandle(served, { app, port: address.port, tls: !!opts.tls, apiKey, violations });
}

/** The fake's own API key (valid 90 days from start) and its initial policy. */
function seedState(
  state: FakeState,
  opts: FakeHeadscaleOptions,
  policyMode: PolicyMode,
  apiKey: string,
  started: Date,
): void {
  const apiKeyId = state.nextApiKeyId();
  state.apiKeys.set(apiKeyId, {
    id: apiKeyId,
    prefix: listedApiKeyPrefix(apiKey),
    key: apiKey,
    expiration: new Date(started.getTime() + 90 * 24 * 3600 * 1000),
    createdAt: started,
  });
  if (policyMode === "file") state.filePolicy = opts.policy ?? "{}";
  else if (opts.policy !== undefined) state.policies.push({ text: opts.policy, updatedAt: started });
}

/** The test's handle on a started fake. */
function fakeHandle(
  served: Served,
  server: { app: FastifyInstance; port: number; tls: boolean; apiKey: string; violations: string[] },
): FakeHeadscale {
  const { state, version, policyMode, now, requests, hungSockets, live } = served;
  const { app, violations } = server;
  const listener = listening(app, server.port);
  const policyNow = () => currentPolicy(state, policyMode, version);
  const unrefuse = async () => {
    releaseHung(hungSockets);
    if (live.refused) {
      live.refused = false;
      await listener.start();
    }
  };
  return {
    url: `${server.tls ? "https" : "http"}://127.0.0.1:${server.port}`,
    apiKey: server.apiKey,
    version,
    policyMode,
    state,
    requests,
    count: (method, path) => requests.filter((r) => r.method === method && path.test(r.path)).length,
    writes: () => requests.filter((r) => r.method !== "GET" && r.path !== "/api/v1/policy/check"),
    get policyWrites() {
      return live.policyWrites;
    },
    violations,
    assertNoViolations() {
      if (violations.length > 0) throw new Error(`fake headscale contract violations:\n${violations.join("\n")}`);
    },
    addUser: (input) => addUser(state, now(), input),
    addNode: (input) => addNode(state, now(), input),
    registerWithKey: (keyIdOrSecret, input) => register(state, now(), policyNow(), keyIdOrSecret, input).node,
    register: (keyIdOrSecret, input) => register(state, now(), policyNow(), keyIdOrSecret, input),
    reconnect: (input) => reconnect(state, now(), input),
    disconnect: (nodeId) => disconnect(state, now(), nodeId),
    sweepEphemeral: (timeoutMs) => sweepEphemeral(state, now(), timeoutMs),
    setPolicy(text) {
      if (policyMode === "file") state.filePolicy = text;
      else state.policies.push({ text, updatedAt: now() });
      state.memoryPolicy = undefined;
      const parsed = parsePolicy(text, version);
      if (parsed.ok) state.autoApproveAll(parsed.policy);
    },
    setDatabaseDown(down) {
      state.databaseDown = down;
    },
    async fault(spec) {
      live.faults.push({ ...spec, remaining: spec.kind === "refused" ? Infinity : (spec.times ?? Infinity) });
      if (spec.kind === "refused" && !live.refused) {
        live.refused = true;
        await listener.stop();
      }
    },
    async clearFaults() {
      live.faults = [];
      await unrefuse();
    },
    async close() {
      if (live.closed) return;
      live.closed = true;
      live.faults = [];
      await unrefuse();
      await app.close();
    },
  };
}

/** Starts a fake and registers its shutdown plus the contract assertion on the test context. */
export async function useFakeHeadscale(
  t: { after: (fn: () => Promise<void> | void) => void },
  opts: FakeHeadscaleOptions = {},
): Promise<FakeHeadscale> {
  const fake = await startFakeHeadscale(opts);
  t.after(async () => {
    await fake.close();
    fake.assertNoViolations();
  });
  return fake;
}

/**
 * How Headscale lists an API key (hscontrol/types/api_key.go): a 12-character prefix as
 * `hskey-api-<prefix>-***`, a legacy 7-character one as `<prefix>***`.
 */
export function listedApiKeyPrefix(apiKey: string): string {
  const modern = /^hskey-api-([A-Za-z0-9_-]{12})-/.exec(apiKey)?.[1];
  return modern ? `hskey-api-${modern}-***` : `${apiKey.slice(0, 7)}***`;
}
