// The data path of http exposes: after TLS is terminated, each client connection gets its own backend
// connection and bytes are piped both ways. Requests are read as far as HTTP/1.1 framing needs, strictly
// (framer.ts, http1.ts: anything backends could parse differently is 400): each head is rewritten (client
// identity set, Connection-named headers dropped) and its body (Content-Length or chunked) passed through,
// chunk-size lines normalised, trailers checked. Responses are followed only for framing (response.ts).
// Profiling showed Node's HTTP server + client pair spending ~190 µs of CPU per proxied request, most of it in
// the two parsers, the keep-alive agent and their stream plumbing; the pipe keeps what http mode is for
// (per-name TLS/SNI, client identity headers, 502/504 when the backend is away) at a fraction of that.
// Consequences, by design: the backend connection lives as long as the client's (keep-alive across requests
// is the client's and backend's own). After an upgrade request the client's further bytes are held until the
// backend answers it: 101 turns the connection into a raw stream both ways; any other final answer keeps it
// HTTP, and the held bytes are framed as requests.
import { connect, type Socket } from "node:net";
import { formatHostPort, type HostPort } from "./dial.js";
import { MAX_HELD_BYTES, RequestFramer } from "./framer.js";
import type { HttpFramingError, OwnedHeaders } from "./http1.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { ResponseTracker } from "./response.js";
import type { RequestFacts } from "./routes.js";

export interface PipeTarget {
  /** Expose name, for metrics and logs. */
  name: string;
  /** An h2c backend (`protocol`) is refused to HTTP/1.1 clients with 502. */
  backend: HostPort & { protocol?: string };
  dialTimeoutMs: number;
  idleTimeoutMs: number;
  /** From the start of a request head to its end (slowloris bound). */
  headerTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
  /** Dials the backend another way (kube-api: TLS to the API server); ready when `event` fires. */
  dial?: () => { socket: Socket; event: "connect" | "secureConnect" };
  /** Headers this connection owns beyond the client-identity ones (http1.ts OwnedHeaders). */
  owned?: OwnedHeaders;
  /**
   * Routed exposes (routes.ts): each request's backend by its path (`backend` is then unused). Requests of one
   * connection for another backend wait until the earlier ones are answered; then the backend connection is
   * closed and the new one dialled, so answers never interleave.
   */
  route?: (requestTarget: string, request?: RequestFacts) => HostPort & { protocol?: string };
  /** Each forwarded request's method and target, then each final answer's status, in the same order. */
  onRequest?: (method: string, target: string) => void;
  onStatus?: (code: number) => void;
}

type ErrorStatus = 400 | 404 | 431 | 500 | 501 | 502 | 504;

/** The reason phrase of every answer the agent makes itself, HTTP/1.1 and HTTP/2 (h2-upstream.ts). */
export const STATUS_TEXT = {
  400: "Bad Request",
  404: "Not Found",
  421: "Misdirected Request",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  504: "Gateway Timeout",
} as const;

function errorResponse(status: ErrorStatus): string {
  const text = STATUS_TEXT[status];
  const body = status >= 500 ? `${status} ${text}\n` : "";
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
}

/**
 * Serves one TLS client connection of an http expose until both sides are closed: the backend is dialled
 * when the first request head is complete; a refused or failed dial answers 502, a dial timeout 504.
 * `clientIp` (from a PROXY header) replaces the peer address in X-Forwarded-For.
 */
export function pipeHttpConnection(client: Socket, target: PipeTarget, clientIp?: string): Promise<void> {
  return new Promise((resolve) => new HttpPipe(client, target, clientIp, resolve).start());
}

/**
 * One client connection and its backend connection: the state the events share, and a method per event.
 * Listeners that are removed or shared (onData, destroyBoth, closed) are fields, so each keeps one identity.
 */
class HttpPipe {
  private readonly framer: RequestFramer;
  private readonly responses = new ResponseTracker();
  private upstream: Socket | undefined;
  private connected = false;
  private queued: Buffer[] = [];
  private headTimer: NodeJS.Timeout | undefined;
  private clientEnded = false;
  /**
   * A bad request: what came before it is forwarded and answered first (the backend gets a FIN instead of
   * more requests), then the client gets this error and the connection closes.
   */
  private failing: ErrorStatus | undefined;
  /** Sockets not closed yet: the client, and the backend once dialled. */
  private open = 1;

  constructor(
    private readonly client: Socket,
    private readonly target: PipeTarget,
    clientIp: string | undefined,
    private readonly done: () => void,
  ) {
    this.framer = new RequestFramer(
      clientIp ?? client.remoteAddress?.replace(/^::ffff:/, ""),
      target.owned,
      target.route,
    );
    this.framer.onRequest = (headMethod, upgrade, method, requestTarget) => {
      this.responses.sent(headMethod, upgrade);
      target.onRequest?.(method, requestTarget);
    };
    this.responses.onStatus = target.onStatus;
    this.framer.onHeadStart = () => this.startHeadTimer();
    this.framer.onHeadEnd = () => clearTimeout(this.headTimer);
    this.responses.onUpgrade = (switched) => this.upgradeAnswered(switched);
  }

  start(): void {
    const { client } = this;
    client.setTimeout(this.target.idleTimeoutMs, this.destroyBoth);
    client.on("data", this.onData);
    client.on("error", this.destroyBoth);
    client.on("drain", () => this.upstream?.resume());
    client.once("end", () => this.clientEnd());
    client.once("close", () => {
      clearTimeout(this.headTimer);
      if (!this.connected) this.upstream?.destroy();
      this.closed();
    });
    // The first head's timer runs from the handshake, so a client that sends nothing is cut as well.
    this.framer.inHead = true;
    this.startHeadTimer();
  }

  private readonly closed = (): void => {
    if (--this.open === 0) this.done();
  };

  private readonly destroyBoth = (): void => {
    clearTimeout(this.headTimer);
    this.client.destroy();
    this.upstream?.destroy();
  };

  private readonly onData = (chunk: Buffer): void => this.frame(this.framer.push(chunk));

  private startHeadTimer(): void {
    clearTimeout(this.headTimer);
    this.headTimer = setTimeout(this.destroyBoth, this.target.headerTimeoutMs);
    this.headTimer.unref();
  }

  private refuse(status: ErrorStatus): void {
    clearTimeout(this.headTimer);
    this.client.off("data", this.onData);
    this.client.end(errorResponse(status));
    this.client.setTimeout(2000); // a client that does not close after the answer is cut
  }

  private send(pieces: Buffer[]): void {
    const { upstream } = this;
    if (!upstream) return;
    if (!this.connected) {
      this.queued.push(...pieces);
      return;
    }
    let ok = true;
    for (const piece of pieces) ok = upstream.write(piece) && ok;
    if (!ok) this.client.pause();
  }

  private dial(): void {
    const { target, client } = this;
    const started = process.hrtime.bigint();
    const backend = (this.framer.current as (HostPort & { protocol?: string }) | undefined) ?? target.backend;
    if (backend.protocol === "h2c") {
      // An h2c backend speaks HTTP/2 only; HTTP/1.1 requests are not translated to it (docs/http2.md).
      target.log.debug("bad request", {
        expose: target.name,
        error: `HTTP/1.1 to ${formatHostPort(backend)}, an h2c backend`,
      });
      this.refuse(502);
      return;
    }
    const { socket, event } = target.dial?.() ?? {
      socket: connect({ host: backend.host, port: backend.port, allowHalfOpen: true, noDelay: true }),
      event: "connect",
    };
    this.upstream = socket;
    this.open++;
    client.pause(); // until the backend is there
    const dialTimer = setTimeout(() => socket.destroy(new Error("dial timeout")), target.dialTimeoutMs);
    const onDialError = (err: NodeJS.ErrnoException) => {
      clearTimeout(dialTimer);
      const timedOut = err.message === "dial timeout";
      target.metrics.dialErrors.inc({ name: target.name });
      target.log.debug("backend dial failed", {
        expose: target.name,
        error: `${formatHostPort(backend)}: ${timedOut ? `timed out after ${target.dialTimeoutMs / 1000}s` : (err.code ?? err.message)}`,
      });
      this.upstream = undefined;
      this.refuse(timedOut ? 504 : 502);
      client.resume();
    };
    socket.once("error", onDialError);
    socket.once("close", this.closed);
    socket.once(event, () => {
      clearTimeout(dialTimer);
      socket.off("error", onDialError);
      target.metrics.dialDuration.observe({ name: target.name }, Number(process.hrtime.bigint() - started) / 1e9);
      this.backendReady(socket);
    });
  }

  private backendReady(socket: Socket): void {
    const { client } = this;
    socket.on("error", this.destroyBoth);
    this.connected = true;
    socket.setTimeout(this.target.idleTimeoutMs, this.destroyBoth);
    // Node's own Buffer per read: with a reused buffer (read-buffer.ts) here the HTTPS bench measured 71 µs of CPU
    // a request instead of 38 — most likely because the client's TLS write stays pending (writableLength > 0)
    // until the encrypted bytes are out, so reads retained their buffer and each next one took a fresh 64 KiB.
    socket.on("data", (chunk: Buffer) => this.backendData(socket, chunk));
    socket.on("drain", () => client.resume());
    socket.once("end", () => {
      clearTimeout(this.headTimer);
      client.end();
    });
    const pieces = this.queued;
    this.queued = [];
    this.send(pieces);
    if (this.clientEnded && !this.framer.awaiting) socket.end();
    else client.resume();
  }

  private backendData(socket: Socket, chunk: Buffer): void {
    try {
      this.responses.push(chunk);
    } catch (err) {
      this.target.log.debug("bad response", { expose: this.target.name, error: (err as Error).message });
      this.destroyBoth();
      return;
    }
    if (!this.client.write(chunk)) socket.pause();
    if (this.failing !== undefined && this.responses.idle) {
      socket.destroy();
      this.refuse(this.failing);
    } else if (this.framer.switching && this.responses.idle) this.switchBackend();
  }

  /**
   * Every request sent to the current backend is answered and the next one is for another: the old backend
   * connection is let go (its end or errors no longer concern the client) and the held request is framed
   * again, which dials the new backend.
   */
  private switchBackend(): void {
    const old = this.upstream;
    if (old) {
      old.removeAllListeners("data");
      old.removeAllListeners("end");
      old.removeAllListeners("drain");
      old.removeAllListeners("error");
      old.removeAllListeners("timeout");
      old.on("error", () => {}); // closing: nothing it says matters any more
      old.destroy();
    }
    this.upstream = undefined;
    this.connected = false;
    this.frame(this.framer.switched()); // dials: the client resumes when the new backend is there
  }

  private fail(err: HttpFramingError): void {
    this.target.log.debug("bad request", { expose: this.target.name, error: err.message });
    this.client.off("data", this.onData);
    clearTimeout(this.headTimer);
    const { upstream } = this;
    if (!upstream || this.responses.idle) {
      upstream?.destroy();
      this.refuse(err.status);
      return;
    }
    if (this.framer.failedMidRequest) {
      this.destroyBoth(); // the backend holds half a request: nothing it answers can be trusted to end cleanly
      return;
    }
    this.failing = err.status;
    if (this.connected) upstream.end();
    else this.clientEnded = true;
  }

  private frame(pieces: Buffer[]): void {
    if (pieces.length > 0) {
      if (!this.upstream) this.dial();
      this.send(pieces);
    }
    if (this.framer.failed) this.fail(this.framer.failed);
    else if (this.framer.switching && this.responses.idle && this.upstream) this.switchBackend();
    else if (this.framer.awaiting && this.framer.held > MAX_HELD_BYTES) this.client.pause();
  }

  private upgradeAnswered(switched: boolean): void {
    this.frame(this.framer.answered(switched));
    if (this.framer.awaiting || this.framer.failed) return;
    this.client.resume();
    if (this.clientEnded && this.connected) this.upstream?.end(); // held back while the upgrade was undecided
  }

  private clientEnd(): void {
    this.clientEnded = true;
    clearTimeout(this.headTimer);
    if (this.connected && !this.framer.awaiting) this.upstream?.end();
    else if (!this.upstream) this.client.end();
  }
}
