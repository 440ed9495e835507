/**
 * TailnetGateway end to end: a replica that re-registered gets its MagicDNS name back (design §2.5). Headscale
 * names the newcomer `<host>-1` while its predecessor exists (juanfont/headscale hscontrol/state/node_store.go
 * resolveGivenName); once the predecessor is deleted the gateway renames the node (POST
 * /api/v1/node/{id}/rename/{name}, hscontrol/state/state.go RenameNode), never over a name another node holds,
 * never while its node identity is not verified.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cond, readyGateway, registerReplica, statusOf, syncAgain, type World, wipeState, writesTo } from "./world.js";

const minutes = (n: number) => new Date(Date.parse("2026-11-29T10:00:00Z") + n * 60_000);
const renames = (w: World) => writesTo(w.fake, "POST", /^\/api\/v1\/node\/[^/]+\/rename\//).map((r) => r.path);

/** Replica 0 loses its state and logs in again: a new node `cluster-gw-1` next to its offline predecessor. */
async function reregistered(w: World) {
  wipeState(w, 0);
  const fresh = registerReplica(w, 0);
  assert.equal(fresh.givenName, "cluster-gw-1", "Headscale bumps the name while the predecessor holds it");
  await syncAgain(w.mc);
  await w.mc.settle();
  return fresh;
}

describe("TailnetGateway end to end: the replica's name after a re-registration", () => {
  it("the predecessor is deleted first, then the node is renamed back: no -1 left, status names it", async (t) => {
    const w = await readyGateway(t);
    const fresh = await reregistered(w);
    assert.deepEqual(renames(w), [], "not while the predecessor holds the name");
    assert.equal(statusOf(w.mc).node?.name, "cluster-gw-1");
    w.clock.now = minutes(2);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.ok(!w.fake.state.nodes.has(w.node.id), "the predecessor was deleted");
    assert.deepEqual(renames(w), [`/api/v1/node/${fresh.id}/rename/cluster-gw`]);
    assert.equal(w.fake.state.nodes.get(fresh.id)?.givenName, "cluster-gw");
    assert.equal(statusOf(w.mc).node?.name, "cluster-gw");
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => [n.replica, n.id, n.name]),
      [[0, fresh.id, "cluster-gw"]],
    );
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Stable");
    assert.equal(cond(w.mc, "NodeIdentity")?.message, `every replica keeps its node (0=${fresh.id})`);
    assert.equal(cond(w.mc, "Ready")?.reason, "FreshRuntimeReady");
    // settled: nothing more to rename, the status does not move
    const before = JSON.stringify(statusOf(w.mc));
    await syncAgain(w.mc);
    assert.equal(renames(w).length, 1);
    assert.equal(JSON.stringify(statusOf(w.mc)), before);
    assert.deepEqual(w.mc.errors, []);
  });

  it("the rename is reported in NodeIdentity on the sync that made it", async (t) => {
    const w = await readyGateway(t);
    const fresh = await reregistered(w);
    w.clock.now = minutes(2);
    await syncAgain(w.mc); // deletes the predecessor
    await syncAgain(w.mc); // renames
    const syncs = w.mc.calls.filter((c) => c.hook === "sync" && c.parent === "infra/gw");
    const messages = syncs.map(
      (c) =>
        (c.response as { status?: { conditions?: { type: string; message: string }[] } }).status?.conditions?.find(
          (x) => x.type === "NodeIdentity",
        )?.message,
    );
    assert.ok(
      messages.includes(
        `every replica keeps its node (0=${fresh.id}); renamed node ${fresh.id} from cluster-gw-1 to cluster-gw`,
      ),
      messages.join("\n"),
    );
  });

  it("a failed rename is named in NodeIdentity and retried on the next sync", async (t) => {
    const w = await readyGateway(t);
    const fresh = await reregistered(w);
    w.clock.now = minutes(2);
    await syncAgain(w.mc); // deletes the predecessor
    await w.fake.fault({ kind: "status", status: 500, path: /\/rename\//, times: 1 });
    await syncAgain(w.mc);
    assert.equal(
      cond(w.mc, "NodeIdentity")?.message,
      `every replica keeps its node (0=${fresh.id}); renaming node ${fresh.id} from cluster-gw-1 to cluster-gw failed: Headscale POST /api/v1/node/{nodeId}/rename/{newName}: 500 fault injected: 500 (retrying)`,
    );
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Stable");
    assert.equal(statusOf(w.mc).node?.name, "cluster-gw-1");
    await w.mc.settle();
    assert.equal(w.fake.state.nodes.get(fresh.id)?.givenName, "cluster-gw");
    assert.equal(statusOf(w.mc).node?.name, "cluster-gw");
  });

  it("a name held by a node this gateway did not register is never taken; NodeIdentity says who holds it", async (t) => {
    const w = await readyGateway(t);
    const fresh = await reregistered(w);
    w.clock.now = minutes(2);
    await syncAgain(w.mc); // deletes the predecessor: the name is free for a moment
    const squatter = w.fake.addNode({ name: "cluster-gw", tags: ["tag:other"] });
    assert.equal(squatter.givenName, "cluster-gw");
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(renames(w), []);
    assert.equal(w.fake.state.nodes.get(fresh.id)?.givenName, "cluster-gw-1");
    assert.equal(
      cond(w.mc, "NodeIdentity")?.message,
      `every replica keeps its node (0=${fresh.id}); replica 0: cluster-gw is held by node ${squatter.id}, which this object did not register`,
    );
    assert.ok(w.fake.state.nodes.has(squatter.id));
  });

  it("two replicas: replica 1 re-registers and gets cluster-gw-r1 back; replica 0 is not touched", async (t) => {
    const w = await readyGateway(t, { replicas: 2 });
    const old = [...w.fake.state.nodes.values()].find((n) => n.givenName === "cluster-gw-r1");
    assert.ok(old);
    wipeState(w, 1);
    const fresh = registerReplica(w, 1);
    assert.equal(fresh.givenName, "cluster-gw-r1-1");
    await syncAgain(w.mc);
    await w.mc.settle();
    w.clock.now = minutes(2);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.ok(!w.fake.state.nodes.has(old.id));
    assert.deepEqual(renames(w), [`/api/v1/node/${fresh.id}/rename/cluster-gw-r1`]);
    assert.deepEqual(
      statusOf(w.mc).nodes?.map((n) => [n.replica, n.id, n.name]),
      [
        [0, w.node.id, "cluster-gw"],
        [1, fresh.id, "cluster-gw-r1"],
      ],
    );
  });

  it("staleNodes Keep: the kept predecessor holds the name, so nothing is renamed", async (t) => {
    const w = await readyGateway(t, { staleNodes: "Keep" });
    await reregistered(w);
    w.clock.now = minutes(2);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.ok(w.fake.state.nodes.has(w.node.id));
    assert.deepEqual(renames(w), []);
  });

  it("an unverified node identity (node key changed) writes no rename", async (t) => {
    const w = await readyGateway(t);
    const node = w.fake.state.nodes.get(w.node.id);
    assert.ok(node);
    node.givenName = "cluster-gw-1";
    node.nodeKey = `nodekey:${"d".repeat(64)}`;
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "IdentityChanged");
    assert.deepEqual(renames(w), []);
  });
});
