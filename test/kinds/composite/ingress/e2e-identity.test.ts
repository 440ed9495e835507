// One tailnet node per replica for life (issue 32), for TailnetIngress, end to end through the Metacontroller
// emulator and the fake Headscale: creation order, scale 3→1, a lost state (predecessor deleted), finalize. The
// pods the emulator runs boot on the fake containerboot (test/fakes/pod-lifecycle.ts), writing their state as
// tailscaled's kube store would.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { wipeStateSecret } from "../../../fakes/containerboot-kube.js";
import { loopStore } from "../../../fakes/pod-lifecycle.js";
import { machineKeyIn } from "../../shared/replica-boot.js";
import { TAG, tcpIngress } from "./fixtures.js";
import { type World, world } from "./world.js";

const NS = "monitoring";
const API = "tailnet.internal/v1alpha1";

async function settle(w: World) {
  await w.mc.settle();
  assert.deepEqual(w.mc.errors, []);
}
const names = (w: World, kind: string) =>
  w.mc
    .list(kind)
    .filter((o) => o.metadata.namespace === NS)
    .map((o) => o.metadata.name)
    .sort();
const ours = (w: World) => [...w.hs.state.nodes.values()].filter((n) => n.tags.includes(TAG));
const offline = (w: World, id: string) => {
  const n = w.hs.state.nodes.get(id);
  assert.ok(n, `node ${id}`);
  n.online = false;
  n.lastSeen = new Date(w.clock.now.getTime() - 10 * 60_000);
};
const scaleTo = (w: World, replicas: number) => {
  const live = w.ingress() as K8sObject;
  w.mc.apply({ ...live, spec: { ...(live.spec as Record<string, unknown>), replicas } });
};
const identity = (w: World) => w.condition("NodeIdentity");
const answers = (w: World) => JSON.stringify(w.mc.calls.map((c) => c.response));

describe("TailnetIngress: one node per replica (issue 32)", () => {
  it("creation order, then every replica bound; the state never leaves the hook", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana", { replicas: 2 }));
    await settle(w);
    const first = (w.mc.calls.find((c) => c.hook === "sync" && c.kind === "TailnetIngress")?.response ?? {}) as {
      children?: K8sObject[];
    };
    const kinds = (first.children ?? []).map((c) => `${c.kind}/${c.metadata.name}`);
    assert.ok(kinds.includes("Secret/grafana-agent-1-state"));
    assert.equal(
      kinds.some((k) => k.startsWith("StatefulSet/")),
      false,
      "no pod before its RBAC and state Secret",
    );
    assert.deepEqual(names(w, "StatefulSet"), ["grafana-agent-0", "grafana-agent-1"]);
    const a = w.register("grafana", NS, 0);
    const b = w.register("grafana", NS, 1);
    await settle(w);
    assert.deepEqual(
      [a.givenName, b.givenName],
      ["grafana-monitoring", "grafana-monitoring-r1"],
      "no Headscale collision suffix",
    );
    assert.equal(identity(w).reason, "Stable");
    assert.equal(identity(w).message, `every replica keeps its node (0=${a.id}, 1=${b.id})`);
    for (const i of [0, 1]) {
      const key = machineKeyIn(w.mc, NS, `grafana-agent-${i}-state`);
      assert.equal(answers(w).includes(Buffer.from(key).toString("base64")), false);
    }
  });

  it("scale 3→1 deletes the two removed replicas' nodes once offline, then their state Secrets and RBAC", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana", { replicas: 3 }));
    await settle(w);
    const n = [0, 1, 2].map((i) => w.register("grafana", NS, i));
    await settle(w);
    scaleTo(w, 1);
    await settle(w);
    assert.deepEqual(names(w, "StatefulSet"), ["grafana-agent-0"]);
    assert.equal(ours(w).length, 3, "online nodes are never deleted: their pods may still run");
    offline(w, n[1].id);
    offline(w, n[2].id);
    await settle(w);
    assert.deepEqual(
      ours(w).map((x) => x.id),
      [n[0].id],
    );
    assert.deepEqual(names(w, "Role"), ["grafana-agent-0"]);
    assert.deepEqual(names(w, "ServiceAccount"), ["grafana-agent-0"]);
    assert.deepEqual(names(w, "Secret"), ["grafana-agent-0-state", "grafana-authkey"]);
  });

  it("a replica that lost its state registers again: Reregistered, the offline predecessor is deleted, then Stable", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    const old = w.register("grafana", NS, 0);
    await settle(w);
    wipeStateSecret(loopStore(w.mc), "grafana-agent-0-state", NS);
    const fresh = w.register("grafana", NS, 0); // no state: a new machine key, a login, a new node
    await settle(w);
    assert.equal(identity(w).reason, "Reregistered");
    assert.equal(
      identity(w).message,
      `replica 0: registered node ${fresh.id} while its previous node ${old.id} still exists`,
    );
    offline(w, old.id);
    await settle(w);
    assert.equal(w.hs.state.nodes.has(old.id), false, "the predecessor is deleted once offline");
    assert.equal(identity(w).reason, "Stable");
    const status = w.ingress()?.status as { nodes?: { replica: number; id: string }[] };
    assert.deepEqual(
      status.nodes?.map((x) => [x.replica, x.id]),
      [[0, fresh.id]],
    );
  });

  it("a wiped state Secret: the new node takes the name back once the predecessor is gone (no -1)", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    const old = w.register("grafana", NS, 0);
    await settle(w);
    assert.equal(old.givenName, "grafana-monitoring");
    wipeStateSecret(loopStore(w.mc), "grafana-agent-0-state", NS);
    const fresh = w.register("grafana", NS, 0);
    assert.equal(fresh.givenName, "grafana-monitoring-1", "Headscale suffixes a taken name");
    await settle(w);
    assert.equal(w.hs.state.nodes.get(fresh.id)?.givenName, "grafana-monitoring-1", "no rename while it is held");
    offline(w, old.id);
    await settle(w);
    assert.equal(w.hs.state.nodes.has(old.id), false);
    assert.equal(w.hs.state.nodes.get(fresh.id)?.givenName, "grafana-monitoring", "the replica's name is back");
    assert.equal(identity(w).reason, "Stable");
    assert.deepEqual(
      ours(w).map((n) => [n.id, n.givenName]),
      [[fresh.id, "grafana-monitoring"]],
    );
  });

  it("finalize deletes every node of ours and expires its key; an admin's node with the tag stays", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana", { replicas: 2 }));
    await settle(w);
    w.register("grafana", NS, 0);
    w.register("grafana", NS, 1);
    await settle(w);
    const admin = w.hs.addNode({ name: "admin-box", tags: [TAG] });
    w.mc.delete(API, "TailnetIngress", "grafana", NS);
    await settle(w);
    assert.equal(w.ingress(), undefined, "released");
    assert.deepEqual(
      ours(w).map((x) => x.id),
      [admin.id],
    );
    const keys = [...w.hs.state.preAuthKeys.values()].filter((k) => k.aclTags.includes(TAG));
    assert.ok(keys.length > 0 && keys.every((k) => k.expiration.getTime() <= Date.now() + 1000));
  });
});
