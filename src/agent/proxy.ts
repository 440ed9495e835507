// The HTTP/1.1 reverse proxy behind an http expose's TLS listener: one request to the backend per client
// request over a keep-alive agent, bodies piped both ways with backpressure, X-Forwarded-* set, 502/504 when
// the backend cannot be reached. WebSocket-style upgrades are relayed as raw TCP after the request head.
import {
  type Agent,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request,
  type ServerResponse,
} from "node:http";
import { connect, type Socket } from "node:net";
import { DialError, formatHostPort, type HostPort } from "./dial.js";
import { relay } from "./forward.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";

/** Headers that describe one hop and must not be forwarded (RFC 9110 §7.6.1), plus Expect (answered here). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
]);

function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  const tokens = new Set<string>();
  for (const part of (Array.isArray(value) ? value.join(",") : (value ?? "")).split(",")) {
    const token = part.trim().toLowerCase();
    if (token) tokens.add(token);
  }
  return tokens;
}

function withoutHopByHop(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = connectionTokens(headers);
  const out: OutgoingHttpHeaders = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(key) || named.has(key)) continue;
    out[key] = value;
  }
  return out;
}

export interface ForwardContext {
  /** The client's address as the agent sees it. */
  clientIp?: string;
  /** "https" for http exposes (TLS terminated here). */
  proto: string;
}

/**
 * The request headers sent to the backend: hop-by-hop headers dropped, Host kept as the client sent it,
 * X-Forwarded-For extended with the client address, X-Forwarded-Proto and X-Forwarded-Host set.
 * With `upgrade`, Connection/Upgrade are kept so the backend sees the upgrade request.
 */
export function forwardRequestHeaders(
  headers: IncomingHttpHeaders,
  ctx: ForwardContext,
  upgrade = false,
): OutgoingHttpHeaders {
  const out = withoutHopByHop(headers);
  const prior = headers["x-forwarded-for"];
  const chain = [Array.isArray(prior) ? prior.join(", ") : prior, ctx.clientIp].filter((v): v is string => !!v);
  if (chain.length > 0) out["x-forwarded-for"] = chain.join(", ");
  out["x-forwarded-proto"] = ctx.proto;
  if (headers.host) out["x-forwarded-host"] = headers.host;
  // A chunked request body keeps its framing (the outgoing request re-chunks it).
  if (headers["transfer-encoding"] && headers["content-length"] === undefined) out["transfer-encoding"] = "chunked";
  if (upgrade && headers.upgrade) {
    out.connection = "Upgrade";
    out.upgrade = headers.upgrade;
  }
  return out;
}

/** The backend's response headers for the client: hop-by-hop headers dropped (the server re-frames the body). */
export function forwardResponseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return withoutHopByHop(headers);
}

export interface ProxyTarget {
  /** Expose name, for metrics and logs. */
  name: string;
  backend: HostPort;
  /** Keep-alive agent of this expose: backend connections are reused across client requests. */
  agent: Agent;
  dialTimeoutMs: number;
  idleTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

function clientContext(req: IncomingMessage): ForwardContext {
  return { clientIp: req.socket.remoteAddress?.replace(/^::ffff:/, ""), proto: "https" };
}

/** Watches a new backend socket: counts the dial, bounds it by the dial timeout. */
function watchDial(socket: Socket, target: ProxyTarget, onTimeout: () => void): void {
  if (!socket.connecting) return; // a reused keep-alive connection: no dial
  const started = process.hrtime.bigint();
  const timer = setTimeout(onTimeout, target.dialTimeoutMs);
  socket.once("connect", () => {
    clearTimeout(timer);
    target.metrics.dialDuration.observe({ name: target.name }, Number(process.hrtime.bigint() - started) / 1e9);
  });
  socket.once("close", () => clearTimeout(timer));
}

function sendError(res: ServerResponse, status: 502 | 504): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = status === 502 ? "502 Bad Gateway\n" : "504 Gateway Timeout\n";
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** Forwards one client request to the backend and the response back. */
export function proxyRequest(req: IncomingMessage, res: ServerResponse, target: ProxyTarget): void {
  const address = formatHostPort(target.backend);
  let failure: DialError | undefined;
  const upstream = request({
    host: target.backend.host,
    port: target.backend.port,
    method: req.method,
    path: req.url,
    headers: forwardRequestHeaders(req.headers, clientContext(req)),
    agent: target.agent,
    setHost: false,
  });
  upstream.on("socket", (socket: Socket) => {
    watchDial(socket, target, () => {
      failure = new DialError(address, `timed out after ${target.dialTimeoutMs / 1000}s`);
      upstream.destroy(failure);
    });
  });
  upstream.setTimeout(target.idleTimeoutMs, () => upstream.destroy(new Error("backend idle timeout")));
  upstream.on("response", (backendRes) => {
    res.writeHead(backendRes.statusCode ?? 502, backendRes.statusMessage, forwardResponseHeaders(backendRes.headers));
    backendRes.pipe(res);
    backendRes.on("error", () => res.destroy());
  });
  upstream.on("error", (err: NodeJS.ErrnoException) => {
    const reason = failure?.reason ?? err.code ?? err.message;
    if (!res.headersSent) {
      target.metrics.dialErrors.inc({ name: target.name });
      target.log.debug("backend request failed", { expose: target.name, error: `${address}: ${reason}` });
    }
    sendError(res, failure ? 504 : 502);
  });
  // The client went away before the response finished: stop the backend request too.
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

/**
 * Relays an HTTP upgrade (WebSocket): the request head is replayed to a fresh backend connection, then
 * both sockets are piped as raw TCP (half-close, idle timeout and error handling as for tcp exposes).
 */
export function proxyUpgrade(req: IncomingMessage, client: Socket, head: Buffer, target: ProxyTarget): void {
  const headers = forwardRequestHeaders(req.headers, clientContext(req), true);
  const lines = [`${req.method} ${req.url} HTTP/1.1`];
  for (const [key, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) lines.push(`${key}: ${String(v)}`);
  }
  const upstream = connect({
    host: target.backend.host,
    port: target.backend.port,
    allowHalfOpen: true,
    noDelay: true,
  });
  const onClientGone = () => upstream.destroy();
  const onDialError = () => {
    target.metrics.dialErrors.inc({ name: target.name });
    client.off("error", onClientGone);
    client.on("error", () => client.destroy());
    client.end("HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
  };
  client.once("error", onClientGone);
  client.once("close", onClientGone);
  upstream.once("error", onDialError);
  watchDial(upstream, target, () => upstream.destroy(new Error("dial timeout")));
  upstream.once("connect", () => {
    upstream.off("error", onDialError);
    client.off("error", onClientGone);
    client.off("close", onClientGone);
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    void relay(client, upstream, {
      name: target.name,
      idleTimeoutMs: target.idleTimeoutMs,
      metrics: target.metrics,
      log: target.log,
    });
  });
}
