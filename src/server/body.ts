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

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

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
 * Only invalid JSON can look malformed to dropUnread (see there). Once parts were moved the
 * original bytes are gone: then a body JSON.parse refuses, as it would have refused the original.
 */
const malformed = (buf: Buffer, from: number) => (from === 0 ? buf : Buffer.from("{"));

const MANAGED_FIELDS = Buffer.from("managedFields");
const KUBECTL_LAST_APPLIED = Buffer.from("kubectl.kubernetes.io/last-applied-configuration");
const STATUS = Buffer.from("status");
const RELATED = "related";

const keyIs = (buf: Buffer, start: number, end: number, key: Buffer) =>
  end - start === key.length && buf.compare(key, 0, key.length, start, end) === 0;

/**
 * The body without what no hook reads, in one pass over the bytes: every `managedFields` and
 * `kubectl.kubernetes.io/last-applied-configuration` member wherever it appears as an object key,
 * and, for the related groups named in `relatedStatus`, the `status` of each object. The body
 * unchanged when anything looks malformed (then JSON.parse reports it). Works in place: `buf` is
 * overwritten (kept parts move left) and the result is a view of it.
 */
export function dropUnread(buf: Buffer, relatedStatus?: ReadonlySet<string>): Buffer {
  // Nothing to drop (the usual egress, ingress, site or gateway resync): a native search instead of the scan.
  if (!relatedStatus?.size && buf.indexOf(MANAGED_FIELDS) === -1 && buf.indexOf(KUBECTL_LAST_APPLIED) === -1) {
    return buf;
  }
  const len = buf.length;
  let out = 0; // end of the compacted part
  let from = 0; // start of the part not yet moved
  // open containers: 1 object, 2 array; ctx[d] = the key under which the container at depth d sits
  // (kept for depths 2 and 3 only: `related` and the group's type key)
  const stack: number[] = [];
  const ctx: string[] = [];
  let expectKey = false;
  let j = 0;
  while (j < len) {
    const b = buf[j];
    if (b === QUOTE) {
      // a string: skip it byte by byte (escapes jump over the next byte)
      let e = j + 1;
      while (e < len && buf[e] !== QUOTE) e += buf[e] === BACKSLASH ? 2 : 1;
      if (e >= len) return malformed(buf, from);
      if (!expectKey) {
        j = e + 1;
        continue;
      }
      // an object key [j+1, e)
      expectKey = false;
      const depth = stack.length;
      let colon = e + 1;
      while (isSpace(buf[colon])) colon++;
      if (buf[colon] !== 0x3a) return malformed(buf, from);
      let value = colon + 1;
      while (isSpace(buf[value])) value++;
      const drop =
        keyIs(buf, j + 1, e, MANAGED_FIELDS) ||
        keyIs(buf, j + 1, e, KUBECTL_LAST_APPLIED) ||
        (depth === 4 &&
          relatedStatus !== undefined &&
          ctx[2] === RELATED &&
          relatedStatus.has(ctx[3]) &&
          keyIs(buf, j + 1, e, STATUS));
      if (!drop) {
        if (depth === 1 || depth === 2) ctx[depth + 1] = buf.toString("latin1", j + 1, e);
        j = value;
        continue;
      }
      const end = skipValue(buf, value);
      if (end < 0) return malformed(buf, from);
      // remove the member with one of its commas: the preceding one, else (first member, or all
      // members before it removed) the following one
      let before = j - 1;
      while (before >= from && isSpace(buf[before])) before--;
      let start = j;
      let stop = end;
      if (before >= from && buf[before] === 0x2c) start = before;
      else if (before < from || buf[before] === 0x7b) {
        let after = end;
        while (isSpace(buf[after])) after++;
        if (buf[after] === 0x2c) {
          stop = after + 1;
          expectKey = true;
        } else if (buf[after] !== 0x7d) return malformed(buf, from);
      } else return malformed(buf, from);
      if (out !== from) buf.copy(buf, out, from, start);
      out += start - from;
      from = stop;
      j = stop;
      continue;
    }
    if (b === 0x7b) {
      stack.push(1);
      expectKey = true;
    } else if (b === 0x5b) {
      stack.push(2);
      expectKey = false;
    } else if (b === 0x7d || b === 0x5d) {
      stack.pop();
      expectKey = false;
    } else if (b === 0x2c) expectKey = stack[stack.length - 1] === 1;
    j++;
  }
  if (from === 0) return buf;
  if (out !== from) buf.copy(buf, out, from, len);
  out += len - from;
  return buf.subarray(0, out);
}

/** dropUnread without related statuses: managedFields and kubectl's last-applied annotation. */
export const dropBookkeeping = (buf: Buffer): Buffer => dropUnread(buf);

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
export function hookBodyText(raw: Buffer, relatedStatus?: ReadonlySet<string>): string {
  return dropUnread(raw, relatedStatus).toString("utf8");
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
