import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { numberKey, SharedValues, stringsKey } from "../../src/k8s/shared-values.js";

const byJoin = (v: readonly string[]) => stringsKey(v);

describe("SharedValues", () => {
  it("hands every holder of an equal value the same frozen one, and forgets it with its last holder", () => {
    const shared = new SharedValues<readonly string[]>(byJoin);
    const a = shared.hold(["Ready", "True"]);
    const b = shared.hold(["Ready", "True"]);
    const c = shared.hold(["Ready", "False"]);
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.ok(Object.isFrozen(a));
    assert.throws(() => (a as string[]).push("x"), TypeError);
    assert.equal(shared.size, 2);
    shared.release(a);
    assert.equal(shared.size, 2, "b still holds it");
    shared.release(b);
    assert.equal(shared.size, 1);
    // a value it never handed out, or one released past its last holder, changes nothing
    shared.release(["Ready", "False"]);
    shared.release(a);
    shared.release(undefined);
    assert.equal(shared.size, 1);
    assert.equal(shared.hold(["Ready", "False"]), c);
    // after its last holder let go, an equal value is a new one (nothing stale is handed out)
    const d = shared.hold(["Ready", "True"]);
    assert.notEqual(d, a);
    assert.deepEqual(d, a);
    // swap: the holder of d now holds an equal of c, and d goes with it
    assert.equal(shared.swap(d, ["Ready", "False"]), c);
    assert.equal(shared.size, 1);
  });

  it("holds no more values than are held now, after any sequence of holds and releases", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.array(fc.constantFrom("a", "b", "\u0000", "1:a"), { maxLength: 3 }))),
        (ops) => {
          const shared = new SharedValues<readonly string[]>(byJoin);
          const held: (readonly string[])[] = [];
          for (const [release, value] of ops) {
            if (release && held.length) shared.release(held.splice(0, 1)[0]);
            else held.push(shared.hold([...value]));
          }
          assert.equal(shared.size, new Set(held.map(byJoin)).size);
          for (const h of held) assert.equal(shared.hold([...h]), h, "an equal value is the held one");
        },
      ),
      { numRuns: 500 },
    );
  });

  it("keys: no two lists of strings share one, whatever separators they hold; -0 and 0 differ", () => {
    fc.assert(
      fc.property(fc.array(fc.string()), fc.array(fc.string()), (a, b) => {
        assert.equal(stringsKey(a) === stringsKey(b), JSON.stringify(a) === JSON.stringify(b));
      }),
      { numRuns: 2000 },
    );
    assert.notEqual(stringsKey(["a:", "b"]), stringsKey(["a", ":b"]));
    assert.notEqual(numberKey(-0), numberKey(0));
    assert.equal(numberKey(Number.NaN), numberKey(Number.NaN));
    assert.equal(numberKey(1.5e9), "1500000000");
  });
});
