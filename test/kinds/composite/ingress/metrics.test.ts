import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { publishIngressMetrics, withdrawIngressMetrics } from "../../../../src/kinds/composite/ingress/metrics.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { ingress } from "./fixtures.js";
import { sample } from "./world.js";

const id = { namespace: "monitoring", name: "grafana" };

describe("ingress metrics", () => {
  it("follow the observations: 1/0 per expose, no series while unknown, stale exposes removed, all gone on delete", async () => {
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    const text = () => metrics.registry.metrics();
    const parent = ingress();
    const expires = new Date("2026-11-30T06:00:00Z");

    publishIngressMetrics(
      metrics,
      parent,
      [
        { name: "web", reachable: true },
        { name: "api", reachable: false },
      ],
      expires,
    );
    let t = await text();
    assert.equal(sample(t, "tailnet_ingress_expose_reachable", { ...id, expose: "web" }), 1);
    assert.equal(sample(t, "tailnet_ingress_expose_reachable", { ...id, expose: "api" }), 0);
    assert.equal(sample(t, "tailnetingress_backends_unreachable", id), 1);
    assert.equal(
      sample(t, "tailnet_auth_key_expiry_timestamp_seconds", { kind: "TailnetIngress", ...id }),
      expires.getTime() / 1000,
    );

    publishIngressMetrics(metrics, parent, [{ name: "web", reachable: true }], expires);
    t = await text();
    assert.equal(sample(t, "tailnet_ingress_expose_reachable", { ...id, expose: "api" }), undefined, "left the spec");
    assert.equal(sample(t, "tailnetingress_backends_unreachable", id), 0);

    publishIngressMetrics(metrics, parent, [{ name: "web", reachable: undefined }], expires);
    t = await text();
    assert.equal(sample(t, "tailnet_ingress_expose_reachable", { ...id, expose: "web" }), undefined, "not scraped");
    assert.equal(sample(t, "tailnetingress_backends_unreachable", id), undefined);

    publishIngressMetrics(metrics, parent, [{ name: "web", reachable: false }], expires);
    withdrawIngressMetrics(metrics, parent);
    t = await text();
    assert.doesNotMatch(t, /name="grafana"/);
  });
});
