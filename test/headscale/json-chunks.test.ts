import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parseJsonInRuns } from "../../src/headscale/json-chunks.js";

/** JSON.parse's verdict: the value, or that it throws a SyntaxError. */
function reference(text: string): { value: unknown } | { throws: true } {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { throws: true };
  }
}

async function runs(text: string, runChars: number): Promise<{ value: unknown } | { throws: true }> {
  try {
    return { value: await parseJsonInRuns(text, runChars) };
  } catch (e) {
    assert.ok(e instanceof SyntaxError, String(e));
    return { throws: true };
  }
}

describe("parseJsonInRuns: a large Headscale answer parsed a run of items per turn of the event loop", () => {
  it("gives what JSON.parse gives, and throws exactly when it throws (property, valid and corrupted text)", async () => {
    const key = fc.oneof(fc.constantFrom("preAuthKeys", "nodes", "__proto__", "a"), fc.string({ maxLength: 3 }));
    const list = fc.dictionary(
      key,
      fc.oneof(fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 6 }), fc.jsonValue()),
      {
        maxKeys: 4,
      },
    );
    const text = fc.oneof(
      fc.tuple(list, fc.boolean()).map(([v, pretty]) => JSON.stringify(v, null, pretty ? 1 : undefined)),
      fc.constantFrom('{"a":[1,]}', '{"a":[,1]}', '{"a":[ ]}', '{"a":[1}', '{"a":[1]]', '{"a":[1],"a":[2,3]}', "[1,2]"),
      fc.tuple(list, fc.nat(), fc.constantFrom("", "[", "]", "{", "}", ",", '"', "\\", " ")).map(([v, at, junk]) => {
        const t = JSON.stringify(v);
        const i = at % (t.length + 1);
        return t.slice(0, i) + junk + t.slice(i + (junk ? 1 : 0));
      }),
    );
    await fc.assert(
      fc.asyncProperty(text, fc.integer({ min: 1, max: 40 }), async (t, runChars) => {
        assert.deepEqual(await runs(t, runChars), reference(t), t);
      }),
      { numRuns: 1500 },
    );
  });
  it("keeps an own __proto__ key a plain property, as JSON.parse does", async () => {
    const v = (await parseJsonInRuns('{"__proto__":[1,2],"x":[3]}', 2)) as Record<string, unknown>;
    assert.deepEqual(Object.getPrototypeOf(v), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(v, "__proto__")?.value, [1, 2]);
    assert.deepEqual(v.x, [3]);
  });
  it("yields to the event loop between runs of a 20,000-item list", async () => {
    const text = JSON.stringify({
      preAuthKeys: Array.from({ length: 20_000 }, (_, i) => ({ id: String(i), key: `k${i}`, aclTags: ["tag:a"] })),
    });
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const v = (await parseJsonInRuns(text)) as { preAuthKeys: unknown[] };
    clearInterval(ticker);
    assert.equal(v.preAuthKeys.length, 20_000);
    assert.deepEqual(v, JSON.parse(text));
    assert.ok(turns > 0, "timers ran while the list was parsed");
  });
});
