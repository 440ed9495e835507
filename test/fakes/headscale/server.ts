/**
 * The fake Headscale's HTTP side (index.ts starts it): the request log, fault injection, Headscale's
 * authentication and error shapes, routing, and the contract check of every JSON reply.
 */
import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { loadContract } from "./contract.js";
import type { FakeHeadscaleOptions, FaultSpec, LoggedRequest } from "./index.js";
import { refusedForSize } from "./message-size.js";
import type { FakeVersion } from "./policy.js";
import { type FakeRoute, type PolicyMode, rpcError } from "./routes.js";
import type { FakeState } from "./state.js";

export interface ActiveFault extends FaultSpec {
  remaining: number;
}

const GRPC_CODE_FOR_STATUS: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 409: 6, 429: 8, 500: 13 };
const GRPC_CODE_FOR_STATUS_5XX: Record<number, number> = { 501: 12, 502: 14, 503: 14, 504: 4 };

/** What the request handler and the test's handle share: the state, the request log and the live faults. */
export interface Served {
  state: FakeState;
  version: FakeVersion;
  policyMode: PolicyMode;
  now: () => Date;
  routes: CompiledRoute[];
  requests: LoggedRequest[];
  logEntries: WeakMap<FastifyRequest, LoggedRequest>;
  hungSockets: Set<Socket>;
  live: { faults: ActiveFault[]; refused: boolean; closed: boolean; policyWrites: number };
  sendJson: SendJson;
}

export type SendJson = (
  reply: FastifyReply,
  method: string,
  template: string | null,
  status: number,
  body: unknown,
) => FastifyReply;

/** Sends a JSON reply that the Swagger contract allows; any other becomes a 500 and a recorded violation. */
export function contractChecked(contract: ReturnType<typeof loadContract>, violations: string[]): SendJson {
  return (reply, method, template, status, body) => {
    const violation = contract.check(method, template, status, body);
    if (violation) {
      violations.push(violation);
      return reply.code(500).type("text/plain").send(`fake headscale contract violation: ${violation}`);
    }
    return reply.code(status).type("application/json").send(JSON.stringify(body));
  };
}

/** Far past the 4 MiB message cap, so the cap answers (a 413 only past this, where the real server reads on). */
const BODY_LIMIT = 64 * 1024 * 1024;

export function fakeApp(opts: FakeHeadscaleOptions, served: Served): FastifyInstance {
  // one instance type for both: fastify's https overload only changes the raw server's type
  const app = Fastify({
    logger: false,
    // Headscale's HTTP server reads any body (no MaxBytesReader on /api, hscontrol/app.go); its limit is grpc-go's
    // 4 MiB per message after decoding (message-size.ts), not fastify's default 1 MiB 413 before any route.
    bodyLimit: BODY_LIMIT,
    forceCloseConnections: true,
    ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key } } : {}),
  } as Record<string, unknown>) as unknown as FastifyInstance;
  app.addHook("onResponse", async (request, reply) => {
    const entry = served.logEntries.get(request);
    if (entry) entry.status = reply.statusCode;
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));
  app.all("/*", (request, reply) => answer(served, request, reply));
  return app;
}

function takeFault(served: Served, method: string, path: string): ActiveFault | undefined {
  const fault = served.live.faults.find(
    (f) =>
      f.kind !== "refused" && f.remaining > 0 && (!f.path || f.path.test(path)) && (!f.method || f.method === method),
  );
  if (fault) fault.remaining--;
  return fault;
}

/** Applies a fault; true when the request has been answered (or deliberately left hanging). */
async function applyFault(
  served: Served,
  fault: ActiveFault,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
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
      served.hungSockets.add(request.raw.socket);
      return true;
    case "malformed":
      reply.code(200).type("application/json").send('{"nodes": [');
      return true;
    case "unauthorized":
      reply.code(401).type("text/plain; charset=utf-8").send("Unauthorized");
      return true;
    case "databaseError":
      // Answered by the route (answer() below passes the error into the handler context).
      return false;
    default: {
      const status = fault.status ?? 500;
      const code = GRPC_CODE_FOR_STATUS[status] ?? GRPC_CODE_FOR_STATUS_5XX[status] ?? 2;
      const answer = rpcError(status, code, `fault injected: ${status}`);
      served.sendJson(reply, request.method, null, answer.status, answer.body);
      return true;
    }
  }
}

// Any stored, unexpired key authenticates, the created ones too (hscontrol/db/api_key.go ValidateAPIKey).
function authorised(served: Served, header: string | undefined): boolean {
  if (!header?.startsWith("Bearer ")) return false;
  const presented = header.slice("Bearer ".length);
  const record = [...served.state.apiKeys.values()].find((k) => k.key === presented);
  return !!record && record.expiration.getTime() > served.now().getTime();
}

/** Logs the request, then answers it: a fault, /health, Headscale's 401 and 404, or the route. */
async function answer(served: Served, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { state, sendJson } = served;
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
  served.requests.push(entry);
  served.logEntries.set(request, entry);

  const fault = takeFault(served, request.method, path);
  if (fault && (await applyFault(served, fault, request, reply))) return reply;
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
  if (state.databaseDown || !authorised(served, request.headers.authorization)) {
    return reply.code(401).type("text/plain; charset=utf-8").send("Unauthorized");
  }
  const match = matchRoute(served.routes, request.method, path);
  if (!match) {
    const answer = rpcError(404, 5, "Not Found");
    return sendJson(reply, request.method, null, answer.status, answer.body);
  }
  if (!parsedBody.ok) {
    const answer = rpcError(400, 3, parsedBody.error);
    return sendJson(reply, request.method, match.route.template, answer.status, answer.body);
  }
  const refused = refusedForSize(match.route.messageSize?.request?.(parsedBody.value) ?? 0);
  if (refused) return sendJson(reply, request.method, match.route.template, refused.status, refused.body);
  if (databaseError !== undefined && !match.route.databaseErrors) {
    const answer = rpcError(500, 2, databaseError);
    return sendJson(reply, request.method, match.route.template, answer.status, answer.body);
  }
  const answered = match.route.handle({
    state,
    version: served.version,
    policyMode: served.policyMode,
    now: served.now,
    params: match.params,
    query: url.searchParams,
    body: parsedBody.value,
    onPolicyWrite: () => served.live.policyWrites++,
    databaseError,
  });
  const tooLarge = answered.status === 200 && refusedForSize(match.route.messageSize?.response?.(answered.body) ?? 0);
  const sent = tooLarge || answered;
  return sendJson(reply, request.method, match.route.template, sent.status, sent.body);
}

/** Stops and restarts listening on the same port (the "refused" fault). */
export function listening(app: FastifyInstance, port: number) {
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        app.server.close(() => resolve());
        app.server.closeAllConnections();
      }),
    start: () =>
      new Promise<void>((resolve, reject) => {
        app.server.once("error", reject);
        app.server.listen(port, "127.0.0.1", () => {
          app.server.off("error", reject);
          resolve();
        });
      }),
  };
}

/** What a SQLite-backed Headscale's driver says when another writer holds the database. */
export const SQLITE_BUSY = "database is locked (5) (SQLITE_BUSY)";

export function releaseHung(sockets: Set<Socket>): void {
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

export interface CompiledRoute {
  route: FakeRoute;
  pattern: RegExp;
  names: string[];
}

export function compileRoutes(routes: FakeRoute[]): CompiledRoute[] {
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
