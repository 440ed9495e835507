/**
 * TailnetEgress with a TailnetProxyClass, end to end through the Metacontroller emulator, the hook server and
 * the fake Headscale: a missing class never starts agent pods with the default settings, the class shapes the
 * pods once it exists, and deleting it later keeps the running pods exactly as they are.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { API, toReady, world } from "./world.js";

const proxyClass = (spec: Record<string, unknown>): K8sObject => ({
  apiVersion: API,
  kind: "TailnetProxyClass",
  metadata: { name: "edge" },
  spec,
});
type Container = { name: string; resources?: unknown; image?: string };
type Pod = {
  metadata: { labels: Record<string, string> };
  spec: { priorityClassName?: string; containers: Container[] };
};
const deployment = (w: Awaited<ReturnType<typeof world>>) => w.mc.get("apps/v1", "StatefulSet", "db-agent-0", "shop");
const podOf = (d: K8sObject | undefined) => (d?.spec as { template: Pod } | undefined)?.template;

describe("TailnetEgress with a TailnetProxyClass", () => {
  it("missing: no agent pods with defaults, Ready=False/ProxyClassMissing; created: the pods take it", async (t) => {
    const w = await world(t, { applyEgress: false });
    w.mc.apply(parentObject("TailnetEgress", "db", { ...w.spec, proxyClassName: "edge" }, { namespace: "shop" }));
    await w.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.equal(w.cond("Ready")?.reason, "ProxyClassMissing");
    assert.equal(w.cond("Ready")?.status, "False");
    assert.equal(w.cond("Registered")?.reason, "ProxyClassMissing");
    assert.equal(deployment(w), undefined);
    assert.equal(w.fake.count("POST", /^\/api\/v1\/preauthkey$/), 0, "nothing written to Headscale");

    w.mc.apply(
      proxyClass({
        resources: { requests: { cpu: "100m", memory: "96Mi" }, limits: { memory: "384Mi" } },
        priorityClassName: "tailnet-critical",
        podLabels: { team: "net" },
      }) as never,
    );
    await toReady(w);
    assert.equal(w.cond("Ready")?.reason, "Ready");
    const pod = podOf(deployment(w));
    assert.equal(pod?.spec.priorityClassName, "tailnet-critical");
    assert.equal(pod?.metadata.labels.team, "net");
    assert.deepEqual(pod?.spec.containers.find((c) => c.name === "agent")?.resources, {
      requests: { cpu: "100m", memory: "96Mi" },
      limits: { memory: "384Mi" },
    });
  });

  it("a class edit rolls the pods (new template); the class deleted keeps them as they run", async (t) => {
    const w = await world(t, { applyEgress: false });
    w.mc.apply(proxyClass({ images: { agent: "mirror/op:1" } }) as never);
    w.mc.apply(parentObject("TailnetEgress", "db", { ...w.spec, proxyClassName: "edge" }, { namespace: "shop" }));
    await toReady(w);
    const image = () => podOf(deployment(w))?.spec.containers.find((c) => c.name === "agent")?.image;
    assert.equal(image(), "mirror/op:1");
    w.mc.apply(proxyClass({ images: { agent: "mirror/op:2" } }) as never);
    await w.settle();
    assert.equal(image(), "mirror/op:2");
    const before = JSON.stringify(deployment(w)?.spec);
    w.mc.delete(API, "TailnetProxyClass", "edge");
    await w.settle();
    assert.equal(w.cond("Ready")?.reason, "ProxyClassMissing");
    assert.equal(JSON.stringify(deployment(w)?.spec), before);
  });
});
