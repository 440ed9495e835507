/**
 * TailnetIngress with a TailnetProxyClass, end to end through the Metacontroller emulator, the hook server
 * and the fake Headscale: a missing class starts no agent pod with defaults and writes nothing to Headscale;
 * the class shapes the pods once it exists; deleting it later keeps the running pods as they are.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { tcpIngress } from "./fixtures.js";
import { type World, world } from "./world.js";

const proxyClass = (spec: Record<string, unknown>): K8sObject => ({
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetProxyClass",
  metadata: { name: "edge" },
  spec,
});
type Pod = { spec: { tolerations?: unknown[]; containers: { name: string; resources?: unknown }[] } };
const deployment = (w: World) => w.mc.get("apps/v1", "StatefulSet", "grafana-agent-0", "monitoring");
const podOf = (d: K8sObject | undefined) => (d?.spec as { template: Pod } | undefined)?.template;

async function settle(w: World): Promise<void> {
  await w.mc.settle();
  assert.deepEqual(w.mc.errors, []);
}

describe("TailnetIngress with a TailnetProxyClass", () => {
  it("missing: held (no pod, no key, Ready=False/ProxyClassMissing); created: the pods take it", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana", { proxyClassName: "edge" }));
    await settle(w);
    assert.equal(w.condition("Ready").reason, "ProxyClassMissing");
    assert.match(w.condition("Ready").message, /TailnetProxyClass edge does not exist/);
    assert.equal(w.condition("TagKnown").reason, "ProxyClassMissing");
    assert.equal(deployment(w), undefined);
    assert.equal(w.hs.requests.filter((r) => r.method === "POST").length, 0, "nothing written to Headscale");

    const tolerations = [{ key: "edge", operator: "Exists", effect: "NoSchedule" }];
    w.mc.apply(proxyClass({ tolerations, tailscaleResources: { limits: { memory: "200Mi" } } }) as never);
    await settle(w);
    assert.equal(w.condition("Ready").reason, "NotRegistered");
    const pod = podOf(deployment(w));
    assert.deepEqual(pod?.spec.tolerations, tolerations);
    assert.deepEqual(pod?.spec.containers.find((c) => c.name === "tailscale")?.resources, {
      limits: { memory: "200Mi" },
    });
  });

  it("the class deleted later keeps the running pods exactly as they are", async (t) => {
    const w = await world(t);
    w.mc.apply(proxyClass({ nodeSelector: { edge: "true" } }) as never);
    w.mc.apply(tcpIngress("grafana", { proxyClassName: "edge" }));
    await settle(w);
    const before = JSON.stringify(deployment(w)?.spec);
    assert.match(before, /"nodeSelector":\{"edge":"true"\}/);
    w.mc.delete("tailnet.internal/v1alpha1", "TailnetProxyClass", "edge");
    await settle(w);
    assert.equal(w.condition("Ready").reason, "ProxyClassMissing");
    assert.equal(JSON.stringify(deployment(w)?.spec), before);
  });
});
