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

export { MAX_HEAD_BYTES, MAX_HELD_BYTES, RequestFramer } from "./framer.js";
export { HttpFramingError, rewriteRequestHead } from "./http1.js";

export interface PipeTarget {
  /** Expose name, for metrics and logs. */
  name: string;
  backend: HostPort;
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
  /** Each forwarded request's method and target, then each final answer's status, in the same order. */
  onRequest?: (method: string, target: string) => void;
  onStatus?: (code: number) => void;
}

type ErrorStatus = 400 | 431 | 501 | 502 | 504;

function errorResponse(status: ErrorStatus): string {
  const text = {
    400: "Bad Request",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    502: "Bad Gateway",
    504: "Gateway Timeout",
  }[status];
  const body = status >= 500 ? `${status} ${text}\n` : "";
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
}

/**
 * Serves one TLS client connection of an http expose until both sides are closed: the backend is dialled
 * when the first request head is complete; a refused or failed dial answers 502, a dial timeout 504.
 * `clientIp` (from a PROXY header) replaces the peer address in X-Forwarded-For.
 */
export function pipeHttpConnection(client: Socket, target: PipeTarget, clientIp?: string): Promise<void> {
  const { metrics, log, name } = target;
  const address = formatHostPort(target.backend);
  const framer = new RequestFramer(clientIp ?? client.remoteAddress?.replace(/^::ffff:/, ""), target.owned);
  const responses = new ResponseTracker();
  framer.onRequest = (headMethod, upgrade, method, requestTarget) => {
    responses.sent(headMethod, upgrade);
    target.onRequest?.(method, requestTarget);
  };
  responses.onStatus = target.onStatus;
  let upstream: Socket | undefined;
  let connected = false;
  let queued: Buffer[] = [];
  let headTimer: NodeJS.Timeout | undefined;
  let clientEnded = false;
  return new Promise((resolve) => {
    let open = 1;
    const closed = () => {
      if (--open === 0) resolve();
    };
    const destroyBoth = () => {
      clearTimeout(headTimer);
      client.destroy();
      upstream?.destroy();
    };
    const refuse = (status: ErrorStatus) => {
      clearTimeout(headTimer);
      client.off("data", onData);
      client.end(errorResponse(status));
      client.setTimeout(2000); // a client that does not close after the answer is cut
    };
    framer.onHeadStart = () => {
      clearTimeout(headTimer);
      headTimer = setTimeout(destroyBoth, target.headerTimeoutMs);
      headTimer.unref();
    };
    framer.onHeadEnd = () => clearTimeout(headTimer);

    const send = (pieces: Buffer[]) => {
      if (!upstream) return;
      if (!connected) {
        queued.push(...pieces);
        return;
      }
      let ok = true;
      for (const piece of pieces) ok = upstream.write(piece) && ok;
      if (!ok) client.pause();
    };

    const dial = () => {
      const started = process.hrtime.bigint();
      const { socket, event } = target.dial?.() ?? {
        socket: connect({ host: target.backend.host, port: target.backend.port, allowHalfOpen: true, noDelay: true }),
        event: "connect",
      };
      upstream = socket;
      open++;
      client.pause(); // until the backend is there
      const dialTimer = setTimeout(() => socket.destroy(new Error("dial timeout")), target.dialTimeoutMs);
      const onDialError = (err: NodeJS.ErrnoException) => {
        clearTimeout(dialTimer);
        const timedOut = err.message === "dial timeout";
        metrics.dialErrors.inc({ name });
        log.debug("backend dial failed", {
          expose: name,
          error: `${address}: ${timedOut ? `timed out after ${target.dialTimeoutMs / 1000}s` : (err.code ?? err.message)}`,
        });
        upstream = undefined;
        refuse(timedOut ? 504 : 502);
        client.resume();
      };
      socket.once("error", onDialError);
      socket.once("close", closed);
      socket.once(event, () => {
        clearTimeout(dialTimer);
        socket.off("error", onDialError);
        socket.on("error", destroyBoth);
        metrics.dialDuration.observe({ name }, Number(process.hrtime.bigint() - started) / 1e9);
        connected = true;
        socket.setTimeout(target.idleTimeoutMs, destroyBoth);
        socket.on("data", (chunk: Buffer) => {
          try {
            responses.push(chunk);
          } catch (err) {
            log.debug("bad response", { expose: name, error: (err as Error).message });
            destroyBoth();
            return;
          }
          if (!client.write(chunk)) socket.pause();
          if (failing !== undefined && responses.idle) {
            socket.destroy();
            refuse(failing);
          }
        });
        client.on("drain", () => socket.resume());
        socket.on("drain", () => client.resume());
        socket.once("end", () => {
          clearTimeout(headTimer);
          client.end();
        });
        const pieces = queued;
        queued = [];
        send(pieces);
        if (clientEnded && !framer.awaiting) socket.end();
        else client.resume();
      });
    };

    // A bad request: what came before it is forwarded and answered first (the backend gets a FIN instead of
    // more requests), then the client gets the error and the connection closes.
    let failing: ErrorStatus | undefined;
    const fail = (err: HttpFramingError) => {
      log.debug("bad request", { expose: name, error: err.message });
      client.off("data", onData);
      clearTimeout(headTimer);
      if (!upstream || responses.idle) {
        upstream?.destroy();
        refuse(err.status);
        return;
      }
      if (framer.failedMidRequest) {
        destroyBoth(); // the backend holds half a request: nothing it answers can be trusted to end cleanly
        return;
      }
      failing = err.status;
      if (connected) upstream.end();
      else clientEnded = true;
    };
    const frame = (pieces: Buffer[]): void => {
      if (pieces.length > 0) {
        if (!upstream) dial();
        send(pieces);
      }
      if (framer.failed) fail(framer.failed);
      else if (framer.awaiting && framer.held > MAX_HELD_BYTES) client.pause();
    };
    const onData = (chunk: Buffer) => frame(framer.push(chunk));
    responses.onUpgrade = (switched) => {
      frame(framer.answered(switched));
      if (framer.awaiting || framer.failed) return;
      client.resume();
      if (clientEnded && connected) upstream?.end(); // held back while the upgrade was undecided
    };

    client.setTimeout(target.idleTimeoutMs, destroyBoth);
    client.on("data", onData);
    client.on("error", destroyBoth);
    client.once("end", () => {
      clientEnded = true;
      clearTimeout(headTimer);
      if (connected && !framer.awaiting) upstream?.end();
      else if (!upstream) client.end();
    });
    client.once("close", () => {
      clearTimeout(headTimer);
      if (!connected) upstream?.destroy();
      closed();
    });
    // The first head's timer runs from the handshake, so a client that sends nothing is cut as well.
    framer.inHead = true;
    framer.onHeadStart();
  });
}
