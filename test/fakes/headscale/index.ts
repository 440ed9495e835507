/**
 * A fake Headscale (0.29, or 0.28) for tests: a fastify app on 127.0.0.1:0 with in-memory state, Headscale's
 * auth and error shapes, a request log ("exactly one PUT /api/v1/policy"), fault injection, and a contract check
 * of every JSON reply against the Swagger document (contract.ts). Use `useFakeHeadscale(t)` in tests: it closes
 * the fake after the test and fails it if any reply broke the contract.
 */

import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { loadContract } from "./contract.js";
import { type FakeVersion, parsePolicy } from "./policy.js";
import { currentPolicy, type FakeRoute, type PolicyMode, routesFor, rpcError } from "./routes.js";
import { type AddNodeInput, type AddUserInput, addNode, addUser, type RegisterInput, registerWithKey } from "./seed.js";
import { type FakeNode, FakeState, type FakeUser, randomUrlSafe } from "./state.js";

export type { FakeVersion } from "./policy.js";
export type { PolicyMode } from "./routes.js";
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
  /** Successful PUT /api/v1/policy calls. */
  readonly policyWrites: number;
  /** Contract violations found so far (the offending reply was replaced by a 500). */
  violations: string[];
  assertNoViolations(): void;
  addUser(input: AddUserInput): FakeUser;
  addNode(input: AddNodeInput): FakeNode;
  registerWithKey(keyIdOrSecret: string, input: RegisterInput): FakeNode;
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

interface ActiveFault extends FaultSpec {
  remaining: number;
}

const GRPC_CODE_FOR_STATUS: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 409: 6, 429: 8, 500: 13 };
const GRPC_CODE_FOR_STATUS_5XX: Record<number, number> = { 501: 12, 502: 14, 503: 14, 504: 4 };

export async function startFakeHeadscale(opts: FakeHeadscaleOptions = {}): Promise<FakeHeadscale> {
  const version = opts.version ?? "0.29";
  const policyMode = opts.policyMode ?? "database";
  const apiKey = opts.apiKey ?? `hskey-api-tEst_prEf-x1-${randomUrlSafe(64)}`;
  const now = opts.now ?? (() => new Date());
  const contract = loadContract(version);
  const routes = compileRoutes(routesFor(version));
  const state = new FakeState();
  const requests: LoggedRequest[] = [];
  const violations: string[] = [];
  const hungSockets = new Set<Socket>();
  let faults: ActiveFault[] = [];
  let refused = false;
  let closed = false;
  let policyWrites = 0;

  const started = now();
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

  // one instance type for both: fastify's https overload only changes the raw server's type
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key } } : {}),
  } as Record<string, unknown>) as unknown as FastifyInstance;
  const logEntries = new WeakMap<FastifyRequest, LoggedRequest>();
  app.addHook("onResponse", async (request, reply) => {
    const entry = logEntries.get(request);
    if (entry) entry.status = reply.statusCode;
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));

  const sendJson = (reply: FastifyReply, method: string, template: string | null, status: number, body: unknown) => {
    const violation = contract.check(method, template, status, body);
    if (violation) {
      violations.push(violation);
      return reply.code(500).type("text/plain").send(`fake headscale contract violation: ${violation}`);
    }
    return reply.code(status).type("application/json").send(JSON.stringify(body));
  };

  const takeFault = (method: string, path: string): ActiveFault | undefined => {
    const fault = faults.find(
      (f) =>
        f.kind !== "refused" && f.remaining > 0 && (!f.path || f.path.test(path)) && (!f.method || f.method === method),
    );
    if (fault) fault.remaining--;
    return fault;
  };

  /** Applies a fault; true when the request has been answered (or deliberately left hanging). */
  const applyFault = async (fault: ActiveFault, request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    switch (fault.kind) {
      case "slow":
        await sleep(fault.delayMs ?? 1000);
        return false;
      case "reset":
        reply.hijack();
        request.raw.socket.destroy();
        return true;
      case "timeout":
        reply.hijack();
        hungSockets.add(request.raw.socket);
        return true;
      case "malformed":
        reply.code(200).type("application/json").send('{"nodes": [');
        return true;
      case "unauthorized":
        reply.code(401).type("text/plain; charset=utf-8").send("Unauthorized");
        return true;
      case "databaseError":
        // Answered by the route (index.ts passes the error into the handler context).
        return false;
      default: {
        const status = fault.status ?? 500;
        const code = GRPC_CODE_FOR_STATUS[status] ?? GRPC_CODE_FOR_STATUS_5XX[status] ?? 2;
        const answer = rpcError(status, code, `fault injected: ${status}`);
        sendJson(reply, request.method, null, answer.status, answer.body);
        return true;
      }
    }
  };

  // Any stored, unexpired key authenticates, the created ones too (hscontrol/db/api_key.go ValidateAPIKey).
  const authorised = (header: string | undefined): boolean => {
    if (!header?.startsWith("Bearer ")) return false;
    const presented = header.slice("Bearer ".length);
    const record = [...state.apiKeys.values()].find((k) => k.key === presented);
    return !!record && record.expiration.getTime() > now().getTime();
  };

  app.all("/*", async (request, reply) => {
    const url = new URL(request.url, "http://fake.invalid");
    const path = url.pathname;
    const raw = typeof request.body === "string" ? request.body : "";
    const parsedBody = parseBody(raw);
    const entry: LoggedRequest = {
      method: request.method,
      path,
      query: url.search,
      body: raw === "" ? undefined : parsedBody.ok ? parsedBody.value : raw,
    };
    requests.push(entry);
    logEntries.set(request, entry);

    const fault = takeFault(request.method, path);
    if (fault && (await applyFault(fault, request, reply))) return reply;
    const databaseError = fault?.kind === "databaseError" ? (fault.message ?? SQLITE_BUSY) : undefined;

    if (path === "/health" && request.method === "GET") {
      // Not in the Swagger document (served by Headscale's own router), so no contract check.
      const healthy = !state.databaseDown;
      return reply
        .code(healthy ? 200 : 500)
        .type("application/health+json")
        .send(JSON.stringify({ status: healthy ? "pass" : "fail" }));
    }
    if (!path.startsWith("/api/v1/")) return reply.code(404).type("text/plain").send("404 page not found\n");
    // Headscale authenticates before routing: an unknown path with a bad key is a 401 too. The key is looked
    // up in the database, and any error there is the same 401 (hscontrol/app.go httpAuthenticationMiddleware).
    if (state.databaseDown || !authorised(request.headers.authorization)) {
      return reply.code(401).type("text/plain; charset=utf-8").send("Unauthorized");
    }
    const match = matchRoute(routes, request.method, path);
    if (!match) {
      const answer = rpcError(404, 5, "Not Found");
      return sendJson(reply, request.method, null, answer.status, answer.body);
    }
    if (!parsedBody.ok) {
      const answer = rpcError(400, 3, parsedBody.error);
      return sendJson(reply, request.method, match.route.template, answer.status, answer.body);
    }
    if (databaseError !== undefined && !match.route.databaseErrors) {
      const answer = rpcError(500, 2, databaseError);
      return sendJson(reply, request.method, match.route.template, answer.status, answer.body);
    }
    const answer = match.route.handle({
      state,
      version,
      policyMode,
      now,
      params: match.params,
      query: url.searchParams,
      body: parsedBody.value,
      onPolicyWrite: () => policyWrites++,
      databaseError,
    });
    return sendJson(reply, request.method, match.route.template, answer.status, answer.body);
  });

  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("fake headscale: no TCP address");
  const port = address.port;

  const stopListening = () =>
    new Promise<void>((resolve) => {
      app.server.close(() => resolve());
      app.server.closeAllConnections();
    });
  const startListening = () =>
    new Promise<void>((resolve, reject) => {
      app.server.once("error", reject);
      app.server.listen(port, "127.0.0.1", () => {
        app.server.off("error", reject);
        resolve();
      });
    });

  const policyNow = () => currentPolicy(state, policyMode, version);

  return {
    url: `${opts.tls ? "https" : "http"}://127.0.0.1:${port}`,
    apiKey,
    version,
    policyMode,
    state,
    requests,
    count: (method, path) => requests.filter((r) => r.method === method && path.test(r.path)).length,
    writes: () => requests.filter((r) => r.method !== "GET" && r.path !== "/api/v1/policy/check"),
    get policyWrites() {
      return policyWrites;
    },
    violations,
    assertNoViolations() {
      if (violations.length > 0) throw new Error(`fake headscale contract violations:\n${violations.join("\n")}`);
    },
    addUser: (input) => addUser(state, now(), input),
    addNode: (input) => addNode(state, now(), input),
    registerWithKey: (keyIdOrSecret, input) => registerWithKey(state, now(), policyNow(), keyIdOrSecret, input),
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
      faults.push({ ...spec, remaining: spec.kind === "refused" ? Infinity : (spec.times ?? Infinity) });
      if (spec.kind === "refused" && !refused) {
        refused = true;
        await stopListening();
      }
    },
    async clearFaults() {
      faults = [];
      releaseHung(hungSockets);
      if (refused) {
        refused = false;
        await startListening();
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      faults = [];
      releaseHung(hungSockets);
      if (refused) {
        refused = false;
        await startListening();
      }
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

/** What a SQLite-backed Headscale's driver says when another writer holds the database. */
export const SQLITE_BUSY = "database is locked (5) (SQLITE_BUSY)";

/**
 * How Headscale lists an API key (hscontrol/types/api_key.go): a 12-character prefix as
 * `hskey-api-<prefix>-***`, a legacy 7-character one as `<prefix>***`.
 */
export function listedApiKeyPrefix(apiKey: string): string {
  const modern = /^hskey-api-([A-Za-z0-9_-]{12})-/.exec(apiKey)?.[1];
  return modern ? `hskey-api-${modern}-***` : `${apiKey.slice(0, 7)}***`;
}

function releaseHung(sockets: Set<Socket>): void {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
}

type ParsedBody = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** grpc-gateway decodes the body as JSON; an empty body is an empty message. */
function parseBody(raw: string): ParsedBody {
  if (raw.trim() === "") return { ok: true, value: {} };
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return { ok: false, error: "json: cannot unmarshal non-object into Go value" };
    }
    return { ok: true, value: value as Record<string, unknown> };
  } catch {
    return { ok: false, error: "invalid character in request body" };
  }
}

interface CompiledRoute {
  route: FakeRoute;
  pattern: RegExp;
  names: string[];
}

function compileRoutes(routes: FakeRoute[]): CompiledRoute[] {
  return routes.map((route) => {
    const names: string[] = [];
    const source = route.template.replace(/\{(\w+)\}/g, (_, name: string) => {
      names.push(name);
      return "([^/]+)";
    });
    return { route, pattern: new RegExp(`^${source}$`), names };
  });
}

function matchRoute(
  routes: CompiledRoute[],
  method: string,
  path: string,
): { route: FakeRoute; params: Record<string, string> } | undefined {
  for (const { route, pattern, names } of routes) {
    if (route.method !== method) continue;
    const m = pattern.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    names.forEach((name, i) => {
      params[name] = decodeURIComponent(m[i + 1]);
    });
    return { route, params };
  }
  return undefined;
}
