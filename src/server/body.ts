/**
 * The hook body parser. Metacontroller sends every object as its informer holds it: with
 * `metadata.managedFields` and, for objects made with `kubectl apply`, the
 * `kubectl.kubernetes.io/last-applied-configuration` annotation — about half the bytes of a
 * workload object, and no hook reads either. A Tailnet sync carries every workload object of the
 * cluster (tens of MiB at 20,000 workloads), so both are cut out of the raw bytes before
 * `JSON.parse`: never parsed, never held as objects. (Metacontroller's own
 * `metacontroller.k8s.io/last-applied-configuration` is kept: src/k8s/objects.ts reuseObserved
 * reads it.) The rest is what `JSON.parse` gives, with fastify's default protection against
 * `__proto__` and `constructor.prototype` keys.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const DROPPED_KEYS = ['"managedFields"', '"kubectl.kubernetes.io/last-applied-configuration"'].map((k) =>
  Buffer.from(k),
);

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** True when the byte at `i` is preceded by an even number of backslashes (so not escaped). */
function unescaped(buf: Buffer, i: number): boolean {
  let n = 0;
  for (let j = i - 1; j >= 0 && buf[j] === BACKSLASH; j--) n++;
  return n % 2 === 0;
}

/**
 * Index just after the JSON value that starts at `i`, or -1 when it is not well formed enough to
 * skip. One pass over the bytes (a string is skipped byte by byte: escapes jump over the next byte).
 */
function skipValue(buf: Buffer, i: number): number {
  const first = buf[i];
  const len = buf.length;
  if (first === QUOTE || first === 0x5b || first === 0x7b) {
    let depth = 0;
    let inString = false;
    for (let j = i; j < len; j++) {
      const b = buf[j];
      if (inString) {
        if (b === BACKSLASH) j++;
        else if (b === QUOTE) {
          inString = false;
          if (depth === 0) return j + 1;
        }
      } else if (b === QUOTE) inString = true;
      else if (b === 0x5b || b === 0x7b) depth++;
      else if (b === 0x5d || b === 0x7d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // a scalar (number, true, false, null): up to the next delimiter
  let j = i;
  while (j < len && buf[j] !== 0x2c && buf[j] !== 0x7d && buf[j] !== 0x5d && !isSpace(buf[j])) j++;
  return j > i ? j : -1;
}

/**
 * Only invalid JSON can look malformed to dropBookkeeping (see there). Once parts were moved the
 * original bytes are gone: then a body JSON.parse refuses, as it would have refused the original.
 */
const malformed = (buf: Buffer, from: number) => (from === 0 ? buf : Buffer.from("{"));

/**
 * The body without the members named in DROPPED_KEYS, wherever they appear as object keys; the
 * body unchanged when anything looks malformed (then JSON.parse reports it). In valid JSON an
 * unescaped `"managedFields"` followed by `:` is always a key: inside a string every quote is
 * escaped; and a key is always preceded by `{` or `,` and its value complete. Works in place:
 * `buf` is overwritten and the result is a view of it.
 */
export function dropBookkeeping(buf: Buffer, keys: readonly Buffer[] = DROPPED_KEYS): Buffer {
  // Compacts in place (the kept parts move left, Buffer#copy is a memmove): no second buffer.
  let out = 0; // end of the compacted part
  let from = 0; // start of the part not yet moved
  const move = (start: number) => {
    if (out !== from) buf.copy(buf, out, from, start);
    out += start - from;
  };
  const next = keys.map((k) => buf.indexOf(k));
  for (;;) {
    let which = -1;
    for (let k = 0; k < next.length; k++) {
      if (next[k] >= 0 && (which < 0 || next[k] < next[which])) which = k;
    }
    if (which < 0) break;
    const at = next[which];
    const key = keys[which];
    next[which] = buf.indexOf(key, at + 1);
    if (at < from || !unescaped(buf, at)) continue;
    let colon = at + key.length;
    while (isSpace(buf[colon])) colon++;
    if (buf[colon] !== 0x3a) continue;
    let value = colon + 1;
    while (isSpace(buf[value])) value++;
    const end = skipValue(buf, value);
    if (end < 0) return malformed(buf, from);
    // remove the member with one of its commas: the preceding one, else (first member, or all
    // members before it removed) the following one
    let before = at - 1;
    while (before >= from && isSpace(buf[before])) before--;
    let start = at;
    let stop = end;
    if (before >= from && buf[before] === 0x2c) start = before;
    else if (before < from || buf[before] === 0x7b) {
      let after = end;
      while (isSpace(buf[after])) after++;
      if (buf[after] === 0x2c) stop = after + 1;
      else if (buf[after] !== 0x7d) return malformed(buf, from);
    } else return malformed(buf, from);
    move(start);
    from = stop;
    for (let k = 0; k < next.length; k++) {
      while (next[k] >= 0 && next[k] < from) next[k] = buf.indexOf(keys[k], next[k] + 1);
    }
  }
  if (from === 0) return buf;
  move(buf.length);
  return buf.subarray(0, out);
}

const PROTO =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const CONSTRUCTOR =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

export class BodyError extends Error {
  readonly statusCode = 400;
}

/** The first own `__proto__` key, or `constructor` holding `prototype`, in a parsed value. */
function poisoned(value: unknown, proto: boolean, ctor: boolean): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (!v || typeof v !== "object") continue;
    if (proto && Object.hasOwn(v, "__proto__")) return "__proto__";
    if (ctor && Object.hasOwn(v, "constructor")) {
      const c = (v as Record<string, unknown>).constructor;
      if (c && typeof c === "object" && Object.hasOwn(c, "prototype")) return "constructor.prototype";
    }
    for (const x of Object.values(v)) if (x && typeof x === "object") stack.push(x);
  }
  return undefined;
}

/** The body's text without the bookkeeping members (see the file comment); the raw bytes are reused. */
export function hookBodyText(raw: Buffer): string {
  return dropBookkeeping(raw).toString("utf8");
}

/** Parses a hook body's text; throws BodyError (400) for invalid JSON or a poisoning key. */
export function parseHookText(text: string): unknown {
  if (text.trim() === "") throw new BodyError("body: empty; expected a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BodyError("body: invalid JSON");
  }
  const proto = PROTO.test(text);
  const ctor = CONSTRUCTOR.test(text);
  if (proto || ctor) {
    const bad = poisoned(value, proto, ctor);
    if (bad) throw new BodyError(`body: a ${bad} key is not allowed`);
  }
  return value;
}

export const parseHookBody = (raw: Buffer): unknown => parseHookText(hookBodyText(raw));

/** A 413 naming the limit that applies to this kind's hooks. */
export class BodyTooLargeError extends Error {
  readonly statusCode = 413;
  readonly code = "TAILNET_BODY_TOO_LARGE";
  constructor(limit: number, what: string) {
    super(`body: larger than the limit of ${limit} bytes for ${what}`);
  }
}

/**
 * Reads the request body up to `limit` bytes: into one buffer of the announced Content-Length
 * (Metacontroller always sends it), so a body of tens of MiB is held once, not as chunks plus
 * their concatenation.
 */
export function readBody(
  headers: Record<string, string | string[] | undefined>,
  payload: NodeJS.ReadableStream,
  limit: number,
  what: string,
): Promise<Buffer> {
  const declared = Number(headers["content-length"]);
  if (declared > limit) return Promise.reject(new BodyTooLargeError(limit, what));
  return new Promise((resolve, reject) => {
    const whole = Number.isInteger(declared) && declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (err?: Error, body?: Buffer) => {
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("error", onError);
      if (err) reject(err);
      else resolve(body as Buffer);
    };
    const onData = (chunk: Buffer | string) => {
      const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      if (received + b.length > limit) return finish(new BodyTooLargeError(limit, what));
      if (whole) {
        if (received + b.length > whole.length) return finish(new BodyError("body: longer than its Content-Length"));
        b.copy(whole, received);
      } else chunks.push(b);
      received += b.length;
    };
    const onEnd = () => {
      if (whole && received !== whole.length) return finish(new BodyError("body: shorter than its Content-Length"));
      finish(undefined, whole ?? Buffer.concat(chunks, received));
    };
    const onError = (e: Error) => finish(Object.assign(e, { statusCode: 400 }));
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("error", onError);
    payload.resume();
  });
}
