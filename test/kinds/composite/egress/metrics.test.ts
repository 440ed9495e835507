import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { publishEgressMetrics, withdrawEgressMetrics } from "../../../../src/kinds/composite/egress/metrics.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { egressParent } from "./fixtures.js";

async function series(metrics: ReturnType<typeof createOperatorMetrics>, name: string): Promise<string[]> {
  const text = await metrics.registry.getSingleMetricAsString(name);
  return text
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .sort();
}

describe("egress metrics", () => {
  it("target state: 1 for the current state, 0 for the others; routes missing; key expiry", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    publishEgressMetrics(m, egressParent(), {
      targets: [{ name: "postgres", state: "NoGrant" }],
      routesMissing: 1,
      authKeyExpiresAt: new Date("2026-11-30T08:00:00Z"),
    });
    const l = (state: string, v: number) =>
      `tailnet_egress_target_state{namespace="shop",name="db",target="postgres",state="${state}"} ${v}`;
    assert.deepEqual(
      await series(m, "tailnet_egress_target_state"),
      [
        l("NoGrant", 1),
        l("NotAdvertised", 0),
        l("NotApproved", 0),
        l("OutsideTailnet", 0),
        l("ProbeFailed", 0),
        l("Ready", 0),
        l("TargetNotAllowed", 0),
        l("Unreachable", 0),
      ].sort(),
    );
    assert.deepEqual(await series(m, "tailnetegress_routes_missing"), [
      'tailnetegress_routes_missing{namespace="shop",name="db"} 1',
    ]);
    assert.deepEqual(await series(m, "tailnet_auth_key_expiry_timestamp_seconds"), [
      'tailnet_auth_key_expiry_timestamp_seconds{kind="TailnetEgress",namespace="shop",name="db"} 1796025600',
    ]);
  });

  it("a target that left the spec and a routes count that is unknown are withdrawn; withdraw clears all", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    const p = egressParent();
    publishEgressMetrics(m, p, {
      targets: [
        { name: "postgres", state: "Ready" },
        { name: "printer", state: "Ready" },
      ],
      routesMissing: 0,
    });
    publishEgressMetrics(m, p, { targets: [{ name: "printer", state: "ProbeFailed" }] });
    const lines = await series(m, "tailnet_egress_target_state");
    assert.equal(lines.length, 8);
    assert.ok(lines.every((x) => x.includes('target="printer"')));
    assert.ok(
      lines.includes('tailnet_egress_target_state{namespace="shop",name="db",target="printer",state="ProbeFailed"} 1'),
    );
    assert.deepEqual(await series(m, "tailnetegress_routes_missing"), []);
    withdrawEgressMetrics(m, p);
    assert.deepEqual(await series(m, "tailnet_egress_target_state"), []);
  });

  it("egresses in the same states share what they remember, and a change to one leaves the others' series", async () => {
    const m = createOperatorMetrics({ defaultMetrics: false });
    const named = (name: string) => ({ ...egressParent(), metadata: { ...egressParent().metadata, name } });
    const targets = [
      { name: "postgres", state: "Ready" },
      { name: "redis", state: "NoGrant" },
    ];
    for (const name of ["a", "b", "c"]) publishEgressMetrics(m, named(name), { targets });
    publishEgressMetrics(m, named("b"), { targets: [{ name: "postgres", state: "Unreachable" }] });
    publishEgressMetrics(m, named("c"), { targets }); // unchanged: sets nothing
    const ones = (await series(m, "tailnet_egress_target_state")).filter((l) => l.endsWith(" 1"));
    assert.deepEqual(ones, [
      'tailnet_egress_target_state{namespace="shop",name="a",target="postgres",state="Ready"} 1',
      'tailnet_egress_target_state{namespace="shop",name="a",target="redis",state="NoGrant"} 1',
      'tailnet_egress_target_state{namespace="shop",name="b",target="postgres",state="Unreachable"} 1',
      'tailnet_egress_target_state{namespace="shop",name="c",target="postgres",state="Ready"} 1',
      'tailnet_egress_target_state{namespace="shop",name="c",target="redis",state="NoGrant"} 1',
    ]);
    assert.equal((await series(m, "tailnet_egress_target_state")).filter((l) => l.includes('name="b"')).length, 8);
    for (const name of ["a", "b", "c"]) withdrawEgressMetrics(m, named(name));
    assert.deepEqual(await series(m, "tailnet_egress_target_state"), []);
    // withdrawn, then published again: every series is set anew
    publishEgressMetrics(m, named("a"), { targets });
    assert.equal((await series(m, "tailnet_egress_target_state")).length, 16);
  });
});
