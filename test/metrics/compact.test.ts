import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
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
});
