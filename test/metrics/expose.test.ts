import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import { build } from "../helpers/server.js";

/** Every family with series, label values that need escaping, values prom-client spells its own way. */
function fixture(metrics: ReturnType<typeof createOperatorMetrics>, objects: number): void {
  const types = ["TagKnown", "Registered", "RoutesGranted", "TargetsReachable", "ServiceConflict", "Ready"];
  for (let i = 0; i < objects; i++) {
    const id = { kind: "TailnetEgress", namespace: `ns${i % 10}`, name: i % 97 === 0 ? `o"b\\j\n${i}` : `obj${i}` };
    for (const type of types) {
      metrics.resourceCondition.set({ ...id, type, reason: "Ready" }, 1);
      if (i % 3 === 0) metrics.resourceCondition.set({ ...id, type, reason: "HeadscaleUnavailable" }, 0);
    }
    metrics.resourceReady.set({ ...id, reason: "Ready" }, i % 5 === 0 ? 0 : 1);
    metrics.authKeyExpiry.set(id, i % 11 === 0 ? Number.NaN : 1.8e9 + i / 8);
    metrics.egressTargetState.set({ namespace: id.namespace, name: id.name, target: "t", state: "Ready" }, 1);
    metrics.nodeLastSeen.set({ tailnet: "home", node: `n${i}` }, i % 13 === 0 ? Number.POSITIVE_INFINITY : -i);
  }
  metrics.hookRequests.inc({ kind: "egress", hook: "sync", code: "200" }, 3);
  metrics.hookDuration.observe({ kind: "egress", hook: "sync" }, 0.02);
  metrics.policyGenerated.set({ tailnet: "home", kind: "tags" }, 7);
}

describe("GET /metrics", () => {
  it("answers the text prom-client's Registry.metrics() writes for the same state, byte for byte", async (t) => {
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    const { app } = await build(t, { server: { deps: { metrics } } });
    fixture(metrics, 3_000);
    const expected = await metrics.registry.metrics();
    const res = await app.inject({ method: "GET", url: "/metrics" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], metrics.registry.contentType);
    assert.ok(expected.split("\n").length > 30_000);
    assert.equal(res.body, expected);
    // and again, with the state changed in between
    metrics.resourceCondition.remove({
      kind: "TailnetEgress",
      namespace: "ns1",
      name: "obj1",
      type: "Ready",
      reason: "Ready",
    });
    metrics.resourceCondition.set(
      { kind: "TailnetEgress", namespace: "ns1", name: "obj1", type: "Ready", reason: "X" },
      1,
    );
    assert.equal((await app.inject({ method: "GET", url: "/metrics" })).body, await metrics.registry.metrics());
  });

  it("does not hold the event loop for the whole exposition of 200,000 series", async (t) => {
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    fixture(metrics, 20_000);
    const { app } = await build(t, { server: { deps: { metrics } } });
    let last = performance.now();
    let longest = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    try {
      last = performance.now();
      const res = await app.inject({ method: "GET", url: "/metrics" });
      longest = Math.max(longest, performance.now() - last);
      assert.ok(res.body.length > 15_000_000);
    } finally {
      clearInterval(ticker);
    }
    // the whole text takes several hundred ms to write (a single block before it was chunked)
    console.log(`longest ${longest.toFixed(0)} ms`);
    assert.ok(longest < 150, `the event loop was held for ${longest.toFixed(0)} ms at once`);
  });
});
