// The request direction of the http pipe (pipe.ts): the client's byte stream cut into requests, strictly
// (http1.ts), and turned into what the backend gets — rewritten heads, bodies as they come, normalised chunk
// framing, checked trailers — with any split of the input across reads giving the same bytes.
import {
  HttpFramingError,
  keepTrailerLine,
  MAX_CHUNK_LINE,
  type OwnedHeaders,
  parseChunkLine,
  type RequestHead,
  rewriteRequestHead,
} from "./http1.js";
import type { RequestFacts } from "./routes.js";

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
  | { at: "switch" }
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
  onRequest?: (headMethod: boolean, upgrade: boolean, method: string, target: string) => void;
  /** The backend of the requests forwarded so far (routed exposes; set by the first head). */
  current: unknown;
  /** A head routed elsewhere than `current`: held, with what follows, until `switched()`. */
  private next: unknown;

  /**
   * `route` (routed exposes, routes.ts) names each request's backend; it throws HttpFramingError for a target
   * it refuses. A request for another backend than the previous ones stops the framing before its head.
   */
  constructor(
    private readonly clientIp: string | undefined,
    private readonly owned?: OwnedHeaders,
    private readonly route?: (target: string, request: RequestFacts) => unknown,
  ) {}

  /** Waiting for the answer to an upgrade request, or for a backend switch (input is held). */
  get awaiting(): boolean {
    return this.state.at === "await" || this.state.at === "switch";
  }

  /** A request for another backend is held: the caller lets the earlier ones be answered, then `switched()`. */
  get switching(): boolean {
    return this.state.at === "switch";
  }

  /** The earlier requests are answered and the old backend let go: the held head goes on to `current`. */
  switched(): Buffer[] {
    if (this.state.at !== "switch") return [];
    this.current = this.next;
    this.next = undefined;
    this.state = { at: "head" };
    return this.push(Buffer.alloc(0));
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
      if (s.at === "await" || s.at === "switch") {
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
        const rewritten = rewriteRequestHead(data.toString("latin1", start, end), this.clientIp, "https", this.owned);
        this.inHead = false;
        this.onHeadEnd?.();
        if (this.holdForSwitch(rewritten, data)) break;
        data = data.subarray(end + 4);
        this.onRequest?.(rewritten.headMethod, rewritten.upgrade, rewritten.method, rewritten.target);
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
        if (keepTrailerLine(line, this.owned)) out.push(data.subarray(0, eol + 2));
      }
      data = data.subarray(eol + 2);
    }
  }

  /** Routes a parsed head: true when it is for another backend (then it is held, with all after it). */
  private holdForSwitch(head: RequestHead, data: Buffer): boolean {
    if (!this.route) return false;
    const backend = this.route(head.target, head);
    if (this.current === undefined || backend === this.current) {
      this.current = backend;
      return false;
    }
    this.next = backend;
    this.state = { at: "switch" };
    this.pending = Buffer.from(data); // the head again, framed anew after the switch
    return true;
  }

  private requestDone(): void {
    this.state = this.upgradeAsked ? { at: "await" } : { at: "head" };
    this.upgradeAsked = false;
  }
}
