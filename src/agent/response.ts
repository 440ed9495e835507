// The response side of the http pipe, read only as far as framing needs: which response answers which
// request, so that an upgrade request switches the connection to a raw stream only once the backend answered
// it with 101 (RFC 9110 §15.2.2). Until then the agent holds the client's later bytes; if the backend
// declines (any final status), the connection stays HTTP and those bytes are framed and rewritten as usual.
// Response bytes are never changed or held here: the caller forwards each chunk as it comes.

/** Longest response head the agent follows; a longer one (or a malformed one) closes the connection. */
export const MAX_RESPONSE_HEAD = 64 * 1024;

export class ResponseFramingError extends Error {}

/** An unanswered request, as bits (no object per request): its response has no body, or it asked to upgrade. */
const HEAD_METHOD = 1;
const UPGRADE = 2;

type State =
  | { at: "head" }
  | { at: "length"; left: number }
  | { at: "chunk-size" }
  | { at: "chunk-data"; left: number }
  | { at: "trailers" }
  | { at: "eof" }
  | { at: "raw" };

const STATUS_LINE = /^HTTP\/1\.[01] ([1-9][0-9]{2})(?: |$)/;
const CRLFCRLF = Buffer.from("\r\n\r\n");
const CRLF = Buffer.from("\r\n");
const FRAMING = /\r\n(content-length|transfer-encoding)[ \t]*:([^\r]*)/gi;

export class ResponseTracker {
  private state: State = { at: "head" };
  private pending: Buffer | undefined;
  private readonly outstanding: number[] = [];
  /** Called once the backend's answer to a forwarded upgrade request is known. */
  onUpgrade?: (switched: boolean) => void;
  /** Called with the status of each final answer (101 included), in request order. */
  onStatus?: (code: number) => void;

  /** A request head was forwarded (in order). */
  sent(headMethod: boolean, upgrade: boolean): void {
    this.outstanding.push((headMethod ? HEAD_METHOD : 0) | (upgrade ? UPGRADE : 0));
  }

  /** Nothing forwarded is still unanswered, and no response is half read. */
  get idle(): boolean {
    return this.outstanding.length === 0 && this.state.at === "head" && this.pending === undefined;
  }

  /** Reads one chunk of the backend's bytes; throws ResponseFramingError on what it cannot follow. */
  push(input: Buffer): void {
    let data = this.pending ? Buffer.concat([this.pending, input]) : input;
    this.pending = undefined;
    while (data.length > 0) {
      const s = this.state;
      switch (s.at) {
        case "raw":
        case "eof":
          return;
        case "length":
        case "chunk-data": {
          const n = Math.min(s.left, data.length);
          data = data.subarray(n);
          s.left -= n;
          if (s.left === 0) this.state = s.at === "length" ? { at: "head" } : { at: "chunk-size" };
          continue;
        }
        case "head": {
          const end = data.indexOf(CRLFCRLF);
          if (end < 0) {
            if (data.length > MAX_RESPONSE_HEAD) throw new ResponseFramingError("response head too large");
            this.pending = Buffer.from(data);
            return;
          }
          this.head(data.toString("latin1", 0, end));
          data = data.subarray(end + 4);
          continue;
        }
        default: {
          // chunk-size and trailer lines
          const eol = data.indexOf(CRLF);
          if (eol < 0) {
            if (data.length > MAX_RESPONSE_HEAD) throw new ResponseFramingError("response chunk line too long");
            this.pending = Buffer.from(data);
            return;
          }
          if (s.at === "chunk-size") {
            const size = /^[0-9A-Fa-f]{1,12}/.exec(data.toString("latin1", 0, eol));
            if (!size) throw new ResponseFramingError("bad response chunk size");
            const left = Number.parseInt(size[0], 16);
            this.state = left === 0 ? { at: "trailers" } : { at: "chunk-data", left: left + 2 };
          } else if (eol === 0) {
            this.state = { at: "head" };
          }
          data = data.subarray(eol + 2);
        }
      }
    }
  }

  private head(text: string): void {
    const status = STATUS_LINE.exec(text);
    if (!status) throw new ResponseFramingError("bad response status line");
    const code = Number(status[1]);
    const request = this.outstanding[0] ?? 0;
    if (code === 101) {
      if (!(request & UPGRADE)) throw new ResponseFramingError("101 without an upgrade request");
      this.outstanding.shift();
      this.state = { at: "raw" };
      this.onStatus?.(code);
      this.onUpgrade?.(true);
      return;
    }
    if (code < 200) return; // 100, 102, 103: the final answer follows
    this.outstanding.shift();
    this.onStatus?.(code);
    if (request & UPGRADE) this.onUpgrade?.(false);
    // RFC 9112 §6.3: no body after HEAD, 204 and 304; then Transfer-Encoding, Content-Length, or until close.
    if (request & HEAD_METHOD || code === 204 || code === 304) return;
    let length: number | undefined;
    let chunked = false;
    let close = false;
    // Only the two framing fields matter: one regex pass instead of splitting every line.
    FRAMING.lastIndex = 0;
    for (let m = FRAMING.exec(text); m; m = FRAMING.exec(text)) {
      const value = m[2].trim();
      if (m[1].length === 14) {
        if (!/^[0-9]{1,15}$/.test(value) || (length !== undefined && length !== Number(value)))
          throw new ResponseFramingError("bad response content-length");
        length = Number(value);
      } else {
        chunked = value.split(",").at(-1)?.trim().toLowerCase() === "chunked";
        close = !chunked;
      }
    }
    if (chunked) this.state = { at: "chunk-size" };
    else if (close || length === undefined) this.state = { at: "eof" };
    else if (length > 0) this.state = { at: "length", left: length };
  }
}
