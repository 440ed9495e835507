/**
 * An answer's bytes as the pieces they arrived in, compared and cut without joining them (list-memo.ts). A key list
 * of 20,000 keys is about 5 MB: joined per read (undici's `arrayBuffer()`), each read was a fresh 5 MB block outside
 * V8's heap, kept as the memo whenever keys were added, so freed only by a full collection. In the round after an
 * install, hundreds of such reads a minute held tens of MiB of dead blocks in the RSS and paced the full
 * collections (issue 36). A rope compares the pieces where they lie; what the memo keeps of a new read is the part
 * the old one did not have, copied out of the socket's 64 KiB chunks so that it holds nothing else.
 */

/** Pieces past this many are joined into one (a memo gains a piece per read that adds keys). */
const MAX_PIECES = 64;

export class ByteRope {
  readonly length: number;

  constructor(readonly pieces: readonly Buffer[]) {
    let n = 0;
    for (const p of pieces) n += p.length;
    this.length = n;
  }

  static of(buf: Buffer): ByteRope {
    return new ByteRope([buf]);
  }

  /** Calls `f(piece, from, to, at)` for the parts of pieces covering [start, end); `at` is their offset in the rope. */
  private each(start: number, end: number, f: (p: Buffer, from: number, to: number, at: number) => boolean): boolean {
    let at = 0;
    for (const p of this.pieces) {
      const pEnd = at + p.length;
      if (pEnd > start && at < end) {
        if (!f(p, Math.max(start - at, 0), Math.min(end, pEnd) - at, Math.max(at, start))) return false;
      }
      if (pEnd >= end) break;
      at = pEnd;
    }
    return true;
  }

  /** Whether bytes [start, start + length) of this rope equal bytes [otherStart, otherStart + length) of `other`. */
  equalsRange(start: number, other: ByteRope, otherStart: number, length: number): boolean {
    if (start < 0 || otherStart < 0 || start + length > this.length || otherStart + length > other.length) return false;
    return this.each(start, start + length, (p, from, to, at) =>
      other.each(otherStart + (at - start), otherStart + (at - start) + (to - from), (q, qFrom, qTo, qAt) => {
        const o = from + (qAt - (otherStart + (at - start)));
        return q.compare(p, o, o + (qTo - qFrom), qFrom, qTo) === 0;
      }),
    );
  }

  equals(other: ByteRope): boolean {
    return this.length === other.length && this.equalsRange(0, other, 0, this.length);
  }

  /** The index of the last `byte`, or -1. */
  lastIndexOf(byte: number): number {
    let end = this.length;
    for (let i = this.pieces.length - 1; i >= 0; i--) {
      const p = this.pieces[i];
      end -= p.length;
      const k = p.lastIndexOf(byte);
      if (k >= 0) return end + k;
    }
    return -1;
  }

  /** The bytes [start, end) as one Buffer (a view when they lie in one piece). */
  bytes(start = 0, end = this.length): Buffer {
    const parts: Buffer[] = [];
    this.each(start, end, (p, from, to) => {
      parts.push(p.subarray(from, to));
      return true;
    });
    return parts.length === 1 ? parts[0] : Buffer.concat(parts, end - start);
  }

  toString(encoding: BufferEncoding, start = 0, end = this.length): string {
    return this.bytes(start, end).toString(encoding);
  }

  /**
   * This rope's bytes [0, cut) followed by `next`'s bytes from `from` on, copied into a block of their own (a slice
   * would keep the socket's whole chunk alive); joined into one piece when the pieces pile up.
   */
  spliceTail(cut: number, next: ByteRope, from: number): ByteRope {
    const head: Buffer[] = [];
    this.each(0, cut, (p, a, b) => {
      head.push(a === 0 && b === p.length ? p : p.subarray(a, b));
      return true;
    });
    const tail = next.bytes(from);
    const own = Buffer.allocUnsafeSlow(tail.length);
    tail.copy(own);
    const pieces = [...head, own];
    return pieces.length > MAX_PIECES ? ByteRope.of(new ByteRope(pieces).bytes()) : new ByteRope(pieces);
  }
}
