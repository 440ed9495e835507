// The data path of http exposes: after TLS is terminated, each client connection gets its own backend
// connection and bytes are piped both ways. Requests are read as far as HTTP/1.1 framing needs, strictly
// (http1.ts: anything backends could parse differently is 400): each head is rewritten (client identity set,
// Connection-named headers dropped) and its body (Content-Length or chunked) passed through, with chunk-size
// lines normalised and trailers checked. Responses are followed only for framing (response.ts), never changed.
// Profiling showed Node's HTTP server + client pair spending ~190 µs of CPU per proxied request, most of it in
// the two parsers, the keep-alive agent and their stream plumbing; the pipe keeps what http mode is for
// (per-name TLS/SNI, client identity headers, 502/504 when the backend is away) at a fraction of that.
// Consequences, by design: the backend connection lives as long as the client's (keep-alive across requests
// is the client's and backend's own). After an upgrade request the client's further bytes are held until the
// backend answers it: 101 turns the connection into a raw stream both ways; any other final answer keeps it
// HTTP, and the held bytes are framed as requests.
import { connect, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { formatHostPort, type HostPort } from "./dial.js";
import { HttpFramingError, keepTrailerLine, MAX_CHUNK_LINE, parseChunkLine, rewriteRequestHead } from "./http1.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { ResponseTracker } from "./response.js";

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
}

/** Node's own default (--max-http-header-size). */
export const MAX_HEAD_BYTES = 16 * 1024;

type State =
  | { at: "head" }
  | { at: "length"; left: number }
  | { at: "chunk-size" }
  | { at: "chunk-data"; left: number }
  | { at: "chunk-crlf"; left: number }
  | { at: "trailers"; bytes: number }
  | { at: "await" }
  | { at: "raw" }
  | { at: "failed" };

const CRLFCRLF = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");

/** Bytes held from a client while its upgrade request waits for the backend's answer, before it is paused. */
export const MAX_HELD_BYTES = 64 * 1024;

/**
 * An unfinished head or line that already cannot become valid (a LF without its CR, a CR not followed by LF,
 * a NUL): refused at once, not after the header timeout. Only run on what is buffered for lack of an end.
 */
function badLineBytes(data: Buffer): boolean {
  if (data.indexOf(0) >= 0) return true;
  for (let i = data.indexOf(0x0a); i >= 0; i = data.indexOf(0x0a, i + 1))
    if (i === 0 || data[i - 1] !== 0x0d) return true;
  for (let i = data.indexOf(0x0d); i >= 0 && i < data.length - 1; i = data.indexOf(0x0d, i + 1))
    if (data[i + 1] !== 0x0a) return true;
  return false;
}

/**
 * Splits the client's byte stream into what goes to the backend: rewritten heads, bodies, normalised chunk
 * framing. `push` returns the buffers to forward for one chunk of input (empty while a head or chunk line is
 * still incomplete, or while an upgrade waits for its answer): everything before the first bad byte, which
 * sets `failed` (the framer then takes nothing more). Input split at any byte gives the same result.
 */
export class RequestFramer {
  private state: State = { at: "head" };
  private pending: Buffer | undefined;
  /** The current request asked for an upgrade: after its body the framer waits for the backend's answer. */
  private upgradeAsked = false;
  /** The first framing error: nothing at or after it was forwarded. */
  failed: HttpFramingError | undefined;
  /** The error came inside a forwarded request (its body or trailers), not in a new head. */
  failedMidRequest = false;
  /** True while a request head has started but not ended (for the header timeout). */
  inHead = false;
  onHeadStart?: () => void;
  onHeadEnd?: () => void;
  /** Each forwarded request, in order (the response side pairs answers with them). */
  onRequest?: (headMethod: boolean, upgrade: boolean) => void;

  constructor(private readonly clientIp: string | undefined) {}

  /** Waiting for the answer to an upgrade request (input is held). */
  get awaiting(): boolean {
    return this.state.at === "await";
  }

  /** Bytes held while awaiting. */
  get held(): number {
    return this.pending?.length ?? 0;
  }

  /** The backend answered the upgrade request: `true` (101) makes the rest raw, `false` goes on framing. */
  answered(switched: boolean): Buffer[] {
    if (this.state.at !== "await") return [];
    this.state = switched ? { at: "raw" } : { at: "head" };
    return this.push(Buffer.alloc(0));
  }

  push(input: Buffer): Buffer[] {
    const out: Buffer[] = [];
    if (this.state.at === "failed") return out;
    try {
      this.frame(input, out);
    } catch (err) {
      if (!(err instanceof HttpFramingError)) throw err;
      this.failed = err;
      this.failedMidRequest = this.state.at !== "head";
      this.state = { at: "failed" };
      this.pending = undefined;
    }
    return out;
  }

  private frame(input: Buffer, out: Buffer[]): void {
    let data = this.pending ? (input.length > 0 ? Buffer.concat([this.pending, input]) : this.pending) : input;
    this.pending = undefined;
    while (data.length > 0) {
      const s = this.state;
      if (s.at === "failed") return;
      if (s.at === "raw") {
        out.push(data);
        break;
      }
      if (s.at === "await") {
        this.pending = Buffer.from(data);
        break;
      }
      if (s.at === "length" || s.at === "chunk-data") {
        const n = Math.min(s.left, data.length);
        out.push(data.subarray(0, n));
        data = data.subarray(n);
        s.left -= n;
        if (s.left === 0) {
          if (s.at === "chunk-data") this.state = { at: "chunk-crlf", left: 2 };
          else this.requestDone();
        }
        continue;
      }
      if (s.at === "chunk-crlf") {
        const n = Math.min(s.left, data.length);
        for (let i = 0; i < n; i++)
          if (data[i] !== (s.left - i === 2 ? 0x0d : 0x0a)) throw new HttpFramingError(400, "bad chunk end");
        out.push(data.subarray(0, n));
        data = data.subarray(n);
        s.left -= n;
        if (s.left === 0) this.state = { at: "chunk-size" };
        continue;
      }
      if (s.at === "head") {
        if (!this.inHead) {
          this.inHead = true;
          this.onHeadStart?.();
        }
        const end = data.indexOf(CRLFCRLF);
        if (end < 0) {
          if (data.length > MAX_HEAD_BYTES) throw new HttpFramingError(431, "request head too large");
          if (badLineBytes(data)) throw new HttpFramingError(400, "bare CR, LF or NUL in request head");
          this.pending = Buffer.from(data);
          break;
        }
        if (end > MAX_HEAD_BYTES) throw new HttpFramingError(431, "request head too large");
        // Empty lines (CRLF) before a request line are allowed (RFC 9112 §2.2) and not forwarded.
        let start = 0;
        while (data[start] === 0x0d && data[start + 1] === 0x0a) start += 2;
        if (start >= end) {
          data = data.subarray(end + 4);
          continue;
        }
        const rewritten = rewriteRequestHead(data.toString("latin1", start, end), this.clientIp);
        data = data.subarray(end + 4);
        this.inHead = false;
        this.onHeadEnd?.();
        this.onRequest?.(rewritten.headMethod, rewritten.upgrade);
        out.push(rewritten.head);
        this.upgradeAsked = rewritten.upgrade;
        const { body } = rewritten;
        if (body.kind === "length") this.state = { at: "length", left: body.length };
        else if (body.kind === "chunked") this.state = { at: "chunk-size" };
        else this.requestDone();
        continue;
      }
      // chunk-size and trailer lines, CRLF-terminated: a bare CR or LF fails their syntax
      const limit = s.at === "chunk-size" ? MAX_CHUNK_LINE : MAX_HEAD_BYTES - s.bytes;
      const eol = data.indexOf(CRLF);
      if (eol < 0 || eol > limit) {
        if (data.length > limit) throw new HttpFramingError(400, "chunk or trailer line too long");
        if (badLineBytes(data)) throw new HttpFramingError(400, "bare CR, LF or NUL in chunk line");
        this.pending = Buffer.from(data);
        break;
      }
      const line = data.toString("latin1", 0, eol);
      if (s.at === "chunk-size") {
        const left = parseChunkLine(line);
        // Re-emitted without extensions, so no backend reads them differently.
        out.push(Buffer.from(`${left.toString(16)}\r\n`, "latin1"));
        this.state = left === 0 ? { at: "trailers", bytes: 0 } : { at: "chunk-data", left };
      } else if (eol === 0) {
        out.push(data.subarray(0, 2));
        this.requestDone();
      } else {
        s.bytes += eol + 2;
        if (keepTrailerLine(line)) out.push(data.subarray(0, eol + 2));
      }
      data = data.subarray(eol + 2);
    }
  }

  private requestDone(): void {
    this.state = this.upgradeAsked ? { at: "await" } : { at: "head" };
    this.upgradeAsked = false;
  }
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
export function pipeHttpConnection(client: TLSSocket, target: PipeTarget, clientIp?: string): Promise<void> {
  const { metrics, log, name } = target;
  const address = formatHostPort(target.backend);
  const framer = new RequestFramer(clientIp ?? client.remoteAddress?.replace(/^::ffff:/, ""));
  const responses = new ResponseTracker();
  framer.onRequest = (headMethod, upgrade) => responses.sent(headMethod, upgrade);
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
      const socket = connect({
        host: target.backend.host,
        port: target.backend.port,
        allowHalfOpen: true,
        noDelay: true,
      });
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
      socket.once("connect", () => {
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
