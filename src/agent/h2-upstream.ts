// The backend side of HTTP/2 on an http expose: each checked h2 stream (h2-request.ts) goes to its backend
// as HTTP/1.1 (node:http, a keep-alive pool per listener) or over h2c (one pooled HTTP/2 session per
// backend address), per the backend's `protocol`. Bodies are piped both ways with stream backpressure, so an
// h2 client that does not open its window stops the backend from being read (no unbounded buffer); trailers
// are carried both ways (gRPC's status is one); a reset on either side resets the other (gRPC cancellation
// and deadlines: the client's RST_STREAM(CANCEL) reaches the backend, the backend's reaches the client).
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  constants,
  connect as h2Connect,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { AgentBackend } from "../contract/agent-config.js";
import { formatHostPort } from "./dial.js";
import { forwardedTrailers, type H2Request, h2ResponseFields, headerObject } from "./h2-request.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { STATUS_TEXT } from "./pipe.js";

const { NGHTTP2_CANCEL, NGHTTP2_INTERNAL_ERROR, NGHTTP2_NO_ERROR } = constants;

export interface UpstreamOptions {
  dialTimeoutMs: number;
  idleTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

/** One client stream on its way to a backend. */
export interface H2Exchange {
  /** Expose name, for metrics and logs. */
  name: string;
  client: ServerHttp2Stream;
  request: H2Request;
  /** The client sent a body (no END_STREAM on its HEADERS). */
  hasBody: boolean;
  backend: AgentBackend;
}

/** A header object's fields as name/value pairs (pseudo-headers left out). */
function pairsOf(headers: IncomingHttpHeaders): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, String(v)]);
  }
  return out;
}

/** The backends of one listener: an HTTP/1.1 keep-alive pool and h2c sessions by address. */
export class Upstreams {
  private readonly agent: Agent;
  private readonly sessions = new Map<string, ClientHttp2Session>();

  constructor(private readonly opts: UpstreamOptions) {
    this.agent = new Agent({ keepAlive: true, timeout: opts.idleTimeoutMs, scheduling: "lifo" });
  }

  forward(ex: H2Exchange): void {
    if (ex.backend.protocol === "h2c") this.forwardH2c(ex);
    else this.forwardHttp1(ex);
  }

  close(): void {
    this.agent.destroy();
    for (const session of this.sessions.values()) session.destroy();
    this.sessions.clear();
  }

  /** The backend could not be reached: 502 (refused, reset) or 504 (dial timeout), as HTTP/1.1 answers. */
  private dialFailed(ex: H2Exchange, err: NodeJS.ErrnoException, timedOut: boolean): void {
    const { metrics, log, dialTimeoutMs } = this.opts;
    metrics.dialErrors.inc({ name: ex.name });
    log.debug("backend dial failed", {
      expose: ex.name,
      error: `${formatHostPort(ex.backend)}: ${timedOut ? `timed out after ${dialTimeoutMs / 1000}s` : (err.code ?? err.message)}`,
    });
    answerError(ex.client, timedOut ? 504 : 502);
  }

  private forwardHttp1(ex: H2Exchange): void {
    const { client, request: r, backend } = ex;
    const headers: Record<string, string | string[]> = headerObject([["host", r.authority], ...r.fields]);
    // Without a length the body goes chunked, whatever the method (Node would write a GET's body unframed).
    if (ex.hasBody && r.contentLength === undefined) headers["transfer-encoding"] = "chunked";
    let dialTimer: NodeJS.Timeout | undefined;
    let answered = false;
    let response: IncomingMessage | undefined;
    const req = httpRequest({
      host: backend.host,
      port: backend.port,
      method: r.method,
      path: r.path,
      headers,
      agent: this.agent,
      setHost: false,
    });
    req.on("socket", (socket) => {
      if (!socket.connecting) return;
      dialTimer = setTimeout(
        () => req.destroy(Object.assign(new Error("dial timeout"), { timeout: true })),
        this.opts.dialTimeoutMs,
      );
      socket.once("connect", () => clearTimeout(dialTimer));
    });
    req.on("error", (err: NodeJS.ErrnoException & { timeout?: boolean }) => {
      clearTimeout(dialTimer);
      if (client.closed || client.destroyed) return;
      if (!answered && !client.headersSent) this.dialFailed(ex, err, err.timeout === true);
      else client.close(NGHTTP2_INTERNAL_ERROR);
    });
    client.on("close", () => {
      if (!req.destroyed && !(req.writableFinished && response?.complete)) req.destroy();
    });
    if (ex.hasBody) {
      client.on("trailers", (trailers: IncomingHttpHeaders) => {
        const fields = requestTrailers(client, trailers);
        if (!fields) req.destroy();
        else if (headers["transfer-encoding"]) req.addTrailers(headerObject(fields));
      });
      client.pipe(req);
    } else req.end();
    req.on("response", (res: IncomingMessage) => {
      answered = true;
      response = res;
      this.respondHttp1(client, res, r.method === "HEAD");
    });
  }

  private respondHttp1(client: ServerHttp2Stream, res: IncomingMessage, head: boolean): void {
    if (client.closed || client.destroyed) {
      res.destroy();
      return;
    }
    try {
      client.respond(
        { ...headerObject(h2ResponseFields(res.rawHeaders)), ":status": res.statusCode ?? 502 },
        { waitForTrailers: !head },
      );
    } catch {
      res.destroy();
      client.close(NGHTTP2_INTERNAL_ERROR); // a field HTTP/2 cannot carry
      return;
    }
    client.on("wantTrailers", () => sendTrailers(client, h2ResponseFields(res.rawTrailers)));
    res.on("aborted", () => client.close(NGHTTP2_INTERNAL_ERROR));
    res.on("error", () => client.close(NGHTTP2_INTERNAL_ERROR));
    res.pipe(client);
  }

  /** The pooled h2c session to a backend address, dialled on first use. */
  private session(backend: AgentBackend, onDialError: (err: Error, timedOut: boolean) => void): ClientHttp2Session {
    const key = formatHostPort(backend);
    const have = this.sessions.get(key);
    if (have && !have.closed && !have.destroyed) return have;
    const session = h2Connect(`http://${key}`, { settings: { enablePush: false }, maxSessionMemory: 16 });
    let timedOut = false;
    let connected = false;
    const timer = setTimeout(() => {
      timedOut = true;
      session.destroy(new Error("dial timeout"));
    }, this.opts.dialTimeoutMs);
    session.once("connect", () => {
      connected = true;
      clearTimeout(timer);
    });
    session.on("error", (err) => {
      clearTimeout(timer);
      if (!connected) onDialError(err, timedOut); // later errors reach the streams themselves
    });
    const forget = () => {
      clearTimeout(timer);
      if (this.sessions.get(key) === session) this.sessions.delete(key);
    };
    session.once("close", forget);
    session.once("goaway", forget);
    session.setTimeout(this.opts.idleTimeoutMs, () => session.close());
    this.sessions.set(key, session);
    return session;
  }

  private forwardH2c(ex: H2Exchange): void {
    const { client, request: r } = ex;
    let answered = false;
    let failed = false;
    const fail = (err: Error, timedOut: boolean) => {
      if (answered || failed || client.closed) return;
      failed = true;
      this.dialFailed(ex, err as NodeJS.ErrnoException, timedOut);
    };
    let up: ClientHttp2Stream;
    try {
      up = this.session(ex.backend, fail).request(
        {
          ...headerObject(r.fields),
          ":method": r.method,
          ":path": r.path,
          ":scheme": "http",
          ":authority": r.authority,
        },
        { endStream: !ex.hasBody, waitForTrailers: ex.hasBody },
      );
    } catch (err) {
      fail(err as Error, false);
      return;
    }
    let backendTrailers: [string, string][] = [];
    let clientTrailers: [string, string][] = [];
    up.on("error", (err) => fail(err, false));
    up.on("trailers", (t: IncomingHttpHeaders) => (backendTrailers = pairsOf(t)));
    up.on("response", (headers: IncomingHttpHeaders, flags: number) => {
      answered = true;
      const end = (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      if (client.closed || client.destroyed) return;
      try {
        client.respond(
          { ...headerObject(h2ResponseFields(pairsOf(headers).flat())), ":status": headers[":status"] ?? 502 },
          { endStream: end, waitForTrailers: !end },
        );
      } catch {
        up.close(NGHTTP2_CANCEL);
        client.close(NGHTTP2_INTERNAL_ERROR); // a field the client side cannot carry
        return;
      }
      if (end) return;
      client.on("wantTrailers", () => sendTrailers(client, h2ResponseFields(backendTrailers.flat())));
      up.pipe(client);
    });
    // A reset either way is passed on (gRPC cancellation and deadlines); a clean end is not a reset.
    up.on("close", () => {
      if (!answered && !failed && !client.closed) fail(new Error(`stream closed (${up.rstCode})`), false);
      else if (up.rstCode !== NGHTTP2_NO_ERROR && !client.closed) client.close(up.rstCode);
    });
    client.on("close", () => {
      if (!up.closed && !up.destroyed)
        up.close(client.rstCode && client.rstCode !== NGHTTP2_NO_ERROR ? client.rstCode : NGHTTP2_CANCEL);
    });
    if (ex.hasBody) {
      client.on("trailers", (t: IncomingHttpHeaders) => {
        const fields = requestTrailers(client, t);
        if (fields) clientTrailers = fields;
        else up.close(NGHTTP2_CANCEL);
      });
      up.on("wantTrailers", () => sendTrailers(up, clientTrailers));
      client.pipe(up);
    }
  }
}

/**
 * A client's trailer section as forwarded, or undefined when it holds a control character: then the stream
 * is reset both ways, as HTTP/1.1 closes both sides on an error inside a body (pipe.ts).
 */
function requestTrailers(client: ServerHttp2Stream, trailers: IncomingHttpHeaders): [string, string][] | undefined {
  try {
    return forwardedTrailers(pairsOf(trailers).flat());
  } catch {
    client.close(constants.NGHTTP2_PROTOCOL_ERROR);
    return undefined;
  }
}

/**
 * Ends a stream with trailers (none: an empty DATA frame with END_STREAM, src/node_http2.cc SubmitTrailers).
 * A field Node refuses to send (it throws, inside an event handler) resets the stream instead.
 */
function sendTrailers(stream: ServerHttp2Stream | ClientHttp2Stream, fields: [string, string][]): void {
  try {
    stream.sendTrailers(headerObject(fields));
  } catch {
    stream.close(NGHTTP2_INTERNAL_ERROR);
  }
}

/** An error answer the agent makes itself, as HTTP/1.1's (pipe.ts errorResponse). */
export function answerError(client: ServerHttp2Stream, status: 400 | 404 | 421 | 431 | 500 | 501 | 502 | 504): void {
  if (client.closed || client.destroyed || client.headersSent) return;
  const text = STATUS_TEXT[status];
  const body = status >= 500 ? `${status} ${text}\n` : "";
  client.respond({ ":status": status, "content-type": "text/plain; charset=utf-8", "content-length": body.length });
  client.end(body);
}
