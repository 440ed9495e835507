// HTTP/2 on the tailnet side of http exposes: a TLS connection whose ALPN chose `h2` is handed to one
// node:http2 server per listener (https.ts; the TLS is already terminated, with SNI's expose known), and each
// stream is checked (h2-request.ts), routed by its path through the expose's router, and forwarded to its
// backend (h2-upstream.ts). HTTP/1.1 connections keep the strict pipe (pipe.ts).
//
// HTTP/2's own attacks are bounded by the server's settings and nghttp2's limits (docs/security.md, "HTTP/2";
// the options are Node 22's, nodejs/node lib/internal/http2/util.js updateOptionsBuffer, over nghttp2 1.69):
// - rapid reset (CVE-2023-44487): streamResetBurst/streamResetRate, a token bucket on the client's
//   RST_STREAMs; past it the session ends (nghttp2 lib/nghttp2_session.c session_update_stream_reset_ratelim);
// - CONTINUATION floods (CVE-2024-27983, CVE-2024-27919): a header block of more than 8 CONTINUATION frames
//   ends the session (nghttp2 NGHTTP2_DEFAULT_MAX_CONTINUATIONS), and maxHeaderListSize/maxHeaderListPairs
//   bound a block's size as HTTP/1.1's 16 KiB head limit does (Node src/node_http2.cc Http2Stream::AddHeader);
// - SETTINGS and PING floods: acknowledgements the client does not read are bounded (nghttp2's max outbound
//   ack), as are entries per SETTINGS frame (maxSettings);
// - streams: maxConcurrentStreams, and maxSessionRejectedStreams ends a session that keeps opening past it;
//   maxSessionInvalidFrames ends one that keeps sending invalid frames;
// - window abuse: a stream whose client never opens its window stops the backend being read (h2-upstream.ts)
//   and is reset after the idle timeout; maxSessionMemory bounds what nghttp2 holds per session.
// A connection that has sent no request after the header timeout is closed, as is one idle for the idle
// timeout; connections count against the shared connection budget like HTTP/1.1's (https.ts).
import {
  constants,
  createServer,
  type Http2Server,
  type Http2Session,
  type ServerHttp2Stream,
  type ServerOptions,
} from "node:http2";
import type { TLSSocket } from "node:tls";
import type { AgentBackend } from "../contract/agent-config.js";
import { MAX_HEAD_BYTES } from "./framer.js";
import { H2Refusal, type H2Request, type H2RequestContext, readH2Request } from "./h2-request.js";
import { answerError, Upstreams } from "./h2-upstream.js";
import { HttpFramingError } from "./http1.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";

/** Open streams per client connection (Node's default is unbounded). */
export const H2_MAX_CONCURRENT_STREAMS = 100;
/** Client RST_STREAMs allowed in a burst, then per second (nghttp2's own defaults are 1000 and 33). */
export const H2_RESET_BURST = 200;
export const H2_RESET_RATE = 50;

/** The http2 server's limits; everything not set here is Node's default (docs/security.md lists them). */
/** maxOutstandingSettings is read by Node (updateOptionsBuffer) but missing from @types/node. */
export const H2_SERVER_OPTIONS: ServerOptions & { maxOutstandingSettings: number } = {
  settings: {
    maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS,
    maxHeaderListSize: MAX_HEAD_BYTES,
    enablePush: false,
    enableConnectProtocol: false,
  },
  maxHeaderListPairs: 128,
  maxSessionMemory: 8,
  maxSettings: 32,
  maxOutstandingSettings: 10,
  maxOutstandingPings: 10,
  maxSessionInvalidFrames: 100,
  maxSessionRejectedStreams: 100,
  streamResetBurst: H2_RESET_BURST,
  streamResetRate: H2_RESET_RATE,
};

/** What one client connection's streams need: its expose's name rules, routing and client address. */
export interface H2Connection {
  /** Expose name (SNI's choice), for metrics and logs. */
  name: string;
  context: H2RequestContext;
  /** The backend of a request; throws HttpFramingError for a target a routed expose refuses. */
  route(request: H2Request): AgentBackend;
}

export interface H2FrontOptions {
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  dialTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

/** The HTTP/2 side of one https listener. */
export class H2Front {
  private readonly server: Http2Server;
  private readonly upstreams: Upstreams;
  private readonly connections = new WeakMap<Http2Session, H2Connection>();
  private readonly sessions = new Set<Http2Session>();
  private next: H2Connection | undefined;

  constructor(private readonly opts: H2FrontOptions) {
    this.upstreams = new Upstreams(opts);
    this.server = createServer(H2_SERVER_OPTIONS);
    // The session is made synchronously inside emit("connection") (node lib/internal/http2/core.js
    // connectionListener), so `next` is the connection it belongs to.
    this.server.on("session", (session) => this.onSession(session));
    this.server.on("stream", (stream, _headers, flags, rawHeaders) => this.onStream(stream, flags, rawHeaders));
  }

  /** Serves one TLS connection whose ALPN chose h2. */
  serve(socket: TLSSocket, connection: H2Connection): void {
    this.next = connection;
    try {
      this.server.emit("connection", socket);
    } finally {
      this.next = undefined;
    }
  }

  /**
   * Shutdown: every session gets GOAWAY (its streams in flight finish, the client opens new ones elsewhere),
   * so the listener's grace period ends as soon as they are done (https.ts close).
   */
  drain(): void {
    for (const session of this.sessions) session.close();
  }

  close(): void {
    this.upstreams.close();
  }

  private onSession(session: Http2Session): void {
    const connection = this.next;
    if (!connection) {
      session.destroy();
      return;
    }
    this.connections.set(session, connection);
    this.sessions.add(session);
    session.once("close", () => this.sessions.delete(session));
    session.on("error", (err) =>
      this.opts.log.debug("http2 session error", { expose: connection.name, error: err.message }),
    );
    // Slowloris: the first request must be complete within the header timeout (it runs from the handshake).
    const headerTimer = setTimeout(() => session.destroy(), this.opts.headerTimeoutMs);
    headerTimer.unref();
    session.once("stream", () => clearTimeout(headerTimer));
    session.once("close", () => clearTimeout(headerTimer));
    session.setTimeout(this.opts.idleTimeoutMs, () => session.destroy());
  }

  private onStream(stream: ServerHttp2Stream, flags: number, rawHeaders: string[]): void {
    const connection = this.connections.get(stream.session as Http2Session);
    stream.on("error", () => {}); // a reset stream: its close handlers clean up
    if (!connection) {
      stream.close(constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    let request: H2Request;
    let backend: AgentBackend;
    try {
      request = readH2Request(rawHeaders, connection.context);
      backend = connection.route(request);
    } catch (err) {
      if (!(err instanceof H2Refusal || err instanceof HttpFramingError)) throw err;
      this.opts.log.debug("bad request", { expose: connection.name, error: err.message });
      if (err.status === "malformed") stream.close(constants.NGHTTP2_PROTOCOL_ERROR);
      else answerError(stream, err.status);
      return;
    }
    // A stream with no frame either way for the idle timeout (a window never opened) is reset.
    stream.setTimeout(this.opts.idleTimeoutMs, () => stream.close(constants.NGHTTP2_CANCEL));
    const hasBody = (flags & constants.NGHTTP2_FLAG_END_STREAM) === 0;
    this.upstreams.forward({ name: connection.name, client: stream, request, hasBody, backend });
  }
}
