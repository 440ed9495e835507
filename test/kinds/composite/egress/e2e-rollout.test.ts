/**
 * TailnetEgress replicas take a new pod template one at a time (src/kinds/shared/staged-rollout.ts, the gateway's
 * rule), end to end through the Metacontroller emulator with its StatefulSets held unready until the test lets a
 * new pod get ready (loop.holdRollout): a TailnetProxyClass edit rolls replica 0 first, a scale-up in the middle
 * is not held back, each new pod is the replica's node again, and one replica rolls at once.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { settled } from "../../../../src/kinds/shared/staged-rollout.js";
import { API, type World, world } from "./world.js";

const NS = "shop";
const proxyClass = (tailscale: string): K8sObject => ({
  apiVersion: API,
  kind: "TailnetProxyClass",
  metadata: { name: "edge" },
  spec: { images: { tailscale } },
});
const sts = (w: World, i: number) => w.mc.get("apps/v1", "StatefulSet", `db-agent-${i}`, NS);
type Pod = { spec: { containers: { name: string; image: string }[] } };
const imageOf = (o: K8sObject | undefined) =>
  (o?.spec as { template?: Pod } | undefined)?.template?.spec.containers.find((c) => c.name === "tailscale")?.image;
const images = (w: World, n: number) => Array.from({ length: n }, (_, i) => imageOf(sts(w, i)));

async function settle(w: World): Promise<void> {
  await w.settle();
  assert.deepEqual(w.mc.errors, []);
}

function scaleTo(w: World, replicas: number): void {
  const e = w.egress();
  w.mc.apply({ ...e, spec: { ...(e.spec as Record<string, unknown>), replicas } });
}

describe("TailnetEgress: a new pod template rolls one replica at a time", () => {
  it("a class edit rolls 0, then 1; a scale-up meanwhile is not held; each replica stays its node", async (t) => {
    const w = await world(t, {
      spec: { replicas: 2, proxyClassName: "edge" },
      before: [proxyClass("tailscale/tailscale:v1.102.5")],
    });
    await settle(w);
    const nodes = [w.bindReplica(0), w.bindReplica(1)];
    await settle(w);
    assert.deepEqual(images(w, 2), ["tailscale/tailscale:v1.102.5", "tailscale/tailscale:v1.102.5"]);

    for (const i of [0, 1, 2]) w.mc.holdRollout(`db-agent-${i}`, NS);
    w.mc.apply(proxyClass("tailscale/tailscale:v1.102.6") as never);
    await settle(w);
    assert.deepEqual(images(w, 2), ["tailscale/tailscale:v1.102.6", "tailscale/tailscale:v1.102.5"]);
    assert.equal(settled(sts(w, 0) as K8sObject), false);

    // a scale-up while replica 0 rolls: replica 2 is created at once, with the new template
    scaleTo(w, 3);
    await settle(w);
    assert.deepEqual(images(w, 3), [
      "tailscale/tailscale:v1.102.6",
      "tailscale/tailscale:v1.102.5",
      "tailscale/tailscale:v1.102.6",
    ]);
    assert.equal(w.bindReplica(0).id, nodes[0].id, "replica 0's new pod is its node");
    w.mc.releaseRollout("db-agent-0", NS);
    await settle(w);
    assert.deepEqual(
      images(w, 3)[1],
      "tailscale/tailscale:v1.102.5",
      "replica 1 waits for replica 2, created and not ready yet",
    );
    w.bindReplica(2);
    w.mc.releaseRollout("db-agent-2", NS);
    await settle(w);
    assert.equal(images(w, 3)[1], "tailscale/tailscale:v1.102.6", "then replica 1 rolls");
    assert.equal(w.bindReplica(1).id, nodes[1].id, "replica 1's new pod is its node");
    w.mc.releaseRollout("db-agent-1", NS);
    await settle(w);
    assert.ok([0, 1, 2].every((i) => settled(sts(w, i) as K8sObject)));
    assert.equal(w.cond("NodeIdentity")?.reason, "Stable", w.cond("NodeIdentity")?.message);
  });

  it("one replica rolls at once, even while its previous pod is not ready", async (t) => {
    const w = await world(t, {
      spec: { proxyClassName: "edge" },
      before: [proxyClass("tailscale/tailscale:v1.102.5")],
    });
    await settle(w);
    w.bindReplica(0);
    w.mc.holdRollout("db-agent-0", NS);
    w.mc.apply(proxyClass("tailscale/tailscale:v1.102.6") as never);
    await settle(w);
    assert.equal(imageOf(sts(w, 0)), "tailscale/tailscale:v1.102.6");
    assert.equal(settled(sts(w, 0) as K8sObject), false);
    w.mc.apply(proxyClass("tailscale/tailscale:v1.102.7") as never);
    await settle(w);
    assert.equal(imageOf(sts(w, 0)), "tailscale/tailscale:v1.102.7", "nothing else to wait for");
  });
});
