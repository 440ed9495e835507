/**
 * The request machinery under the Headscale client: one undici dispatcher per client, a per-request timeout,
 * GET-only retries, error mapping into `HeadscaleError`, and a metrics hook labelled by path template.
 */

import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, type Dispatcher } from "undici";
import { ByteRope } from "./byte-rope.js";
import { HeadscaleError, type HeadscaleErrorClassification, parseErrorBody, redactSecrets } from "./errors.js";
import { CHUNKED_JSON_CHARS, parseJsonInRuns } from "./json-chunks.js";
import { DecodeProblem } from "./types.js";

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

/** One HTTP attempt, for metrics: `path` is a bounded template, `code` is 0 when no HTTP response arrived. */
export interface RequestMetric {
  method: string;
  path: string;
  code: number;
  seconds: number;
}

export interface RequesterOptions {
  url: string;
  apiKey: string;
  ca?: string;
  timeoutMs: number;
  /** Extra attempts for GETs after a transport error or 502/503/504; default 2, backoff 50ms·2^n. */
  retries?: number;
  /** Used instead of an own Agent (tests pass a MockAgent); not closed by `close()`. */
  dispatcher?: Dispatcher;
  onRequest?: (metric: RequestMetric) => void;
}

export interface CallSpec<T> {
  method: HttpMethod;
  /** Path template as in the Swagger document, e.g. "/api/v1/node/{nodeId}/tags". */
  template: string;
  params?: Record<string, string>;
  body?: unknown;
  /** false only for the unauthenticated `/health`. */
  auth?: boolean;
  /** Classification for an HTTP 400 regardless of its message (policy/check: every 400 is a rejection). */
  badRequestAs?: HeadscaleErrorClassification;
  decode: (body: unknown) => T;
  /**
   * A list decoded by reusing the previous answer where it only grew (list-memo.ts); sees every decoded answer.
   * Its answers are read as bytes and compared as bytes; only what is new is decoded to text.
   */
  reuse?: { tryReuse(bytes: ByteRope): T | undefined; remember(bytes: ByteRope, body: unknown, value: T): void };
}

export interface Requester {
  call<T>(spec: CallSpec<T>): Promise<T>;
  close(): Promise<void>;
}

const RETRYABLE_STATUS = new Set([502, 503, 504]);
const BACKOFF_BASE_MS = 50;
/** How long one `GET /health` verdict explains further 401s (a wave of syncs costs one probe). */
const HEALTH_MEMO_MS = 1000;

type HealthVerdict = "pass" | "fail" | "unknown";

/** Where and how a client's requests go: the parsed base URL, the dispatcher and the secrets to redact. */
interface Connection {
  opts: RequesterOptions;
  /** undefined when the URL is unusable: every call fails with a typed error. */
  base: URL | undefined;
  origin: string;
  basePath: string;
  dispatcher: Dispatcher;
  secrets: string[];
}

/** The requester's mutable state: closed once close() ran. */
interface RequesterState {
  closed: boolean;
}

export function createRequester(opts: RequesterOptions): Requester {
  const conn = connectionOf(opts);
  const ownsDispatcher = opts.dispatcher === undefined;
  const retries = opts.retries ?? 2;
  const state: RequesterState = { closed: false };
  const serverHealth = memoisedHealth(conn);

  async function call<T>(spec: CallSpec<T>): Promise<T> {
    const attempts = spec.method === "GET" ? 1 + Math.max(0, retries) : 1;
    for (let n = 0; ; n++) {
      try {
        return await attempt(conn, state, serverHealth, spec);
      } catch (error) {
        if (n + 1 >= attempts || state.closed || !conn.base || !isRetryable(error)) throw error;
        await sleep(BACKOFF_BASE_MS * 2 ** n);
      }
    }
  }

  async function close(): Promise<void> {
    if (state.closed) return;
    state.closed = true;
    if (ownsDispatcher) await conn.dispatcher.close();
  }

  return { call, close };
}

function connectionOf(opts: RequesterOptions): Connection {
  // An unusable URL fails every call with a typed error instead of throwing here, so callers that build
  // clients from user input (a Tailnet spec) keep the "never throws" shape. The URL is never echoed.
  const base = parseBaseUrl(opts.url);
  return {
    opts,
    base,
    origin: base?.origin ?? "http://invalid.invalid",
    // Headscale may sit behind a proxy under a sub-path; templates stay relative to it.
    basePath: base?.pathname.replace(/\/+$/, "") ?? "",
    dispatcher: opts.dispatcher ?? new Agent({ connect: opts.ca ? { ca: opts.ca } : undefined, connections: 16 }),
    secrets: [opts.apiKey],
  };
}

/** `GET /health` (no key): Headscale pings its database there; single-flight, memoised briefly. */
function memoisedHealth(conn: Connection): () => Promise<HealthVerdict> {
  let health: { verdict: Promise<HealthVerdict>; at: number } | undefined;
  return () => {
    const nowMs = performance.now();
    if (health && nowMs - health.at < HEALTH_MEMO_MS) return health.verdict;
    const verdict = probeHealth(conn);
    health = { verdict, at: nowMs };
    return verdict;
  };
}

async function probeHealth({ opts, dispatcher, origin, basePath }: Connection): Promise<HealthVerdict> {
  const started = performance.now();
  let code = 0;
  try {
    const res = await dispatcher.request({
      origin,
      path: `${basePath}/health`,
      method: "GET",
      headers: { accept: "application/health+json" },
      signal: AbortSignal.timeout(opts.timeoutMs),
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    code = res.statusCode;
    const body = tryJson(await res.body.text());
    const status = body && typeof body === "object" ? (body as { status?: unknown }).status : undefined;
    if (code === 200 && status === "pass") return "pass";
    if (code >= 500 && status === "fail") return "fail";
    return "unknown";
  } catch {
    return "unknown";
  } finally {
    reportMetric(opts.onRequest, {
      method: "GET",
      path: "/health",
      code,
      seconds: (performance.now() - started) / 1000,
    });
  }
}

/** What came back for one attempt; `code` stays 0 until an HTTP response arrives. */
interface Reply {
  code: number;
  contentType: string;
  /** The body as text; empty while it is held as `bytes` only (textOf decodes it). */
  text: string;
  /** The body in the pieces it arrived in, for a call that reuses its last answer (CallSpec.reuse; byte-rope.ts). */
  bytes?: ByteRope;
}

/** The body as text, decoded as undici's `text()` does (UTF-8, a leading byte order mark skipped). */
function textOf(reply: Reply): string {
  const rope = reply.bytes;
  if (!rope) return reply.text;
  const b = rope.bytes();
  const bom = b.length > 2 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;
  return b.toString("utf8", bom ? 3 : 0);
}

/** One HTTP attempt: sent, its answer decoded or mapped to a HeadscaleError, its metric reported. */
async function attempt<T>(
  conn: Connection,
  state: RequesterState,
  serverHealth: () => Promise<HealthVerdict>,
  spec: CallSpec<T>,
): Promise<T> {
  const operation = `${spec.method} ${spec.template}`;
  if (state.closed) {
    throw new HeadscaleError({ kind: "transport", operation, detail: "client closed", classification: "other" });
  }
  if (!conn.base) {
    const detail = "invalid url: expected an http or https URL";
    throw new HeadscaleError({ kind: "transport", operation, detail, classification: "other" });
  }
  const path = conn.basePath + fillTemplate(spec.template, spec.params);
  const started = performance.now();
  const reply: Reply = { code: 0, contentType: "", text: "" };
  try {
    await send(conn, spec, path, operation, reply);
    const { code, contentType } = reply;
    if (code >= 200 && code < 300) return await decodeBody(reply, spec, operation);
    // Headscale 0.29 looks the key up in its database before routing and answers any failure there with
    // the same plain 401 as a revoked key (hscontrol/app.go httpAuthenticationMiddleware). A 401 is a
    // verdict on the key only while the unauthenticated /health passes (hscontrol/handlers.go).
    if (code === 401 && spec.auth !== false && (await serverHealth()) === "fail") {
      throw databaseDownError(operation);
    }
    throw httpError(code, contentType, textOf(reply), spec, operation, conn.secrets);
  } finally {
    reportMetric(conn.opts.onRequest, {
      method: spec.method,
      path: spec.template,
      code: reply.code,
      seconds: (performance.now() - started) / 1000,
    });
  }
}

/** Sends the request and reads the whole answer into `reply`; a failure on the way is a transport error. */
async function send<T>(conn: Connection, spec: CallSpec<T>, path: string, operation: string, reply: Reply) {
  const { opts } = conn;
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const headers: Record<string, string> = { accept: "application/json" };
  if (spec.auth !== false) headers.authorization = `Bearer ${opts.apiKey}`;
  let body: string | undefined;
  if (spec.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(spec.body);
  }
  try {
    const res = await conn.dispatcher.request({
      origin: conn.origin,
      path,
      method: spec.method,
      headers,
      body,
      signal,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    reply.code = res.statusCode;
    reply.contentType = headerValue(res.headers["content-type"]);
    if (spec.reuse) {
      // the pieces as they arrive, never joined into one block per read (byte-rope.ts)
      const pieces: Buffer[] = [];
      for await (const chunk of res.body) pieces.push(chunk as Buffer);
      reply.bytes = new ByteRope(pieces);
    } else reply.text = await res.body.text();
  } catch (error) {
    throw transportError(error, operation, signal.aborted, opts.timeoutMs);
  }
}

/** A 401 while /health reports the database down: nothing is known about the key. */
function databaseDownError(operation: string): HeadscaleError {
  return new HeadscaleError({
    kind: "http",
    operation,
    status: 401,
    detail:
      'Unauthorized, and GET /health answers 500 {"status":"fail"}: Headscale\'s database is down, so it cannot check any API key',
    classification: "databaseDown",
  });
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A failing metrics hook must not turn a successful call into a failure. */
function reportMetric(hook: RequesterOptions["onRequest"], metric: RequestMetric): void {
  try {
    hook?.(metric);
  } catch {
    // ignored on purpose
  }
}

function parseBaseUrl(url: string): URL | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function isRetryable(error: unknown): boolean {
  if (!(error instanceof HeadscaleError)) return false;
  if (error.kind === "transport") return true;
  return error.kind === "http" && error.status !== undefined && RETRYABLE_STATUS.has(error.status);
}

/** Substitutes `{name}` placeholders with URI-encoded values. */
export function fillTemplate(template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === "") throw new Error(`missing path parameter ${name} for ${template}`);
    return encodeURIComponent(value);
  });
}

function headerValue(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(", ") : (value ?? "");
}

async function decodeBody<T>(reply: Reply, spec: CallSpec<T>, operation: string): Promise<T> {
  try {
    const reused = reply.bytes && spec.reuse?.tryReuse(reply.bytes);
    if (reused !== undefined) return reused;
  } catch {
    // a new item that does not decode: the whole answer is decoded below and judged as usual
  }
  const text = textOf(reply);
  let json: unknown;
  try {
    // a list of thousands of keys or nodes: a run of items per turn of the event loop (json-chunks.ts)
    json = text.length >= CHUNKED_JSON_CHARS ? await parseJsonInRuns(text) : JSON.parse(text);
  } catch {
    throw new HeadscaleError({
      kind: "decode",
      operation,
      detail: "invalid JSON in response",
      classification: "other",
    });
  }
  try {
    const value = spec.decode(json);
    if (reply.bytes) spec.reuse?.remember(reply.bytes, json, value);
    return value;
  } catch (error) {
    const detail = error instanceof DecodeProblem ? `unexpected response: ${error.message}` : "unexpected response";
    throw new HeadscaleError({ kind: "decode", operation, detail, classification: "other" });
  }
}

function httpError<T>(
  status: number,
  contentType: string,
  text: string,
  spec: CallSpec<T>,
  operation: string,
  secrets: string[],
): HeadscaleError {
  const parsed = parseErrorBody(status, contentType, text);
  const detail = redactSecrets(parsed.detail, secrets);
  if (status === 401) {
    return new HeadscaleError({ kind: "unauthorized", operation, status, detail, classification: "other" });
  }
  const classification = status === 400 && spec.badRequestAs ? spec.badRequestAs : parsed.classification;
  return new HeadscaleError({ kind: "http", operation, status, grpcCode: parsed.grpcCode, detail, classification });
}

const TIMEOUT_CODES = new Set([
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "ETIMEDOUT",
]);
const RESET_CODES = new Set(["ECONNRESET", "UND_ERR_SOCKET", "EPIPE", "UND_ERR_CLOSED"]);

/** Maps an undici/socket failure to a transport error; the original message is dropped (it may echo the URL). */
function transportError(error: unknown, operation: string, timedOut: boolean, timeoutMs: number): HeadscaleError {
  const code = errorCode(error);
  const base = { kind: "transport" as const, operation };
  if (timedOut || (code && TIMEOUT_CODES.has(code))) {
    return new HeadscaleError({ ...base, detail: `timed out after ${timeoutMs}ms`, classification: "timeout" });
  }
  if (code === "ECONNREFUSED")
    return new HeadscaleError({ ...base, detail: "connection refused", classification: "refused" });
  if (code && RESET_CODES.has(code))
    return new HeadscaleError({ ...base, detail: "connection reset", classification: "reset" });
  if (code && /CERT|SELF_SIGNED|TLS|SSL|UNABLE_TO_VERIFY/.test(code)) {
    return new HeadscaleError({ ...base, detail: `TLS error (${code})`, classification: "other" });
  }
  return new HeadscaleError({ ...base, detail: `transport error (${code ?? "unknown"})`, classification: "other" });
}

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 4; depth++) {
    if (typeof e === "object" && e !== null) {
      const code = (e as { code?: unknown }).code;
      if (typeof code === "string" && code) return code;
      e = (e as { cause?: unknown }).cause;
    } else break;
  }
  return undefined;
}
