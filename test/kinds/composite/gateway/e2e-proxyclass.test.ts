/**
 * TailnetGateway with a TailnetProxyClass, end to end through the Metacontroller emulator: a named class
 * that does not exist holds the gateway (no pod with default settings, Ready=False/ProxyClassMissing); once
 * it exists the pod template carries it; editing the class changes the template (so the pod rolls).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { API, applyGateway, child, cond, readyGateway, world } from "./world.js";

const proxyClass = (spec: Record<string, unknown>): K8sObject => ({
  apiVersion: API,
  kind: "TailnetProxyClass",
  metadata: { name: "edge" },
  spec,
});
type Pod = { spec: { nodeSelector?: Record<string, string>; containers: { name: string; resources?: unknown }[] } };
const podOf = (d: K8sObject | undefined) => (d?.spec as { template: Pod } | undefined)?.template;

describe("TailnetGateway with a TailnetProxyClass", () => {
  it("a missing class holds the gateway; the class, once there, shapes the pod", async (t) => {
    const w = await world(t);
    applyGateway(w.mc, { proxyClassName: "edge" });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    const ready = cond(w.mc, "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "ProxyClassMissing");
    assert.match(ready?.message ?? "", /TailnetProxyClass edge does not exist/);
    assert.equal(cond(w.mc, "Registered")?.reason, "ProxyClassMissing");
    assert.equal(child(w.mc, "StatefulSet", "gw-gateway-0"), undefined, "no pod runs with the default settings");

    w.mc.apply(
      proxyClass({ nodeSelector: { edge: "true" }, tailscaleResources: { requests: { cpu: "77m" } } }) as never,
    );
    await w.mc.settle();
    const pod = podOf(child(w.mc, "StatefulSet", "gw-gateway-0"));
    assert.deepEqual(pod?.spec.nodeSelector, { edge: "true" });
    assert.deepEqual(pod?.spec.containers.find((c) => c.name === "tailscale")?.resources, { requests: { cpu: "77m" } });
    assert.notEqual(cond(w.mc, "Ready")?.reason, "ProxyClassMissing");
  });

  it("a class edit changes the pod template; a class deleted later keeps the pod as it runs", async (t) => {
    const w = await readyGateway(t, {}, {});
    w.mc.apply(proxyClass({ nodeSelector: { edge: "a" } }) as never);
    applyGateway(w.mc, { proxyClassName: "edge" });
    await w.mc.settle();
    assert.deepEqual(podOf(child(w.mc, "StatefulSet", "gw-gateway-0"))?.spec.nodeSelector, { edge: "a" });
    w.mc.apply(proxyClass({ nodeSelector: { edge: "b" } }) as never);
    await w.mc.settle();
    const before = child(w.mc, "StatefulSet", "gw-gateway-0");
    assert.deepEqual(podOf(before)?.spec.nodeSelector, { edge: "b" });
    // the template stamp is taken after the class (template-hash.ts): a class is no drift, the gateway stays Ready
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady", cond(w.mc, "Registered")?.message);
    assert.equal(cond(w.mc, "Ready")?.status, "True");

    w.mc.delete(API, "TailnetProxyClass", "edge");
    await w.mc.settle();
    assert.equal(cond(w.mc, "Ready")?.reason, "ProxyClassMissing");
    assert.deepEqual(podOf(child(w.mc, "StatefulSet", "gw-gateway-0"))?.spec, podOf(before)?.spec);
  });
});
