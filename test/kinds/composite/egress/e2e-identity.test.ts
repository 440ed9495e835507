// One tailnet node per replica for life (issue 32), end to end through the Metacontroller emulator and the fake
// Headscale: creation order, a rotation that touches no StatefulSet, scale 3→1, finalize, the upgrade from the
// legacy Deployment, and no hook answer ever carrying a state Secret's data. The emulator runs the StatefulSets'
// Pods and the fake containerboot boots them (RBAC checked, state written as tailscaled's kube store would:
// test/fakes/pod-lifecycle.ts); Ready is the data-path tests' (e2e.test.ts), not asserted here.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { API, machineKey, T0, TAG, type World, world } from "./world.js";

const names = (w: World, kind: string) =>
  w.mc
    .childrenOf(w.egress())
    .filter((c) => c.kind === kind)
    .map((c) => c.metadata.name)
    .sort();
const ourNodes = (w: World) => [...w.fake.state.nodes.values()].filter((n) => n.tags.includes(TAG));
const stsOf = (w: World, i: number) => w.mc.get("apps/v1", "StatefulSet", `db-agent-${i}`, "shop");
const strip = (o: K8sObject | undefined) => o && JSON.stringify({ ...o, status: undefined });
const cond = (w: World) => w.cond("NodeIdentity");

/** Every hook answer so far, as text: a planted machine key must be in none of them. */
const answers = (w: World) => JSON.stringify(w.mc.calls.map((c) => c.response));

function offline(w: World, id: string, minutes = 10): void {
  const node = w.fake.state.nodes.get(id);
  assert.ok(node, `node ${id}`);
  node.online = false;
  node.lastSeen = new Date(w.clock.now.getTime() - minutes * 60_000);
}

function scaleTo(w: World, replicas: number): void {
  const e = w.egress();
  w.mc.apply({ ...e, spec: { ...(e.spec as Record<string, unknown>), replicas } });
}

describe("TailnetEgress: one node per replica (issue 32)", () => {
  it("creation order: SA, Role, RoleBinding and state Secret are answered before the StatefulSet", async (t) => {
    const w = await world(t, { spec: { replicas: 2 } });
    await w.settle();
    const syncs = w.mc.calls.filter((c) => c.hook === "sync" && c.kind === "TailnetEgress");
    const kinds = (i: number) =>
      (((syncs[i]?.response ?? {}) as { children?: K8sObject[] }).children ?? []).map(
        (c) => `${c.kind}/${c.metadata.name}`,
      );
    const first = kinds(0);
    for (const r of ["db-agent-0", "db-agent-1"]) {
      for (const k of ["ServiceAccount", "Role", "RoleBinding"]) assert.ok(first.includes(`${k}/${r}`), `${k}/${r}`);
      assert.ok(first.includes(`Secret/${r}-state`));
      assert.equal(first.includes(`StatefulSet/${r}`), false, "no pod before its RBAC and state Secret exist");
    }
    assert.deepEqual(names(w, "StatefulSet"), ["db-agent-0", "db-agent-1"]);
    assert.ok(names(w, "Secret").includes("db-authkey"), "the stable key Secret");
    assert.deepEqual(names(w, "Deployment"), []);
    const role = w.mc.get("rbac.authorization.k8s.io/v1", "Role", "db-agent-1", "shop");
    assert.deepEqual(role?.rules, [
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: ["db-agent-1-state"],
        verbs: ["get", "update", "patch"],
      },
    ]);
  });

  it("replicas bind through device_id; status.nodes names them; the state data survives syncs and never leaves", async (t) => {
    const w = await world(t, { spec: { replicas: 2 } });
    await w.settle();
    const a = w.bindReplica(0);
    const b = w.bindReplica(1);
    const written = [machineKey(w, 0), machineKey(w, 1)];
    await w.settle();
    const nodes = (w.egress().status as { nodes?: { replica: number; id: string }[] }).nodes;
    assert.deepEqual(
      nodes?.map((n) => [n.replica, n.id]),
      [
        [0, a.id],
        [1, b.id],
      ],
    );
    assert.equal(cond(w)?.reason, "Stable");
    // Metacontroller's merge never touches what the pod wrote (the desired Secret has no data)
    assert.deepEqual([machineKey(w, 0), machineKey(w, 1)], written);
    const text = answers(w);
    for (const key of written) {
      assert.equal(text.includes(key), false);
      assert.equal(text.includes(Buffer.from(key).toString("base64")), false);
    }
  });

  it("a rotation rewrites db-authkey in place: no StatefulSet changes; the old key expires only after proof", async (t) => {
    const w = await world(t);
    await w.settle();
    w.bindReplica(0);
    await w.settle();
    const before = strip(stsOf(w, 0));
    const oldId = w.keySecret()?.metadata.annotations?.["tailnet.internal/key-id"];
    assert.ok(oldId);
    w.clock.now = new Date(T0.getTime() + 13 * 3600_000);
    await w.settle();
    const secret = w.keySecret();
    assert.equal(secret?.metadata.name, "db-authkey");
    const newId = secret?.metadata.annotations?.["tailnet.internal/key-id"];
    assert.notEqual(newId, oldId, "rotated at half-life");
    assert.equal(strip(stsOf(w, 0)), before, "the pod template names the Secret, never the key");
    await w.settle();
    const old = w.fake.state.preAuthKeys.get(oldId);
    assert.ok(old && old.expiration.getTime() <= w.clock.now.getTime(), "the superseded key is expired");
    assert.equal(ourNodes(w).length, 1, "expiring the key keeps the node");
  });

  it("scale 3→1 deletes the two removed replicas' nodes, then their state Secrets and RBAC", async (t) => {
    const w = await world(t, { spec: { replicas: 3 } });
    await w.settle();
    const n = [w.bindReplica(0), w.bindReplica(1), w.bindReplica(2)];
    await w.settle();
    assert.equal(ourNodes(w).length, 3);
    scaleTo(w, 1);
    offline(w, n[1].id);
    offline(w, n[2].id);
    await w.settle();
    assert.deepEqual(
      ourNodes(w).map((x) => x.id),
      [n[0].id],
    );
    assert.deepEqual(names(w, "StatefulSet"), ["db-agent-0"]);
    assert.deepEqual(names(w, "Role"), ["db-agent-0"]);
    assert.deepEqual(names(w, "RoleBinding"), ["db-agent-0"]);
    assert.deepEqual(names(w, "ServiceAccount"), ["db-agent-0"]);
    assert.deepEqual(names(w, "Secret"), ["db-agent-0-state", "db-authkey"]);
  });

  it("a removed replica whose node is still online keeps its state until it goes offline", async (t) => {
    const w = await world(t, { spec: { replicas: 2 } });
    await w.settle();
    w.bindReplica(0);
    const b = w.bindReplica(1);
    await w.settle();
    scaleTo(w, 1);
    await w.settle();
    assert.ok(names(w, "Secret").includes("db-agent-1-state"), "online: never deleted, state kept");
    assert.equal(names(w, "StatefulSet").includes("db-agent-1"), false);
    offline(w, b.id);
    await w.settle();
    assert.equal(names(w, "Secret").includes("db-agent-1-state"), false);
    assert.equal(w.fake.state.nodes.has(b.id), false);
  });

  it("finalize deletes every node of ours and expires the keys, then releases", async (t) => {
    const w = await world(t, { spec: { replicas: 2 } });
    await w.settle();
    w.bindReplica(0);
    w.bindReplica(1);
    await w.settle();
    const keys = [machineKey(w, 0), machineKey(w, 1)];
    const admin = w.fake.addNode({ name: "admin-box", tags: [TAG] });
    w.mc.delete(API, "TailnetEgress", "db", "shop");
    await w.settle();
    assert.equal(w.mc.get(API, "TailnetEgress", "db", "shop"), undefined, "released");
    assert.deepEqual(
      ourNodes(w).map((x) => x.id),
      [admin.id],
      "only what it registered",
    );
    for (const k of w.fake.state.preAuthKeys.values())
      if (k.aclTags.includes(TAG)) assert.ok(k.expiration.getTime() <= w.clock.now.getTime(), `key ${k.id}`);
    for (const key of keys) assert.equal(answers(w).includes(Buffer.from(key).toString("base64")), false);
  });

  it("upgrade: the legacy Deployment and key stay until replica 0 is bound, then go; the legacy node is deleted once offline", async (t) => {
    const w = await world(t, { applyEgress: false });
    const parent = w.mc.apply({
      apiVersion: API,
      kind: "TailnetEgress",
      metadata: { name: "db", namespace: "shop" },
      spec: w.spec,
    });
    const uid = parent.metadata.uid ?? "";
    const owner = { apiVersion: API, kind: "TailnetEgress", name: "db", uid, controller: true };
    // the previous version's children: a Deployment and a key Secret `<parent>-authkey-<id>`, an ephemeral node
    const id = w.fake.state.nextKeyId();
    const full = `hskey-auth-legacy${id}-${"b".repeat(64)}`;
    w.fake.state.preAuthKeys.set(id, {
      id,
      prefix: `legacy${id}`,
      key: full,
      userId: null,
      reusable: true,
      ephemeral: true,
      used: true,
      expiration: new Date(T0.getTime() + 20 * 3600_000),
      createdAt: new Date(T0.getTime() - 3600_000),
      aclTags: [TAG],
    });
    const legacyNode = w.fake.addNode({ name: "shop-db", tags: [TAG] });
    legacyNode.preAuthKeyId = id;
    legacyNode.createdAt = new Date(T0.getTime() - 3600_000);
    const labels = { "tailnet.internal/owner-uid": parent.metadata.uid ?? "", "tailnet.internal/authkey": "true" };
    w.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: `db-authkey-${id}`,
        namespace: "shop",
        labels,
        ownerReferences: [owner],
        annotations: {
          "tailnet.internal/key-id": id,
          "tailnet.internal/created-at": new Date(T0.getTime() - 3600_000).toISOString(),
          "tailnet.internal/expires-at": new Date(T0.getTime() + 20 * 3600_000).toISOString(),
        },
      },
      type: "Opaque",
      data: { authkey: Buffer.from(full).toString("base64") },
    });
    w.mc.apply({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "db-agent", namespace: "shop", ownerReferences: [owner], labels: {} },
      spec: {
        replicas: 1,
        selector: { matchLabels: { a: "b" } },
        template: {
          metadata: { labels: { a: "b" } },
          spec: { containers: [{ name: "tailscale", image: "tailscale/tailscale:v1.90.6" }] },
        },
      },
    });
    await w.settle();
    assert.deepEqual(names(w, "Deployment"), ["db-agent"], "nothing rolls before the new replica serves");
    assert.equal(cond(w)?.reason, "Migrating");
    assert.ok(names(w, "Secret").includes(`db-authkey-${id}`));
    const fresh = w.bindReplica(0);
    assert.match(fresh.givenName, /^shop-db-1$/, "the legacy node still holds the name");
    await w.settle();
    assert.deepEqual(names(w, "Deployment"), [], "the legacy Deployment goes once replica 0 is bound");
    assert.equal(names(w, "Secret").includes(`db-authkey-${id}`), false);
    const legacyKey = w.fake.state.preAuthKeys.get(id);
    assert.ok(legacyKey && legacyKey.expiration.getTime() <= w.clock.now.getTime(), "the legacy key is expired");
    // the legacy pod is gone: its node goes offline and, past the grace, is deleted (it is ours: our legacy key)
    offline(w, legacyNode.id);
    await w.settle();
    assert.equal(w.fake.state.nodes.has(legacyNode.id), false);
    assert.deepEqual(
      ourNodes(w).map((x) => x.id),
      [fresh.id],
    );
  });
});
