import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { Gauge, Registry } from "prom-client";
import { CompactGauge } from "../../src/metrics/compact.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const labelNames = ["kind", "namespace", "name", "type", "reason"] as const;
const spec = { name: "tailnet_resource_condition", help: 'help with "quotes" and \\ backslash', labelNames };

describe("CompactGauge", () => {
  it("writes the exposition text prom-client's Gauge writes for the same sets and removes, byte for byte", async () => {
    const [a, b] = [new Registry(), new Registry()];
    const gauge = new Gauge({ ...spec, registers: [a] });
    const compact = new CompactGauge({ ...spec, registers: [b] });
    const ops: [string, Record<string, string>, number?][] = [];
    for (let i = 0; i < 50; i++) {
      const labels = {
        kind: "TailnetEgress",
        namespace: `ns${i % 3}`,
        name: `o"b\\j\n${i}`,
        type: "Ready",
        reason: `R${i % 4}`,
      };
      ops.push(["set", labels, i % 2], ["set", { ...labels, reason: "Ready" }, 1.5e9 + i]);
      if (i % 5 === 0) ops.push(["remove", labels]);
      if (i % 7 === 0) ops.push(["set", labels, 1]);
    }
    for (const [op, labels, v] of ops) {
      if (op === "set") {
        gauge.set(labels, v as number);
        compact.set(labels, v as number);
      } else {
        gauge.remove(labels);
        compact.remove(labels);
      }
    }
    const [ta, tb] = [await a.metrics(), await b.metrics()];
    assert.ok(ta.split("\n").length > 80);
    assert.equal(tb, ta);
    assert.deepEqual(await compact.get(), await gauge.get());
  });
  it("holds 100,000 series in under 200 bytes of heap each (prom-client's Gauge: about 420)", () => {
    const measure = (make: () => { set: (l: Record<string, string>, v: number) => void }) => {
      gc();
      const before = process.memoryUsage().heapUsed;
      const g = make();
      for (let i = 0; i < 100_000; i++)
        g.set(
          { kind: "TailnetEgress", namespace: `ns-${i % 50}`, name: `obj-${i}`, type: "TailnetReady", reason: "Ready" },
          1,
        );
      gc();
      const bytes = (process.memoryUsage().heapUsed - before) / 100_000;
      assert.ok(g); // kept alive until measured
      return bytes;
    };
    const compact = measure(() => new CompactGauge({ ...spec, registers: [new Registry()] }));
    const gauge = measure(() => new Gauge({ ...spec, registers: [new Registry()] }));
    assert.ok(compact < 200, `${compact.toFixed(0)} bytes per series`);
    console.log(`compact ${compact.toFixed(0)}, Gauge ${gauge.toFixed(0)} bytes per series`);
    assert.ok(gauge > 2 * compact, `Gauge ${gauge.toFixed(0)} vs compact ${compact.toFixed(0)} bytes per series`);
  });

  it("groupBy: the same series and values as a Gauge after the same sets, removes and incs, lines grouped per object", async () => {
    const [a, b] = [new Registry(), new Registry()];
    const gauge = new Gauge({ ...spec, registers: [a] });
    const compact = new CompactGauge({ ...spec, registers: [b], groupBy: 3 });
    for (let i = 0; i < 60; i++) {
      const labels = {
        kind: "TailnetIngress",
        namespace: `ns${i % 4}`,
        name: `o"b\\j\n${i % 9}`,
        type: `T${i % 3}`,
        reason: `R${i % 5}`,
      };
      for (const g of [gauge, compact]) g.set(labels, i % 2);
      if (i % 4 === 0) for (const g of [gauge, compact]) g.remove(labels);
      if (i % 6 === 0) for (const g of [gauge, compact]) g.inc({ ...labels, reason: "Inc" }, 2);
      if (i % 7 === 0) for (const g of [gauge, compact]) g.set({ ...labels, reason: "Stamp" }, 1.7e9 + i);
    }
    compact.remove({ kind: "nothing", namespace: "x", name: "y", type: "z", reason: "w" });
    const lines = (text: string) =>
      text
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .sort();
    const [ta, tb] = [await a.metrics(), await b.metrics()];
    assert.ok(lines(ta).length > 40);
    assert.deepEqual(lines(tb), lines(ta));
    assert.equal(compact.size, lines(ta).length);
    const byLabels = (v: { labels: Record<string, string | number>; value: number }[]) =>
      v.map((x) => `${JSON.stringify(x.labels)}=${x.value}`).sort();
    assert.deepEqual(byLabels((await compact.get()).values), byLabels((await gauge.get()).values));
    // an object's lines come together, in the order objects were first set
    const heads =
      lines(tb).length &&
      tb
        .split("\n")
        .filter((l) => l.startsWith("tailnet_"))
        .map((l) => l.split(",type=")[0]);
    const runs = (heads as string[]).filter((h, i, all) => i === 0 || all[i - 1] !== h);
    assert.equal(new Set(runs).size, runs.length, "each object's series are one run of lines");
  });
  it("groupBy: 8 series an object, the same for every object, cost under 20 bytes of heap each (unshared: 39)", () => {
    gc();
    const before = process.memoryUsage().heapUsed;
    const g = new CompactGauge({ ...spec, registers: [new Registry()], groupBy: 3 });
    const types = [
      "Ready",
      "Registered",
      "TagKnown",
      "PolicyGranted",
      "TLSReady",
      "BackendsReachable",
      "DNSServed",
      "NodeIdentity",
    ];
    for (let i = 0; i < 12_500; i++)
      for (const type of types)
        g.set({ kind: "TailnetIngress", namespace: `ns-${i % 50}`, name: `obj-${i}`, type, reason: type }, 1);
    gc();
    const bytes = (process.memoryUsage().heapUsed - before) / 100_000;
    assert.equal(g.size, 100_000);
    console.log(`grouped ${bytes.toFixed(0)} bytes per series`);
    assert.ok(bytes < 20, `${bytes.toFixed(0)} bytes per series`);
  });

  it("groupBy: objects share equal series, and a change to one object's never shows in another's (random sequences)", async () => {
    const lines = (text: string) =>
      text
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .sort();
    const op = fc.record({
      op: fc.constantFrom("set", "set", "remove", "inc"),
      name: fc.constantFrom("a", "b", "c", "d"),
      type: fc.constantFrom("Ready", "Registered"),
      reason: fc.constantFrom("Ok", "Pending", "Failed"),
      value: fc.constantFrom(0, 1, 2, -0, 0.5),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const [a, b] = [new Registry(), new Registry()];
        const gauge = new Gauge({ ...spec, registers: [a] });
        const compact = new CompactGauge({ ...spec, registers: [b], groupBy: 3 });
        for (const o of ops) {
          const labels = { kind: "TailnetIngress", namespace: "ns", name: o.name, type: o.type, reason: o.reason };
          for (const g of [gauge, compact]) {
            if (o.op === "set") g.set(labels, o.value);
            else if (o.op === "inc") g.inc(labels, o.value);
            else g.remove(labels);
          }
        }
        const [ta, tb] = [await a.metrics(), await b.metrics()];
        assert.deepEqual(lines(tb), lines(ta));
        assert.equal(compact.size, lines(ta).length);
      }),
      { numRuns: 300 },
    );
  });
  it("groupBy: 20,000 objects of 8 series, one in ten with a value of its own, cost under 150 bytes an object (unshared: 317)", () => {
    gc();
    const before = process.memoryUsage().heapUsed;
    const g = new CompactGauge({ ...spec, registers: [new Registry()], groupBy: 3 });
    for (let i = 0; i < 20_000; i++)
      for (let t = 0; t < 8; t++)
        g.set({ kind: "TailnetIngress", namespace: `ns-${i % 50}`, name: `obj-${i}`, type: `T${t}`, reason: "Ok" }, 1);
    // one object of ten changes one series: it holds a series list of its own kind, shared with its like
    for (let i = 0; i < 20_000; i += 10)
      g.set({ kind: "TailnetIngress", namespace: `ns-${i % 50}`, name: `obj-${i}`, type: "T3", reason: "Ok" }, 0);
    gc();
    const bytes = (process.memoryUsage().heapUsed - before) / 20_000;
    assert.equal(g.size, 160_000);
    console.log(`grouped, shared: ${bytes.toFixed(0)} bytes an object`);
    assert.ok(bytes < 150, `${bytes.toFixed(0)} bytes an object`);
  });
});
