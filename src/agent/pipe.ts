// The data path of http exposes: after TLS is terminated, each client connection gets its own backend
// connection and bytes are piped both ways. Only the request direction is read, and only as far as HTTP/1.1
// framing needs: each request head is rewritten (X-Forwarded-For/Proto/Host set, Connection-named headers
// dropped) and its body (Content-Length or chunked) passed through untouched; responses are not parsed at all.
// Profiling showed Node's HTTP server + client pair spending ~190 µs of CPU per proxied request, most of it in
// the two parsers, the keep-alive agent and their stream plumbing; the pipe keeps what http mode is for
// (per-name TLS/SNI, client identity headers, 502/504 when the backend is away) at a fraction of that.
// Consequences, by design: the backend connection lives as long as the client's (keep-alive across requests
// is the client's and backend's own, Connection/Keep-Alive/TE/Upgrade/Expect pass through); after an upgrade
// request (or CONNECT) the connection is a raw stream both ways, whatever the backend answered.
import { connect, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { formatHostPort, type HostPort } from "./dial.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";

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

/** Connection-named headers that still mean something on the pinned backend connection. */
const KEPT_NAMED = new Set(["keep-alive", "upgrade", "te", "transfer-encoding", "content-length", "host", "close"]);
/** Set by the agent (client values are replaced or extended) or meant for a proxy, never the backend. */
const REPLACED = new Set(["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "proxy-connection"]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.[01]$/;

export class HttpFramingError extends Error {
  constructor(
    readonly status: 400 | 431,
    message: string,
  ) {
    super(message);
  }
}

export interface RewrittenHead {
  head: Buffer;
  /** Body framing of this request. */
  body: { kind: "length"; length: number } | { kind: "chunked" } | { kind: "none" };
  /** Upgrade or CONNECT: after this request the connection is a raw stream. */
  raw: boolean;
}

/**
 * Rewrites one request head (without its final CRLFCRLF, latin1): hop-by-hop headers named in Connection and
 * Proxy-Connection dropped, X-Forwarded-For extended with `clientIp`, X-Forwarded-Proto/Host set, and the
 * body framing read (RFC 9112 §6: Transfer-Encoding must end in chunked and excludes Content-Length, which
 * must be one decimal value — anything else is 400, the request-smuggling cases).
 */
export function rewriteRequestHead(text: string, clientIp: string | undefined, proto = "https"): RewrittenHead {
  const lines = text.split("\r\n");
  if (!REQUEST_LINE.test(lines[0])) throw new HttpFramingError(400, "bad request line");
  const method = lines[0].slice(0, lines[0].indexOf(" ")).toUpperCase();
  const headers: [string, string, string][] = []; // lower-case name, value, original line
  const named = new Set<string>();
  let host: string | undefined;
  const forwardedFor: string[] = [];
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let upgrade = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    if (colon <= 0) throw new HttpFramingError(400, "bad header line");
    const rawName = line.slice(0, colon);
    if (!TOKEN.test(rawName)) throw new HttpFramingError(400, "bad header name"); // obs-fold too
    const name = rawName.toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers.push([name, value, line]);
    switch (name) {
      case "connection":
        for (const t of value.split(",")) if (t.trim()) named.add(t.trim().toLowerCase());
        break;
      case "host":
        if (host !== undefined) throw new HttpFramingError(400, "duplicate host");
        host = value;
        break;
      case "x-forwarded-for":
        forwardedFor.push(value);
        break;
      case "content-length":
        for (const v of value.split(",")) {
          const n = v.trim();
          if (!/^\d{1,15}$/.test(n) || (contentLength !== undefined && contentLength !== n))
            throw new HttpFramingError(400, "bad content-length");
          contentLength = n;
        }
        break;
      case "transfer-encoding":
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
        break;
      case "upgrade":
        upgrade = true;
        break;
    }
  }
  let body: RewrittenHead["body"] = { kind: "none" };
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) throw new HttpFramingError(400, "content-length with transfer-encoding");
    const codings = transferEncoding.split(",").map((c) => c.trim().toLowerCase());
    if (codings.at(-1) !== "chunked") throw new HttpFramingError(400, "transfer-encoding not ending in chunked");
    body = { kind: "chunked" };
  } else if (contentLength !== undefined && Number(contentLength) > 0) {
    body = { kind: "length", length: Number(contentLength) };
  }
  const out = [lines[0]];
  for (const [name, , line] of headers) {
    if (REPLACED.has(name) || (named.has(name) && !KEPT_NAMED.has(name))) continue;
    out.push(line);
  }
  const chain = [...forwardedFor, clientIp].filter((v): v is string => !!v);
  if (chain.length > 0) out.push(`x-forwarded-for: ${chain.join(", ")}`);
  out.push(`x-forwarded-proto: ${proto}`);
  if (host) out.push(`x-forwarded-host: ${host}`);
  out.push("", "");
  return {
    head: Buffer.from(out.join("\r\n"), "latin1"),
    body,
    raw: method === "CONNECT" || (upgrade && named.has("upgrade")),
  };
}

type State =
  | { at: "head" }
  | { at: "length"; left: number }
  | { at: "chunk-size" }
  | { at: "chunk-data"; left: number }
  | { at: "chunk-crlf"; left: number }
  | { at: "trailers" }
  | { at: "raw" };

/**
 * Splits the client's byte stream into what goes to the backend: rewritten heads and untouched bodies.
 * `push` returns the buffers to forward for one chunk of input (empty while a head or chunk-size line is
 * still incomplete), or throws HttpFramingError.
 */
export class RequestFramer {
  private state: State = { at: "head" };
  private pending: Buffer | undefined;
  /** True while a request head has started but not ended (for the header timeout). */
  inHead = false;
  onHeadStart?: () => void;
  onHeadEnd?: () => void;

  constructor(private readonly clientIp: string | undefined) {}

  push(input: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let data = this.pending ? Buffer.concat([this.pending, input]) : input;
    this.pending = undefined;
    while (data.length > 0) {
      const s = this.state;
      if (s.at === "raw") {
        out.push(data);
        break;
      }
      if (s.at === "length" || s.at === "chunk-data") {
        const n = Math.min(s.left, data.length);
        out.push(data.subarray(0, n));
        data = data.subarray(n);
        s.left -= n;
        if (s.left === 0) this.state = s.at === "length" ? { at: "head" } : { at: "chunk-crlf", left: 2 };
        continue;
      }
      if (s.at === "chunk-crlf") {
        const n = Math.min(s.left, data.length);
        const expected = s.left === 2 ? "\r\n" : "\n";
        if (data.subarray(0, n).toString("latin1") !== expected.slice(0, n))
          throw new HttpFramingError(400, "bad chunk");
        out.push(data.subarray(0, n));
        data = data.subarray(n);
        s.left -= n;
        if (s.left === 0) this.state = { at: "chunk-size" };
        continue;
      }
      if (s.at === "head") {
        // Stray CRLFs between requests are allowed (RFC 9112 §2.2); pass them on.
        if (!this.inHead) {
          this.inHead = true;
          this.onHeadStart?.();
        }
        const end = data.indexOf("\r\n\r\n", 0, "latin1");
        if (end < 0) {
          if (data.length > MAX_HEAD_BYTES) throw new HttpFramingError(431, "request head too large");
          this.pending = Buffer.from(data);
          break;
        }
        if (end > MAX_HEAD_BYTES) throw new HttpFramingError(431, "request head too large");
        let start = 0;
        while (data[start] === 0x0d && data[start + 1] === 0x0a) start += 2;
        const text = data.toString("latin1", start, end);
        data = data.subarray(end + 4);
        if (start >= end) continue; // only blank lines so far
        const rewritten = rewriteRequestHead(text, this.clientIp);
        this.inHead = false;
        this.onHeadEnd?.();
        out.push(rewritten.head);
        const { body } = rewritten;
        if (body.kind === "length") this.state = { at: "length", left: body.length };
        else if (body.kind === "chunked") this.state = { at: "chunk-size" };
        if (rewritten.raw && body.kind === "none") this.state = { at: "raw" };
        continue;
      }
      // chunk-size and trailers: line by line
      const eol = data.indexOf("\r\n", 0, "latin1");
      if (eol < 0) {
        if (data.length > MAX_HEAD_BYTES) throw new HttpFramingError(431, "chunk line too long");
        this.pending = Buffer.from(data);
        break;
      }
      const line = data.toString("latin1", 0, eol);
      out.push(data.subarray(0, eol + 2));
      data = data.subarray(eol + 2);
      if (s.at === "chunk-size") {
        const size = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/.exec(line);
        if (!size) throw new HttpFramingError(400, "bad chunk size");
        const left = Number.parseInt(size[1], 16);
        this.state = left === 0 ? { at: "trailers" } : { at: "chunk-data", left };
      } else if (line === "") {
        this.state = { at: "head" };
      }
    }
    return out;
  }
}

function errorResponse(status: 400 | 431 | 502 | 504): string {
  const text = {
    400: "Bad Request",
    431: "Request Header Fields Too Large",
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
    const refuse = (status: 400 | 431 | 502 | 504) => {
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
          if (!client.write(chunk)) socket.pause();
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
        if (clientEnded) socket.end();
        else client.resume();
      });
    };

    const onData = (chunk: Buffer) => {
      let pieces: Buffer[];
      try {
        pieces = framer.push(chunk);
      } catch (err) {
        const status = err instanceof HttpFramingError ? err.status : 400;
        log.debug("bad request", { expose: name, error: (err as Error).message });
        if (upstream)
          destroyBoth(); // responses may be in flight: no answer can be slotted in
        else refuse(status);
        return;
      }
      if (pieces.length === 0) return;
      if (!upstream) dial();
      send(pieces);
    };

    client.setTimeout(target.idleTimeoutMs, destroyBoth);
    client.on("data", onData);
    client.on("error", destroyBoth);
    client.once("end", () => {
      clientEnded = true;
      clearTimeout(headTimer);
      if (connected) upstream?.end();
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
