/**
 * A replicated TailnetGateway end to end (spec.replicas 2; then a node offline; then its pod replaced): through the Metacontroller emulator, the real hook server and the fake Headscale. One
 * reusable tagged key, every pod its own node, each node's route approved with its own approve_routes, a
 * PodDisruptionBudget, status.nodes, Ready "N of M nodes"; stale cleanup keeps the newest two.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isRecord } from "../../../../src/k8s/objects.js";
import { registerPod } from "../../../fakes/containerboot.js";
import {
  applyGateway,
  child,
  cond,
  keySecrets,
  ROUTE,
  readyGateway,
  replicas,
  statusOf,
  syncAgain,
  T0,
  TAG,
  world,
  writesTo,
} from "./world.js";

type HaStatus = { nodes?: { id: string; name: string; preAuthKeyId: string; online: boolean }[] };

describe("TailnetGateway with spec.replicas 2, end to end", () => {
  it("two nodes on one reusable key, both approved, a PDB, status.nodes, Ready with one node offline", async (t) => {
    const w = await world(t);
    applyGateway(w.mc, { replicas: 2 });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    const creates = writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/);
    assert.equal(creates.length, 1);
    assert.deepEqual(creates[0].body, {
      reusable: true,
      ephemeral: false,
      expiration: "2026-11-29T11:00:00Z",
      aclTags: [TAG],
    });
    assert.equal(replicas(w.mc), 2);
    const pdb = child(w.mc, "PodDisruptionBudget", "gw-gateway");
    const pdbSpec = pdb?.spec;
    assert.equal(isRecord(pdbSpec) ? pdbSpec.maxUnavailable : undefined, 1);

    const objects = () => [...w.mc.list("Secret"), ...w.mc.list("ConfigMap")];
    const deployment = () => {
      const d = child(w.mc, "Deployment", "gw-gateway");
      if (!d) throw new Error("no Deployment");
      return d;
    };
    const a = registerPod(w.fake, deployment(), objects()).node;
    w.clock.now = new Date(T0.getTime() + 60_000);
    const b = registerPod(w.fake, deployment(), objects()).node;
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);

    // one approve_routes per node, each with the route
    const approvals = writesTo(w.fake, "POST", /^\/api\/v1\/node\/\d+\/approve_routes$/);
    assert.deepEqual(approvals.map((r) => r.path).sort(), [
      `/api/v1/node/${a.id}/approve_routes`,
      `/api/v1/node/${b.id}/approve_routes`,
    ]);
    for (const n of [a, b]) assert.deepEqual(w.fake.state.nodes.get(n.id)?.approvedRoutes, [ROUTE]);
    assert.equal(writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/).length, 1, "the second pod reused the key");

    const status = statusOf(w.mc) as HaStatus;
    assert.deepEqual(
      status.nodes?.map((n) => [n.id, n.online]),
      [
        [a.id, true],
        [b.id, true],
      ],
    );
    assert.equal(cond(w.mc, "RoutesInSync")?.status, "True");
    const ready = cond(w.mc, "Ready");
    assert.equal(ready?.status, "True");
    assert.match(ready?.message ?? "", /^2 of 2 nodes registered \(2 online: /);

    // one node offline: Ready stays True (Headscale fails over to the other), status says which
    const nodeA = w.fake.state.nodes.get(a.id);
    if (!nodeA) throw new Error("node a gone");
    nodeA.online = false;
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Ready")?.status, "True");
    assert.match(cond(w.mc, "Ready")?.message ?? "", /^2 of 2 nodes registered \(1 online: /);
    assert.deepEqual(
      (statusOf(w.mc) as HaStatus).nodes?.map((n) => [n.id, n.online]),
      [
        [a.id, false],
        [b.id, true],
      ],
    );
    assert.equal(cond(w.mc, "StaleNodes")?.reason, "None");

    // the offline pod is replaced: its successor registers with the same reusable key, and the old node,
    // no longer among the newest two and offline, is deleted
    w.clock.now = new Date(T0.getTime() + 120_000);
    const c = registerPod(w.fake, deployment(), objects()).node;
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.equal(w.fake.state.nodes.has(a.id), false, "the offline superseded node is deleted");
    assert.equal(cond(w.mc, "StaleNodes")?.reason, "None");
    assert.deepEqual(
      (statusOf(w.mc) as HaStatus).nodes?.map((n) => n.id),
      [b.id, c.id],
    );
    assert.deepEqual(w.fake.state.nodes.get(c.id)?.approvedRoutes, [ROUTE]);
    assert.equal(keySecrets(w.mc).length, 1);
    assert.equal(cond(w.mc, "Ready")?.status, "True");
  });
});

describe("TailnetGateway scaled from 1 to 2 replicas, end to end", () => {
  it("the single-use key is replaced by a reusable one, the old node stays ours until it is offline and deleted", async (t) => {
    const w = await readyGateway(t);
    assert.equal(cond(w.mc, "Ready")?.status, "True");
    const old = w.node;
    w.clock.now = new Date(T0.getTime() + 60_000);
    applyGateway(w.mc, { replicas: 2 });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    const creates = writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/);
    assert.equal(creates.length, 2);
    assert.equal((creates[1].body as { reusable?: boolean }).reusable, true);
    assert.equal(replicas(w.mc), 2);
    assert.ok(child(w.mc, "PodDisruptionBudget", "gw-gateway"));
    // the old node (single-use key 1) is still ours: 1 of 2 registered, Ready
    assert.match(cond(w.mc, "Registered")?.message ?? "", /^1 of 2 nodes registered/);
    assert.equal(cond(w.mc, "Ready")?.status, "True");

    // the rollout: two new pods register with the reusable key while the old pod still runs
    const objects = () => [...w.mc.list("Secret"), ...w.mc.list("ConfigMap")];
    const deployment = () => {
      const d = child(w.mc, "Deployment", "gw-gateway");
      if (!d) throw new Error("no Deployment");
      return d;
    };
    w.clock.now = new Date(T0.getTime() + 120_000);
    const a = registerPod(w.fake, deployment(), objects()).node;
    w.clock.now = new Date(T0.getTime() + 180_000);
    const b = registerPod(w.fake, deployment(), objects()).node;
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.ok(w.fake.state.nodes.has(old.id), "an online surplus node is not deleted");
    assert.deepEqual(
      (statusOf(w.mc) as HaStatus).nodes?.map((n) => n.id),
      [old.id, a.id, b.id],
    );
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");

    // the old pod stops: its node goes offline and is deleted; status lists the two current nodes
    const oldNode = w.fake.state.nodes.get(old.id);
    if (!oldNode) throw new Error("old node gone");
    oldNode.online = false;
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.equal(w.fake.state.nodes.has(old.id), false);
    assert.deepEqual(
      (statusOf(w.mc) as HaStatus).nodes?.map((n) => n.id),
      [a.id, b.id],
    );
    for (const n of [a, b]) assert.deepEqual(w.fake.state.nodes.get(n.id)?.approvedRoutes, [ROUTE]);
    assert.match(cond(w.mc, "Ready")?.message ?? "", /^2 of 2 nodes registered \(2 online: /);
  });
});
