import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Condition } from "../../src/conditions/condition.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import { publishConditions, sweepStaleResources, withdrawResource } from "../../src/metrics/resource.js";

const c = (type: string, status: Condition["status"], reason: string, generation = 2): Condition => ({
  type,
  status,
  reason,
  message: "",
  lastTransitionTime: "2026-11-29T10:00:00Z",
  observedGeneration: generation,
});
const id = { kind: "TailnetEgress", namespace: "shop", name: "db" };

describe("resource metrics", () => {
  it("1 for the active reason, 0 for reasons seen before; ready carries the active reason", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    publishConditions(m, id, [c("Ready", "False", "NotRegistered")], 2, 0);
    publishConditions(m, id, [c("Ready", "True", "Ready")], 2, 0);
    const text = await m.registry.metrics();
    assert.match(
      text,
      /tailnet_resource_condition\{kind="TailnetEgress",namespace="shop",name="db",type="Ready",reason="NotRegistered"\} 0/,
    );
    assert.match(
      text,
      /tailnet_resource_condition\{kind="TailnetEgress",namespace="shop",name="db",type="Ready",reason="Ready"\} 1/,
    );
    assert.match(text, /tailnet_resource_ready\{kind="TailnetEgress",namespace="shop",name="db",reason="Ready"\} 1/);
    assert.doesNotMatch(text, /tailnet_resource_ready\{[^}]*reason="NotRegistered"/);
  });
  it("no ready series for a Ready condition of an older generation", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    publishConditions(m, id, [c("Ready", "False", "NotRegistered", 1)], 2, 0);
    assert.doesNotMatch(await m.registry.metrics(), /tailnet_resource_ready\{/);
  });
  it("withdraw and stale sweep remove every series of the object", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    publishConditions(m, id, [c("Ready", "False", "NotRegistered")], 2, 1000);
    publishConditions(m, { ...id, name: "fresh" }, [c("Ready", "True", "Ready")], 2, 5000);
    assert.equal(sweepStaleResources(m, 6000, 2000), 1);
    const text = await m.registry.metrics();
    assert.doesNotMatch(text, /name="db"/);
    assert.match(text, /name="fresh"/);
    withdrawResource(m, { ...id, name: "fresh" });
    assert.doesNotMatch(await m.registry.metrics(), /name="fresh"/);
  });
});
