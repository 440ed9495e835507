import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ByteRope } from "../../src/headscale/byte-rope.js";

/** `b` cut at the given points (sorted, within it) into pieces, empty ones included. */
function cut(b: Buffer, at: number[]): ByteRope {
  const points = [...new Set(at.map((x) => x % (b.length + 1)))].sort((x, y) => x - y);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of [...points, b.length]) {
    pieces.push(b.subarray(from, p));
    from = p;
  }
  return new ByteRope(pieces);
}

const buf = fc.uint8Array({ maxLength: 60 }).map((a) => Buffer.from(a));
const points = fc.array(fc.nat(), { maxLength: 8 });

describe("ByteRope: a Buffer in pieces, read as the joined Buffer reads", () => {
  test("differential: ranges compared, cut, searched and decoded as on the joined bytes", () => {
    fc.assert(
      fc.property(buf, points, buf, points, fc.nat(), fc.nat(), fc.nat(), (a, pa, b, pb, s, o, n) => {
        const ra = cut(a, pa);
        const rb = cut(b, pb);
        assert.equal(ra.length, a.length);
        assert.deepEqual(ra.bytes(), a);
        assert.equal(ra.equals(rb), a.equals(b));
        const start = s % (a.length + 1);
        const otherStart = o % (b.length + 1);
        const length = n % (Math.min(a.length - start, b.length - otherStart) + 2);
        const within = start + length <= a.length && otherStart + length <= b.length;
        const expected =
          within && a.subarray(start, start + length).equals(b.subarray(otherStart, otherStart + length));
        assert.equal(ra.equalsRange(start, rb, otherStart, length), expected, `${start} ${otherStart} ${length}`);
        assert.equal(ra.lastIndexOf(0x5d), a.lastIndexOf(0x5d));
        assert.equal(ra.toString("latin1", start), a.toString("latin1", start));
        assert.equal(ra.toString("utf8", 0, start), a.toString("utf8", 0, start));
      }),
      { numRuns: 3000 },
    );
  });

  test("a spliced tail is the old head and a copy of the new tail, holding none of the new read's chunk", () => {
    fc.assert(
      fc.property(buf, points, buf, points, fc.nat(), fc.nat(), (a, pa, b, pb, c, f) => {
        const at = c % (a.length + 1);
        const from = f % (b.length + 1);
        const spliced = cut(a, pa).spliceTail(at, cut(b, pb), from);
        assert.deepEqual(spliced.bytes(), Buffer.concat([a.subarray(0, at), b.subarray(from)]));
        const tail = spliced.pieces[spliced.pieces.length - 1];
        assert.equal(tail.buffer.byteLength, tail.length, "the tail is a block of its own");
      }),
      { numRuns: 2000 },
    );
  });

  test("pieces past 64 are joined into one", () => {
    let rope = new ByteRope(Array.from({ length: 64 }, (_, i) => Buffer.from([i])));
    rope = rope.spliceTail(rope.length, ByteRope.of(Buffer.from("xy")), 0);
    assert.equal(rope.pieces.length, 1);
    assert.equal(rope.length, 66);
    assert.deepEqual(rope.bytes().subarray(64), Buffer.from("xy"));
  });
});
