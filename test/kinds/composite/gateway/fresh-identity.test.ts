/**
 * The fresh writer's second check as node identity continuity (issue 32, design §2.4): every node wearing the
 * gateway tag or registered with one of its keys is a replica's node with continuity (the device_id in that
 * replica's state Secret, the recorded id and node key), a predecessor awaiting deletion, or a replica registering
 * right now. The same refusals as the single-use-key provenance had: a rogue node, a stolen key, an identity
 * change, a stale template — now per replica. And what no longer happens: no re-bootstrap, no re-registration and
 * no route failover on a key rotation or a pod restart.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyGateway,
  child,
  cond,
  editState,
  gw,
  KEY_SECRET,
  keySecrets,
  ROUTE,
  readyGateway,
  registerReplica,
  replicaName,
  stateName,
  statusOf,
  syncAgain,
  T0,
  TAG,
  wipeState,
  writesTo,
  zoneText,
} from "./world.js";

const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const blocked = (w: { mc: Parameters<typeof cond>[0] }) => ({
  status: cond(w.mc, "Registered")?.status,
  reason: cond(w.mc, "Registered")?.reason,
});
const tail = ". The derived zone keeps its last state.";

/** A key that is not the gateway's, tagged with the gateway tag (an admin's key, or one minted by hand). */
function foreignKey(w: Awaited<ReturnType<typeof readyGateway>>) {
  const id = w.fake.state.nextKeyId();
  w.fake.state.preAuthKeys.set(id, {
    id,
    prefix: "other",
    key: "hskey-auth-other-x",
    userId: null,
    reusable: true,
    ephemeral: false,
    used: false,
    expiration: later(36_000),
    createdAt: T0,
    aclTags: [TAG],
  });
  return id;
}

/** The full bootstrap key as a holder of the stable Secret reads it. */
function stolenKey(w: Awaited<ReturnType<typeof readyGateway>>): string {
  const secret = child(w.mc, "Secret", KEY_SECRET);
  return Buffer.from((secret?.data as Record<string, string> | undefined)?.authkey ?? "", "base64").toString();
}

describe("TailnetGateway: node identity continuity (the fresh writer's second check)", () => {
  it("one replica: a StatefulSet, its own identity children, a stable reusable key; status.nodes[] names replica 0", async (t) => {
    const w = await readyGateway(t);
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    assert.equal(cond(w.mc, "Ready")?.status, "True");
    assert.deepEqual(
      ["StatefulSet", "ServiceAccount", "Role", "RoleBinding"].map((k) => child(w.mc, k, replicaName(0))?.kind),
      ["StatefulSet", "ServiceAccount", "Role", "RoleBinding"],
    );
    assert.equal(child(w.mc, "Deployment", "gw-gateway"), undefined);
    const [key] = keySecrets(w.mc);
    assert.equal(key.metadata.name, KEY_SECRET);
    const record = [...w.fake.state.preAuthKeys.values()].find(
      (k) => k.id === key.metadata.annotations?.["tailnet.internal/key-id"],
    );
    assert.deepEqual(
      { reusable: record?.reusable, ephemeral: record?.ephemeral, tags: record?.aclTags },
      {
        reusable: true,
        ephemeral: false,
        tags: [TAG],
      },
    );
    const s = statusOf(w.mc);
    assert.deepEqual(
      s.nodes?.map((n) => [n.replica, n.id, n.nodeKey]),
      [[0, w.node.id, w.node.nodeKey]],
    );
    assert.deepEqual(s.node, {
      id: w.node.id,
      name: "cluster-gw",
      nodeKey: w.node.nodeKey,
      preAuthKeyId: key.metadata.annotations?.["tailnet.internal/key-id"],
    });
    assert.equal(cond(w.mc, "NodeIdentity")?.message, `every replica keeps its node (0=${w.node.id})`);
  });

  it("a rogue node with the gateway tag and a key the gateway did not mint blocks the fresh writer", async (t) => {
    const w = await readyGateway(t);
    const zone = zoneText(w.mc);
    const keyId = foreignKey(w);
    const rogue = w.fake.registerWithKey(keyId, { name: "rogue", availableRoutes: [ROUTE] });
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "FreshBlocked" });
    const ours = statusOf(w.mc).node?.preAuthKeyId;
    assert.equal(
      cond(w.mc, "Registered")?.message,
      `fresh writer blocked by node identity: node ${rogue.id} "rogue" carries ${TAG} but was registered with pre-auth key ${keyId}, not with this gateway's bootstrap key ${ours}${tail}`,
    );
    assert.equal(zoneText(w.mc), zone);
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);
  });

  it("someone holding the reusable key registers a machine outside the cluster: online, bound to no replica → blocked", async (t) => {
    const w = await readyGateway(t);
    const outsider = w.fake.registerWithKey(stolenKey(w), { name: "laptop", availableRoutes: [ROUTE] });
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "FreshBlocked" });
    assert.equal(
      cond(w.mc, "Registered")?.message,
      `fresh writer blocked by node identity: node ${outsider.id} "laptop" is online and was registered with this gateway's bootstrap key ${outsider.preAuthKeyId}, but no replica's state Secret names it: a machine outside the cluster holds the key${tail}`,
    );
    assert.ok(!w.fake.state.nodes.get(outsider.id)?.approvedRoutes.includes(ROUTE), "no route on the outsider");
    // the record did not move: status.nodes[] still names only replica 0's node
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => n.id),
      [w.node.id],
    );
  });

  it("a replica registering (no device_id yet) is not blocked within the grace, and is once the grace is over", async (t) => {
    const w = await readyGateway(t, { replicas: 2 });
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    wipeState(w, 1);
    // replica 1 lost its state and logs in again, but crashes before storeDeviceID
    const fresh = registerReplica(w, 1, { deviceId: false });
    await syncAgain(w.mc);
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    w.clock.now = later(121);
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "FreshBlocked" });
    assert.equal(
      cond(w.mc, "Registered")?.message,
      `fresh writer blocked by node identity: node ${fresh.id} "${fresh.givenName}" is online and was registered with this gateway's bootstrap key ${fresh.preAuthKeyId}, but no replica's state Secret names it: a machine outside the cluster holds the key${tail}`,
    );
  });

  it("a bound node's key changes while its state persisted: IdentityChanged, until the key is accepted", async (t) => {
    const w = await readyGateway(t);
    const before = w.node.nodeKey;
    w.node.nodeKey = "nodekey:0000000000000000000000000000000000000000000000000000000000000bad";
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "IdentityChanged" });
    assert.equal(
      cond(w.mc, "Registered")?.message,
      `replica 0: node ${w.node.id} "cluster-gw" changed its node key from ${before} to ${w.node.nodeKey} while its state persisted; to keep this node with its new key, set the annotation tailnet.internal/accept-node-key: ${w.node.nodeKey}; to register a new node instead, delete Secret ${stateName(0)}`,
    );
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "IdentityChanged");
    assert.equal(statusOf(w.mc).nodes?.[0].nodeKey, before, "the record keeps the old key while refused");
    applyGateway(w.mc, {}, { annotations: { "tailnet.internal/accept-node-key": w.node.nodeKey } });
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    assert.equal(statusOf(w.mc).nodes?.[0].nodeKey, w.node.nodeKey);
  });

  it("a state Secret naming a node the gateway did not register (a tampered device_id) blocks: ForeignNode", async (t) => {
    const w = await readyGateway(t);
    const other = w.fake.registerWithKey(foreignKey(w), { name: "elsewhere" });
    other.tags = ["tag:other"];
    editState(w.mc, 0, { device_id: other.id, _machinekey: "MACHINE-KEY-MARKER" });
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "FreshBlocked" });
    assert.equal(
      cond(w.mc, "Registered")?.message,
      `fresh writer blocked by node identity: replica 0: its state Secret names node ${other.id}, which this gateway did not register${tail}`,
    );
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "ForeignNode");
  });

  it("a first binding to a node registered before the replica's state Secret existed is refused", async (t) => {
    const w = await readyGateway(t, { replicas: 2 });
    const early = w.fake.registerWithKey(stolenKey(w), { name: "early", online: false });
    // replica 1's earlier node went with its pod
    for (const n of w.fake.state.nodes.values()) if (n.givenName === "cluster-gw-r1") n.online = false;
    const secret = structuredClone(child(w.mc, "Secret", stateName(1)));
    if (!secret) throw new Error("no state Secret");
    // replica 1 is new (scale-up after the node was registered): no record yet, and its Secret is younger
    w.mc.delete("v1", "Secret", stateName(1), "infra");
    secret.metadata.creationTimestamp = later(60).toISOString();
    secret.data = { device_id: Buffer.from(early.id).toString("base64") };
    w.mc.apply(secret);
    const status = structuredClone(gw(w.mc)?.status as Record<string, unknown>);
    status.nodes = (status.nodes as { replica: number }[]).filter((n) => n.replica === 0);
    w.mc.apply({ ...(gw(w.mc) as object), status } as never);
    w.clock.now = later(60);
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "FreshBlocked" });
    assert.equal(
      cond(w.mc, "Registered")?.message,
      `fresh writer blocked by node identity: replica 1: its state Secret names node ${early.id} "early", registered before the state Secret was created${tail}`,
    );
  });

  it("a hand-edited template on replica 1's StatefulSet blocks the fresh writer, naming that StatefulSet", async (t) => {
    const w = await readyGateway(t, { replicas: 2 });
    const sts = structuredClone(child(w.mc, "StatefulSet", replicaName(1)));
    if (!sts) throw new Error("no StatefulSet");
    const tpl = (sts.spec as { template: { spec: { containers: { image: string }[] } } }).template;
    tpl.spec.containers[0].image = "evil/tailscale:latest";
    w.mc.apply(sts);
    await syncAgain(w.mc);
    assert.deepEqual(blocked(w), { status: "False", reason: "FreshBlocked" });
    assert.match(
      cond(w.mc, "Registered")?.message ?? "",
      /^fresh writer blocked by pod template: the live pod template of StatefulSet infra\/gw-gateway-1 was changed outside the operator \(rendered hash [0-9a-f]{16}, live template hashes to [0-9a-f]{16}\)\. The derived zone keeps its last state\.$/,
    );
  });

  it("three rotations and a pod restart: the same node, the route approved once, no template change, old keys expired after the Secret proves the new one", async (t) => {
    const w = await readyGateway(t, { bootstrapKeyTTL: "1h" });
    const template = JSON.stringify(
      (child(w.mc, "StatefulSet", replicaName(0))?.spec as { template?: unknown } | undefined)?.template,
    );
    const ids: string[] = [keySecrets(w.mc)[0].metadata.annotations?.["tailnet.internal/key-id"] ?? ""];
    for (let r = 1; r <= 3; r++) {
      w.clock.now = later(r * 1801);
      await syncAgain(w.mc);
      await w.mc.settle();
      const secrets = keySecrets(w.mc);
      assert.deepEqual(
        secrets.map((s) => s.metadata.name),
        [KEY_SECRET],
        "one stable Secret",
      );
      ids.push(secrets[0].metadata.annotations?.["tailnet.internal/key-id"] ?? "");
      // a container restart with state: the same node reconnects, no key is used
      const back = registerReplica(w, 0);
      assert.deepEqual([back.id, w.pods.get(0)?.usedAuthKey], [w.node.id, false]);
    }
    assert.equal(new Set(ids).size, 4, `four keys: ${ids}`);
    assert.equal(
      JSON.stringify(
        (child(w.mc, "StatefulSet", replicaName(0))?.spec as { template?: unknown } | undefined)?.template,
      ),
      template,
    );
    assert.deepEqual(
      [...w.fake.state.nodes.values()].map((n) => n.id),
      [w.node.id],
    );
    assert.equal(writesTo(w.fake, "POST", /approve_routes$/).length, 1, "the route approved once, never again");
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    const expired = ids.slice(0, 3).map((id) => w.fake.state.preAuthKeys.get(id)?.expiration.getTime() ?? 0);
    assert.ok(
      expired.every((e) => e <= w.clock.now.getTime()),
      "the superseded keys are expired",
    );
    assert.ok((w.fake.state.preAuthKeys.get(ids[3])?.expiration.getTime() ?? 0) > w.clock.now.getTime());
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => [n.id, n.preAuthKeyId]),
      [[w.node.id, ids[0]]],
    );
    assert.ok(statusOf(w.mc).preAuthKeyIds?.includes(ids[0]), "the key the node registered with stays recorded");
  });
});
