/**
 * A replicated TailnetGateway end to end (spec.replicas 2; a node offline; its pod replaced; scaled 1 → 2 → 1):
 * through the Metacontroller emulator, the real hook server and the fake Headscale. One reusable tagged key, each
 * replica its own StatefulSet, ServiceAccount, Role, RoleBinding and state Secret, so its own node for life; each
 * node's route approved with its own approve_routes (once: no failover on a restart), a PodDisruptionBudget over
 * every replica, status.nodes[] by replica, Ready "N of M replicas bound".
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isRecord } from "../../../../src/k8s/objects.js";
import {
  applyGateway,
  child,
  cond,
  keySecrets,
  ROUTE,
  readyGateway,
  registerReplica,
  replicaName,
  replicas,
  stateName,
  statusOf,
  syncAgain,
  T0,
  TAG,
  world,
  writesTo,
} from "./world.js";

const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

describe("TailnetGateway with spec.replicas 2, end to end", () => {
  it("two replicas on one reusable key, both approved once, a PDB, status.nodes, Ready with one node offline", async (t) => {
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
    assert.deepEqual([replicas(w.mc, 0), replicas(w.mc, 1)], [1, 1]);
    for (const i of [0, 1]) {
      for (const kind of ["ServiceAccount", "Role", "RoleBinding"]) assert.ok(child(w.mc, kind, replicaName(i)), kind);
      assert.ok(child(w.mc, "Secret", stateName(i)));
    }
    const pdb = child(w.mc, "PodDisruptionBudget", "gw-gateway");
    const pdbSpec = pdb?.spec;
    assert.equal(isRecord(pdbSpec) ? pdbSpec.maxUnavailable : undefined, 1);

    const a = registerReplica(w, 0);
    w.clock.now = later(60);
    const b = registerReplica(w, 1);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.equal(b.givenName, "cluster-gw-r1", "replica 1's own name, never a -1 bump");

    const approvals = writesTo(w.fake, "POST", /^\/api\/v1\/node\/\d+\/approve_routes$/);
    assert.deepEqual(approvals.map((r) => r.path).sort(), [
      `/api/v1/node/${a.id}/approve_routes`,
      `/api/v1/node/${b.id}/approve_routes`,
    ]);
    for (const n of [a, b]) assert.deepEqual(w.fake.state.nodes.get(n.id)?.approvedRoutes, [ROUTE]);
    assert.equal(writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/).length, 1, "the second replica reused the key");
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => [n.replica, n.id, n.online]),
      [
        [0, a.id, true],
        [1, b.id, true],
      ],
    );
    assert.match(cond(w.mc, "Ready")?.message ?? "", /^2 of 2 replicas bound to their nodes \(2 online: /);

    // replica 0's pod is gone for a while: Ready stays True (Headscale fails over to replica 1's node)
    w.fake.disconnect(a.id);
    w.clock.now = later(300);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Ready")?.status, "True");
    assert.match(cond(w.mc, "Ready")?.message ?? "", /^2 of 2 replicas bound to their nodes \(1 online: /);
    assert.equal(cond(w.mc, "StaleNodes")?.reason, "None", "a replica's own node is never stale");
    // its new pod finds the state: the same node comes back, nothing is deleted or approved again
    assert.ok(w.mc.deletePod("gw-gateway-0-0", "infra"));
    assert.equal(registerReplica(w, 0).id, a.id);
    assert.equal(w.pods.get(0)?.usedAuthKey, false);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);
    assert.equal(writesTo(w.fake, "POST", /approve_routes$/).length, 2);
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => n.id),
      [a.id, b.id],
    );
    assert.equal(keySecrets(w.mc).length, 1);
  });
});

describe("TailnetGateway scaled from 1 to 2 replicas and back, end to end", () => {
  it("scale-up adds replica 1 with its own node, no new key, replica 0 untouched; scale-down deletes replica 1's node, then its children", async (t) => {
    const w = await readyGateway(t);
    const sts0 = JSON.stringify(child(w.mc, "StatefulSet", replicaName(0))?.spec);
    applyGateway(w.mc, { replicas: 2 });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.equal(writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/).length, 1, "the key is reusable already");
    assert.ok(child(w.mc, "PodDisruptionBudget", "gw-gateway"));
    assert.equal(JSON.stringify(child(w.mc, "StatefulSet", replicaName(0))?.spec), sts0, "replica 0 does not roll");
    assert.match(cond(w.mc, "Registered")?.message ?? "", /^1 of 2 replicas bound/);
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Registering");
    const b = registerReplica(w, 1);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Stable");
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => n.id),
      [w.node.id, b.id],
    );

    // scale-down: replica 1's StatefulSet goes; its node once offline for 60 s; then its identity children
    applyGateway(w.mc, { replicas: 1 });
    await w.mc.settle();
    assert.equal(child(w.mc, "StatefulSet", replicaName(1)), undefined);
    assert.ok(child(w.mc, "Secret", stateName(1)), "kept until its node is deleted");
    // its pod went with the StatefulSet (the emulator's garbage collection): the node is offline
    assert.equal(child(w.mc, "Pod", "gw-gateway-1-0"), undefined);
    w.fake.disconnect(b.id);
    w.clock.now = later(120);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(
      writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//).map((r) => r.path),
      [`/api/v1/node/${b.id}`],
    );
    for (const kind of ["ServiceAccount", "Role", "RoleBinding"])
      assert.equal(child(w.mc, kind, replicaName(1)), undefined);
    assert.equal(child(w.mc, "Secret", stateName(1)), undefined);
    assert.equal(child(w.mc, "PodDisruptionBudget", "gw-gateway"), undefined);
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => n.id),
      [w.node.id],
    );
    assert.ok(w.fake.state.nodes.has(w.node.id));
    assert.equal(cond(w.mc, "Ready")?.status, "True");
    assert.deepEqual(w.mc.errors, []);
  });
});
