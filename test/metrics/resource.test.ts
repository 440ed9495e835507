import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Condition } from "../../src/conditions/condition.js";
import { publishEgressMetrics } from "../../src/kinds/composite/egress/metrics.js";
import { publishIngressMetrics } from "../../src/kinds/composite/ingress/metrics.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import {
  MAX_REASON_SERIES,
  publishConditions,
  resourceMemory,
  sweepStaleResources,
  withdrawResource,
} from "../../src/metrics/resource.js";
import { parentObject } from "../fixtures/hooks.js";

const c = (type: string, status: Condition["status"], reason: string, generation = 2): Condition => ({
  type,
  status,
  reason,
  message: "",
  lastTransitionTime: "2026-11-29T10:00:00Z",
  observedGeneration: generation,
});
const id = { kind: "TailnetEgress", namespace: "shop", name: "db" };
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

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
  it(`keeps at most ${MAX_REASON_SERIES} reason series per condition type: the active one and the latest before it`, async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    const reasons = Array.from({ length: 10 }, (_, i) => `Reason${i}`);
    for (const r of reasons) publishConditions(m, id, [c("TailnetReady", "False", r)], 2, 0);
    const text = await m.registry.metrics();
    const series = [...text.matchAll(/^tailnet_resource_condition\{[^}]*type="TailnetReady",reason="(\w+)"\} (\d)$/gm)];
    assert.deepEqual(series.map((s) => [s[1], s[2]]).sort(), [
      ["Reason7", "0"],
      ["Reason8", "0"],
      ["Reason9", "1"],
    ]);
  });
  it("a reason that comes back is the active one again, and the oldest other one is dropped", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    for (const r of ["A", "B", "C", "A", "D"]) publishConditions(m, id, [c("Ready", "False", r)], 2, 0);
    const text = await m.registry.metrics();
    const series = [...text.matchAll(/^tailnet_resource_condition\{[^}]*reason="(\w+)"\} (\d)$/gm)];
    assert.deepEqual(series.map((s) => [s[1], s[2]]).sort(), [
      ["A", "0"],
      ["C", "0"],
      ["D", "1"],
    ]);
    const ready = [...text.matchAll(/^tailnet_resource_ready\{[^}]*reason="(\w+)"\} (\d)$/gm)];
    assert.deepEqual(
      ready.map((s) => [s[1], s[2]]),
      [["D", "0"]],
    );
  });
  it("20,000 objects × a cycle of reasons hold at most MAX_REASON_SERIES series per type, and withdraw touches one object", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    const ids = Array.from({ length: 20_000 }, (_, i) => ({ ...id, name: `db${i}` }));
    for (const r of ["Timeout", "Unauthorized", "Unavailable", "Rejected", "Ready"])
      for (const o of ids) publishConditions(m, o, [c("Ready", r === "Ready" ? "True" : "False", r)], 2, 0);
    const text = await m.registry.metrics();
    assert.equal(text.match(/^tailnet_resource_condition\{/gm)?.length, 20_000 * MAX_REASON_SERIES);
    assert.equal(text.match(/^tailnet_resource_ready\{/gm)?.length, 20_000);
    withdrawResource(m, ids[1]);
    const after = await m.registry.metrics();
    assert.doesNotMatch(after, /name="db1"/);
    assert.match(after, /name="db10"/);
    assert.match(after, /name="db19999"/);
  });
  it("the stale sweep also withdraws an expired object's key expiry, egress target and ingress expose series and memory", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    const egress = parentObject("TailnetEgress", "db", {}, { namespace: "shop" });
    const ingress = parentObject("TailnetIngress", "web", {}, { namespace: "shop" });
    const publish = (at: number) => {
      publishConditions(m, { ...id, name: "db" }, [c("Ready", "True", "Ready")], 2, at);
      publishEgressMetrics(m, egress, {
        targets: [{ name: "postgres", state: "Ready" }],
        routesMissing: 0,
        authKeyExpiresAt: new Date(9e12),
      });
      publishConditions(m, { ...id, kind: "TailnetIngress", name: "web" }, [c("Ready", "True", "Ready")], 2, at);
      publishIngressMetrics(m, ingress, [{ name: "http", reachable: true }], new Date(9e12));
    };
    publish(1000);
    assert.equal(sweepStaleResources(m, 10_000, 2000), 2);
    const text = await m.registry.metrics();
    for (const family of [
      "tailnet_egress_target_state",
      "tailnetegress_routes_missing",
      "tailnet_ingress_expose_reachable",
      "tailnetingress_backends_unreachable",
      "tailnet_auth_key_expiry_timestamp_seconds",
      "tailnet_resource_condition",
    ])
      assert.doesNotMatch(text, new RegExp(`^${family}\\{`, "m"), family);
    // the memories went too: the same states published again are series again (not "unchanged, set nothing")
    publish(20_000);
    const again = await m.registry.metrics();
    assert.match(
      again,
      /^tailnet_egress_target_state\{namespace="shop",name="db",target="postgres",state="Ready"\} 1$/m,
    );
    assert.match(again, /^tailnet_ingress_expose_reachable\{namespace="shop",name="web",expose="http"\} 1$/m);
  });

  it("objects with the same reasons share one record of them, changed by copy: 20,000 objects in under 450 bytes each (unshared: 1,258)", async () => {
    const types = [
      "Ready",
      "TailnetReady",
      "AuthKeyReady",
      "NodeRegistered",
      "PolicyApplied",
      "ChildrenReady",
      "DNS",
      "Tag",
      "Routes",
    ];
    const conditions = (i: number, round: number) =>
      types.map((type, j) =>
        j === 3 && round === 1 && i % 3 === 0 ? c(type, "False", "NotRegistered") : c(type, "True", `${type}Ok`),
      );
    gc();
    const before = process.memoryUsage().heapUsed;
    const m = createOperatorMetrics({ defaultMetrics: false });
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < 20_000; i++)
        publishConditions(m, { ...id, namespace: `ns${i % 10}`, name: `obj${i}` }, conditions(i, round), 2, round);
    gc();
    const bytes = (process.memoryUsage().heapUsed - before) / 20_000;
    console.log(`resource metrics and memory: ${bytes.toFixed(0)} bytes an object`);
    assert.ok(bytes < 450, `${bytes.toFixed(0)} bytes an object`);
    // a third went NotRegistered and back: those hold the reason before it too, in a record of their own
    assert.deepEqual(resourceMemory(m), { objects: 20_000, reasonRecords: 2 });
    // what one object changes is its own: the others' series and records stay
    publishConditions(m, { ...id, namespace: "ns1", name: "obj1" }, [c("Ready", "False", "Broken")], 2, 3);
    const text = await m.registry.metrics();
    assert.match(text, /namespace="ns1",name="obj1",type="Ready",reason="Broken"\} 1/);
    assert.match(text, /namespace="ns1",name="obj1",type="Ready",reason="ReadyOk"\} 0/);
    assert.match(text, /namespace="ns2",name="obj2",type="Ready",reason="ReadyOk"\} 1/);
    assert.doesNotMatch(text, /name="obj2",type="Ready",reason="Broken"/);
    assert.equal(resourceMemory(m).reasonRecords, 3);
    // the records go with their last holder: nothing is left after every object is withdrawn
    for (let i = 0; i < 20_000; i++) withdrawResource(m, { ...id, namespace: `ns${i % 10}`, name: `obj${i}` });
    assert.deepEqual(resourceMemory(m), { objects: 0, reasonRecords: 0 });
    assert.doesNotMatch(await m.registry.metrics(), /tailnet_resource_condition\{/);
  });
});
