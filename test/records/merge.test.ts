/**
 * Merging the sources (src/records/merge.ts): a name stays with its first holder, a tie goes to the source
 * listed first, a holder that stops publishing frees the name; properties over generated rounds.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { mergeSources, type Owner } from "../../src/records/merge.js";
import type { RecordEntry } from "../../src/records/validate.js";

const A = (name: string, value: string): RecordEntry => ({ name, type: "A", value });
const T0 = "2026-12-05T10:00:00.000Z";
const T1 = "2026-12-05T10:01:00.000Z";

describe("mergeSources", () => {
  it("disjoint sources: every record, sorted, each name owned by its source", () => {
    const r = mergeSources(
      [
        { source: "a", records: [A("web.a.ts.test", "100.64.0.2")] },
        { source: "b", records: [A("api.b.ts.test", "100.64.0.3"), A("api.b.ts.test", "100.64.0.4")] },
      ],
      {},
      T0,
    );
    assert.deepEqual(r.records, [
      A("api.b.ts.test", "100.64.0.3"),
      A("api.b.ts.test", "100.64.0.4"),
      A("web.a.ts.test", "100.64.0.2"),
    ]);
    assert.deepEqual(r.owners, {
      "api.b.ts.test": { source: "b", since: T0 },
      "web.a.ts.test": { source: "a", since: T0 },
    });
    assert.deepEqual(r.conflicts, []);
  });

  it("a name two sources publish in one round goes to the one listed first; the other is reported", () => {
    const r = mergeSources(
      [
        { source: "a", records: [A("shared.ts.test", "100.64.0.2")] },
        { source: "b", records: [A("shared.ts.test", "100.64.0.3")] },
      ],
      {},
      T0,
    );
    assert.deepEqual(r.records, [A("shared.ts.test", "100.64.0.2")]);
    assert.deepEqual(r.conflicts, [{ name: "shared.ts.test", holder: "a", refused: "b" }]);
  });

  it("the first holder keeps its name when a source listed earlier starts publishing it", () => {
    const previous: Record<string, Owner> = { "shared.ts.test": { source: "b", since: T0 } };
    const r = mergeSources(
      [
        { source: "a", records: [A("shared.ts.test", "100.64.0.66")] },
        { source: "b", records: [A("shared.ts.test", "100.64.0.3")] },
      ],
      previous,
      T1,
    );
    assert.deepEqual(r.records, [A("shared.ts.test", "100.64.0.3")]);
    assert.deepEqual(r.owners["shared.ts.test"], { source: "b", since: T0 });
    assert.deepEqual(r.conflicts, [{ name: "shared.ts.test", holder: "b", refused: "a" }]);
  });

  it("a holder that stops publishing frees the name for the next claimant", () => {
    const previous: Record<string, Owner> = { "shared.ts.test": { source: "b", since: T0 } };
    const r = mergeSources(
      [
        { source: "a", records: [A("shared.ts.test", "100.64.0.2")] },
        { source: "b", records: [] },
      ],
      previous,
      T1,
    );
    assert.deepEqual(r.records, [A("shared.ts.test", "100.64.0.2")]);
    assert.deepEqual(r.owners, { "shared.ts.test": { source: "a", since: T1 } });
  });
});

describe("properties", () => {
  const name = fc.constantFrom("a.ts.test", "b.ts.test", "c.ts.test", "d.ts.test");
  const rec = fc.record({ name, type: fc.constant("A" as const), value: fc.constantFrom("100.64.0.1", "100.64.0.2") });
  const sources = fc
    .array(fc.array(rec, { maxLength: 5 }), { minLength: 1, maxLength: 4 })
    .map((lists) => lists.map((records, i) => ({ source: `s${i}`, records })));

  it("each name in the file comes from exactly one source, and every published name is in the file", () => {
    fc.assert(
      fc.property(sources, (srcs) => {
        const r = mergeSources(srcs, {}, T0);
        for (const rec of r.records) {
          const owner = r.owners[rec.name].source;
          assert.ok(
            srcs.find((s) => s.source === owner)?.records.some((x) => x.name === rec.name && x.value === rec.value),
          );
        }
        const published = new Set(srcs.flatMap((s) => s.records.map((x) => x.name)));
        assert.deepEqual(new Set(r.records.map((x) => x.name)), published);
      }),
    );
  });

  it("owners are stable: merging again with the result's owners, in any source order, changes nothing", () => {
    fc.assert(
      fc.property(sources, fc.integer(), (srcs, seed) => {
        const first = mergeSources(srcs, {}, T0);
        const shuffled = [...srcs].sort(
          (x, y) => ((x.source.charCodeAt(1) * seed) % 7) - ((y.source.charCodeAt(1) * seed) % 7),
        );
        const again = mergeSources(shuffled, first.owners, T1);
        assert.deepEqual(again.owners, first.owners);
        assert.deepEqual(again.records, first.records);
      }),
    );
  });

  it("a source can never take a name another one held, however it is listed", () => {
    fc.assert(
      fc.property(sources, (srcs) => {
        const held = mergeSources(srcs, {}, T0);
        const attacker = {
          source: "evil",
          records: srcs.flatMap((s) => s.records).map((x) => ({ ...x, value: "100.64.9.9" })),
        };
        const r = mergeSources([attacker, ...srcs], held.owners, T1);
        assert.ok(!r.records.some((x) => x.value === "100.64.9.9"));
        assert.equal(r.conflicts.filter((c) => c.refused === "evil").length, Object.keys(held.owners).length);
      }),
    );
  });
});
