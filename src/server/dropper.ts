/**
 * The byte scan behind src/server/body.ts: drops the members no hook reads while a body arrives
 * (UnreadDropper), and, for bodies read as a stream (src/server/stream-body.ts), hands each object
 * of `related` and `children` to a CutSink as soon as its closing brace is scanned.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

export const MANAGED_FIELDS = Buffer.from("managedFields");
export const KUBECTL_LAST_APPLIED = Buffer.from("kubectl.kubernetes.io/last-applied-configuration");
const STATUS = Buffer.from("status");
const RELATED = "related";

/**
 * Receives a streamed body in pieces (src/server/stream-body.ts): every value that is an object at
 * `related.<group>.<name>` or `children.<group>.<name>` (each container an object) is cut out whole,
 * after the unread members were dropped from it; the rest of the body is handed over as it settles.
 * Keys are compared decoded, as JSON.parse reads them. The buffer given is only valid during the call.
 */
export interface CutSink {
  /** The settled bytes `buf[0, n)` of the rest of the body, in order. */
  rest(buf: Buffer, n: number): void;
  /** One cut object, `buf[0, n)`, the value of `top[group][name]`. */
  object(buf: Buffer, n: number, top: string, group: string, name: string): void;
}

/** An object key as JSON.parse decodes it (only keys with escapes or non-ASCII bytes need more than latin1). */
function decodeKey(buf: Buffer, start: number, end: number): string {
  for (let i = start; i < end; i++) {
    const b = buf[i];
    if (b === BACKSLASH || b >= 0x80) {
      try {
        return JSON.parse(`"${buf.toString("utf8", start, end)}"`) as string;
      } catch {
        return buf.toString("utf8", start, end); // invalid: JSON.parse of the body refuses it anyway
      }
    }
  }
  return buf.toString("latin1", start, end);
}

/**
 * Of the objects in a related group (type key), the `status` members a kind reads: every other member
 * of their status is dropped before JSON.parse; an empty list drops the whole status. Groups not named
 * keep their statuses whole.
 */
export type RelatedStatusReads = ReadonlyMap<string, readonly string[]>;

const keyIs = (buf: Buffer, start: number, end: number, key: Buffer) =>
  end - start === key.length && buf.compare(key, 0, key.length, start, end) === 0;

/** A scalar (number, true, false, null) ends at the next delimiter. */
const endsScalar = (b: number) => b === 0x2c || b === 0x7d || b === 0x5d || isSpace(b);

/** Byte classes while skipping a value: 1 quote, 2 opens a container, 3 closes one, 0 anything else. */
const STRUCTURE = new Uint8Array(256);
STRUCTURE[QUOTE] = 1;
STRUCTURE[0x5b] = 2;
STRUCTURE[0x7b] = 2;
STRUCTURE[0x5d] = 3;
STRUCTURE[0x7d] = 3;

/** Bodies from this size on (or of no announced length) are scanned, and hooks parsed, while they arrive (read-body.ts). */
export const STREAM_DROP_BYTES = 1 << 20;

const WAIT = 0;
const DONE = 1;
const BROKEN = 2;

/**
 * Drops what no hook reads (see dropUnread) from a buffer that may still be filling: `feed(n)`
 * scans the first `n` bytes as far as they allow and keeps its place (inside a string, a member
 * whose value has not ended, a skipped value), so a body of tens of MiB is scanned chunk by chunk
 * while it arrives, never twice, and never in one long block of the event loop. `finish()` after
 * the last byte answers what dropUnread answers for the whole buffer. Kept parts move left within
 * the buffer (never past the scan position, so bytes still arriving are never overwritten).
 */
export class UnreadDropper {
  private out = 0; // end of the compacted part
  private from = 0; // start of the part not yet moved
  private j = 0; // next byte to examine
  // open containers: 1 object, 2 array; ctx[d] = the key under which the container at depth d sits
  // (kept for depths 2 and 3 only: `related` and the group's type key)
  private readonly stack: number[] = [];
  private readonly ctx: string[] = [];
  /** The related groups' status members kept, as bytes (see RelatedStatusReads). */
  private readonly reads: Map<string, Buffer[]> | undefined;
  /** Inside a related object's status that keeps some members: its keys' depth (-1: not inside), the members kept. */
  private keepDepth = -1;
  private keep: Buffer[] = [];
  private expectKey = false;
  private broken = false;
  /** A string in progress: its opening quote (-1: none), where its scan stands, whether it is a key. */
  private strStart = -1;
  private strPos = 0;
  private strIsKey = false;
  /** A key whose member is not settled yet: its opening quote (-1: none), the byte after its closing quote. */
  private keyStart = -1;
  private keyEnd = 0;
  private dropping = false;
  /** The settled key is a related object's status keeping these members (its value, if an object, is filtered). */
  private keepsStatus: Buffer[] | undefined;
  /** The dropped member's value: its first byte (-1: not found yet), the skip's place, depth and string state, its end (-1: not reached). */
  private valueStart = -1;
  private skipPos = 0;
  private skipDepth = 0;
  private skipInString = false;
  private valueEnd = -1;

  /** Inside an object being cut (see CutSink). */
  private cutting = false;

  constructor(
    private buf: Buffer,
    relatedStatus?: RelatedStatusReads,
    private readonly sink?: CutSink,
  ) {
    if (relatedStatus?.size)
      this.reads = new Map([...relatedStatus].map(([g, fields]) => [g, fields.map((f) => Buffer.from(f))]));
  }

  /** Whether the bytes so far cannot be JSON (the scan stopped; only a 400 remains). */
  get isBroken(): boolean {
    return this.broken;
  }

  /** Moves the bytes up to `end` (all kept) behind the kept part. */
  private settle(end: number): void {
    if (this.out !== this.from) this.buf.copyWithin(this.out, this.from, end);
    this.out += end - this.from;
    this.from = end;
  }

  /**
   * At a `{` (`at`) or the `}` closing a container (`at` past it; the stack already popped): starts
   * or ends an object cut for the sink. Both edges are kept bytes no dropped member reaches across,
   * so what came before can be settled and handed over.
   */
  private cutEdge(at: number, opening: boolean): void {
    const sink = this.sink as CutSink;
    const s = this.stack;
    const ctx = this.ctx;
    if (opening) {
      // a `{` where a key belongs is no value: left to the rest, which JSON.parse then refuses
      if (this.cutting || this.expectKey || s.length !== 3 || s[0] !== 1 || s[1] !== 1 || s[2] !== 1) return;
      if (ctx[2] !== RELATED && ctx[2] !== "children") return;
      this.settle(at);
      sink.rest(this.buf, this.out);
      this.out = 0;
      this.cutting = true;
    } else if (this.cutting && s.length === 3) {
      this.settle(at);
      this.cutting = false;
      sink.object(this.buf, this.out, ctx[2], ctx[3], ctx[4]);
      this.out = 0;
    }
  }

  /** Continues on a larger buffer holding the same bytes at the same offsets (readBody grows its buffer). */
  moveTo(buf: Buffer): void {
    this.buf = buf;
  }

  /**
   * Moves the bytes not settled yet (from `from` to `available`) down to the end of the kept part, so
   * the buffer holds no dropped byte; returns how far they moved (the caller's byte count shrinks by it).
   * readBody calls it before growing the buffer: a 74 MiB Tailnet body then needs a buffer of about
   * what is kept (12 MiB at 20,000 workloads), not the whole body.
   */
  compact(available: number): number {
    const delta = this.from - this.out;
    if (this.broken || delta <= 0) return 0;
    this.buf.copyWithin(this.out, this.from, available);
    // every place the scan keeps is at or after `from`
    this.from -= delta;
    this.j -= delta;
    if (this.strStart >= 0) {
      this.strStart -= delta;
      this.strPos -= delta;
    }
    if (this.keyStart >= 0) {
      this.keyStart -= delta;
      this.keyEnd -= delta;
    }
    if (this.valueStart >= 0) {
      this.valueStart -= delta;
      this.skipPos -= delta;
    }
    if (this.valueEnd >= 0) this.valueEnd -= delta;
    return delta;
  }

  /** Scans what the first `available` bytes allow. */
  feed(available: number): void {
    if (!this.broken) this.run(available, false);
  }

  /** The body without the unread members, once all `length` bytes are in (a view of the same buffer). */
  finish(length = this.buf.length): Buffer {
    const buf = this.buf;
    if (!this.broken) this.run(length, true);
    // Only invalid JSON can look malformed here. Once parts were moved the original bytes are
    // gone: then a body JSON.parse refuses, as it would have refused the original. (`from` is 0
    // only while nothing was dropped: a dropped member always follows its object's `{`, kept.)
    if (this.broken) return this.from === 0 ? buf.subarray(0, length) : Buffer.from("{");
    if (this.from === 0) return buf.subarray(0, length);
    if (this.out !== this.from) buf.copy(buf, this.out, this.from, length);
    return buf.subarray(0, this.out + length - this.from);
  }

  private run(len: number, final: boolean): void {
    const buf = this.buf;
    const stack = this.stack;
    for (;;) {
      if (this.keyStart >= 0) {
        const r = this.member(len, final);
        if (r === WAIT) return;
        if (r === BROKEN) {
          this.broken = true;
          return;
        }
      }
      if (this.strStart >= 0) {
        // a string: skip it byte by byte (escapes jump over the next byte)
        let e = this.strPos;
        while (e < len && buf[e] !== QUOTE) e += buf[e] === BACKSLASH ? 2 : 1;
        if (e >= len) {
          if (final) this.broken = true;
          else this.strPos = e;
          return;
        }
        const start = this.strStart;
        this.strStart = -1;
        if (!this.strIsKey) this.j = e + 1;
        else {
          // an object key [start+1, e)
          this.expectKey = false;
          const depth = stack.length;
          const ctx = this.ctx;
          this.dropping = keyIs(buf, start + 1, e, MANAGED_FIELDS) || keyIs(buf, start + 1, e, KUBECTL_LAST_APPLIED);
          this.keepsStatus = undefined;
          if (this.dropping) {
            // dropped wherever it is
          } else if (depth === this.keepDepth) {
            // a member of a related object's status that keeps only some
            const keep = this.keep;
            let kept = false;
            for (let k = 0; k < keep.length && !kept; k++) kept = keyIs(buf, start + 1, e, keep[k]);
            this.dropping = !kept;
          } else if (
            depth === 4 &&
            this.reads !== undefined &&
            ctx[2] === RELATED &&
            keyIs(buf, start + 1, e, STATUS)
          ) {
            const keep = this.reads.get(ctx[3]);
            if (keep?.length === 0) this.dropping = true;
            else if (keep) this.keepsStatus = keep;
          } else if (depth <= 2 || (depth === 3 && this.sink)) ctx[depth + 1] = decodeKey(buf, start + 1, e);
          this.keyStart = start;
          this.keyEnd = e + 1;
          continue;
        }
      }
      // structure between strings
      let j = this.j;
      for (; j < len; j++) {
        const b = buf[j];
        if (b === QUOTE) break;
        if (b === 0x7b) {
          if (this.sink) this.cutEdge(j, true);
          stack.push(1);
          this.expectKey = true;
        } else if (b === 0x5b) {
          stack.push(2);
          this.expectKey = false;
        } else if (b === 0x7d || b === 0x5d) {
          stack.pop();
          this.expectKey = false;
          if (stack.length < this.keepDepth) this.keepDepth = -1;
          if (this.sink) this.cutEdge(j + 1, false);
        } else if (b === 0x2c) this.expectKey = stack[stack.length - 1] === 1;
      }
      this.j = j;
      if (j >= len) return;
      this.strStart = j;
      this.strPos = j + 1;
      this.strIsKey = this.expectKey;
    }
  }

  /** Settles the member whose key ends at keyEnd: keeps it (scan on at its value) or removes it with one comma. */
  private member(len: number, final: boolean): number {
    const buf = this.buf;
    if (this.valueStart < 0) {
      let colon = this.keyEnd;
      while (colon < len && isSpace(buf[colon])) colon++;
      if (colon >= len && !final) return WAIT;
      if (buf[colon] !== 0x3a) return BROKEN;
      let value = colon + 1;
      while (value < len && isSpace(buf[value])) value++;
      if (value >= len && !final) return WAIT;
      if (!this.dropping) {
        this.keyStart = -1;
        this.j = value;
        // a kept status that is an object: its members are judged one by one, one level down
        if (this.keepsStatus && buf[value] === 0x7b) {
          this.keepDepth = this.stack.length + 1;
          this.keep = this.keepsStatus;
        }
        return DONE;
      }
      this.valueStart = value;
      this.skipPos = value;
      this.skipDepth = 0;
      this.skipInString = false;
    }
    if (this.valueEnd < 0) {
      const end = this.skip(len, final);
      if (end === -2) return WAIT;
      if (end < 0) return BROKEN;
      this.valueEnd = end;
    }
    // remove the member with one of its commas: the preceding one, else (first member, or all
    // members before it removed) the following one
    const from = this.from;
    const end = this.valueEnd;
    let before = this.keyStart - 1;
    while (before >= from && isSpace(buf[before])) before--;
    let start = this.keyStart;
    let stop = end;
    if (before >= from && buf[before] === 0x2c) start = before;
    else if (before < from || buf[before] === 0x7b) {
      let after = end;
      while (after < len && isSpace(buf[after])) after++;
      if (after >= len && !final) return WAIT;
      if (buf[after] === 0x2c) {
        stop = after + 1;
        this.expectKey = true;
      } else if (buf[after] !== 0x7d) return BROKEN;
    } else return BROKEN;
    // copyWithin: a V8 builtin, cheaper than Buffer#copy's binding for the many short moves
    if (this.out !== from) buf.copyWithin(this.out, from, start);
    this.out += start - from;
    this.from = stop;
    this.j = stop;
    this.keyStart = -1;
    this.valueStart = -1;
    this.valueEnd = -1;
    return DONE;
  }

  /**
   * Index just after the dropped value, -1 when it is not well formed enough to skip, -2 when its
   * end has not arrived yet (the place is kept). One pass over the bytes.
   */
  private skip(len: number, final: boolean): number {
    const buf = this.buf;
    const i = this.valueStart;
    const first = buf[i];
    if (first === QUOTE || first === 0x5b || first === 0x7b) {
      // Most of a Tailnet body is skipped here (managedFields, the annotation, statuses): a class table
      // and a tight loop per string are about twice as fast as one branchy loop over every byte.
      let depth = this.skipDepth;
      let inString = this.skipInString;
      let j = this.skipPos;
      for (;;) {
        if (inString) {
          while (j < len) {
            const x = buf[j];
            if (x === QUOTE) break;
            j += x === BACKSLASH ? 2 : 1;
          }
          if (j >= len) break;
          inString = false;
          j++;
          if (depth === 0) return j;
          continue;
        }
        if (j >= len) break;
        const c = STRUCTURE[buf[j]];
        j++;
        if (c === 0) continue;
        if (c === 1) inString = true;
        else if (c === 2) depth++;
        else if (--depth === 0) return j;
      }
      if (final) return -1;
      this.skipPos = j;
      this.skipDepth = depth;
      this.skipInString = inString;
      return -2;
    }
    let j = this.skipPos;
    while (j < len && !endsScalar(buf[j])) j++;
    if (j >= len && !final) {
      this.skipPos = j;
      return -2;
    }
    return j > i ? j : -1;
  }
}
