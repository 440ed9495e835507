/** Memos kept on the object they are about (src/k8s/attached.ts): as a WeakMap would, without its ephemerons. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { attachedMemo } from "../../src/k8s/attached.js";

describe("attachedMemo", () => {
  it("makes a memo once per object and gives it back after", () => {
    const memo = attachedMemo<object, { n: number }>("test");
    const a = {};
    const b = {};
    let made = 0;
    const first = memo.of(a, () => ({ n: ++made }));
    assert.equal(
      memo.of(a, () => ({ n: ++made })),
      first,
    );
    assert.equal(memo.of(b, () => ({ n: ++made })).n, 2);
    assert.equal(memo.peek(a), first);
    assert.equal(memo.peek({}), undefined);
  });

  it("keeps a falsy memo (an empty string, 0) instead of making it again", () => {
    const memo = attachedMemo<object, string>("test");
    const a = {};
    let made = 0;
    memo.of(a, () => {
      made++;
      return "";
    });
    assert.equal(
      memo.of(a, () => {
        made++;
        return "x";
      }),
      "",
    );
    assert.equal(made, 1);
  });

  it("is invisible to what reads the object: keys, JSON, deep equality, copies", () => {
    const memo = attachedMemo<string[], Map<string, string>>("test");
    const list = ["a", "b"];
    memo.of(list, () => new Map([["a", "b"]]));
    assert.deepEqual(Object.keys(list), ["0", "1"]);
    assert.equal(JSON.stringify(list), '["a","b"]');
    assert.deepStrictEqual(list, ["a", "b"]);
    // a copy is another list: it has no memo of its own yet (a cache may append to it)
    assert.equal(memo.peek([...list]), undefined);
    assert.equal(memo.peek(structuredClone(list)), undefined);
  });

  it("two memos of one object, even of the same name, are apart", () => {
    const one = attachedMemo<object, number>("same");
    const two = attachedMemo<object, number>("same");
    const o = {};
    one.of(o, () => 1);
    assert.equal(
      two.of(o, () => 2),
      2,
    );
    assert.equal(one.peek(o), 1);
  });

  it("an object that takes no new property (frozen, sealed, not extensible) keeps its memo all the same", () => {
    const memo = attachedMemo<object, number>("test");
    for (const o of [Object.freeze({}), Object.seal({}), Object.preventExtensions({}), Object.freeze(["x"])]) {
      let made = 0;
      assert.equal(
        memo.of(o, () => ++made),
        1,
      );
      assert.equal(
        memo.of(o, () => ++made),
        1,
      );
      assert.equal(memo.peek(o), 1);
    }
  });

  it("is not inherited: an object made from one with a memo has none", () => {
    const memo = attachedMemo<object, number>("test");
    const base = {};
    memo.of(base, () => 1);
    assert.equal(memo.peek(Object.create(base)), undefined);
  });
});
