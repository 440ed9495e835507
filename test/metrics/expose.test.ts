import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { exposition } from "../../src/metrics/expose.js";
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

  it("writes chunks that stay young-generation strings (under 128 KiB), at any chunk size the same text", async () => {
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    fixture(metrics, 2_000);
    const expected = await metrics.registry.metrics();
    const chunks: string[] = [];
    for await (const c of exposition(metrics.registry)) chunks.push(c);
    assert.equal(chunks.join(""), expected);
    assert.ok(chunks.length > 20, `${chunks.length} chunks`);
    assert.ok(Math.max(...chunks.map((c) => c.length)) < 128 * 1024);
    for (const size of [1, 97]) {
      let text = "";
      for await (const c of exposition(metrics.registry, size)) text += c;
      assert.equal(text, expected, `chunks of ${size} characters`);
    }
  });

  it("lets the event loop turn while it writes the exposition of 200,000 series", async (t) => {
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    fixture(metrics, 20_000);
    const { app } = await build(t, { server: { deps: { metrics } } });
    // turns of the event loop (setImmediate runs once per turn) while the scrape is in flight: a count, not a
    // duration, so a loaded machine cannot fail it; written as one string it was a single turn
    let turns = 0;
    let running = true;
    const turn = () => {
      turns++;
      if (running) setImmediate(turn);
    };
    setImmediate(turn);
    const started = performance.now();
    const res = await app.inject({ method: "GET", url: "/metrics" });
    running = false;
    assert.ok(res.body.length > 15_000_000);
    console.log(`${turns} turns in ${(performance.now() - started).toFixed(0)} ms`);
    assert.ok(turns >= 40, `the event loop turned ${turns} times while 200,000 series were written`);
  });
});
