/**
 * TailnetGateway finalize end to end (issue 32): every node of ours goes — each replica's, a predecessor — and every
 * key the gateway minted that is still valid is expired; a node that is not ours is never touched. While the
 * cleanup waits (Headscale refuses), the StatefulSets are left out (no pod re-registers a node being deleted) and
 * each state Secret is kept as metadata only.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API, child, gw, readyGateway, registerReplica, stateName, T0, TAG, wipeState, writesTo } from "./world.js";

describe("TailnetGateway finalize", () => {
  it("finalize: deletes our nodes and expires the bootstrap key, never touches a node that is not ours", async (t) => {
    const w = await readyGateway(t);
    const foreign = w.fake.addNode({ name: "laptop", tags: [TAG] });
    w.mc.delete(API, "TailnetGateway", "gw", "infra");
    await w.mc.settle();
    assert.equal(gw(w.mc), undefined);
    assert.deepEqual(
      writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//).map((r) => r.path),
      [`/api/v1/node/${w.node.id}`],
    );
    assert.deepEqual(
      writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey\/expire$/).map((r) => r.body),
      [{ id: "1" }],
    );
    assert.ok(w.fake.state.nodes.has(foreign.id));
    assert.equal((w.fake.state.preAuthKeys.get("1")?.expiration.getTime() ?? 0) <= T0.getTime(), true);
    const expiry = await w.metrics.authKeyExpiry.get();
    assert.deepEqual(
      expiry.values.filter((v) => v.labels.kind === "TailnetGateway"),
      [],
    );
    assert.deepEqual(w.mc.errors, []);
  });

  it("a failed cleanup keeps the state Secrets without data, leaves out the StatefulSets, and retries; then every node goes", async (t) => {
    const w = await readyGateway(t, { replicas: 2 });
    // replica 1 re-registered earlier: its predecessor is still listed
    wipeState(w, 1);
    const before = [...w.fake.state.nodes.values()].find((n) => n.givenName === "cluster-gw-r1");
    if (!before) throw new Error("no replica 1 node");
    const fresh = registerReplica(w, 1);
    await w.mc.settle();
    await w.fake.fault({ kind: "status", status: 500, method: "DELETE", path: /^\/api\/v1\/node\// });
    w.mc.delete(API, "TailnetGateway", "gw", "infra");
    await w.mc.settle();
    assert.ok(gw(w.mc), "held while Headscale refuses");
    const finalize = [...w.mc.calls].reverse().find((c) => c.hook === "finalize" && c.parent === "infra/gw");
    const answer = finalize?.response as {
      children?: { kind: string; metadata: { name: string }; data?: unknown }[];
    };
    const children = answer?.children ?? [];
    assert.deepEqual(
      children.filter((c) => c.kind === "StatefulSet"),
      [],
    );
    const states = children.filter((c) => c.metadata.name.endsWith("-state"));
    assert.deepEqual(
      states.map((c) => [c.metadata.name, c.data]),
      [
        [stateName(0), undefined],
        [stateName(1), undefined],
      ],
    );
    assert.ok(child(w.mc, "Secret", stateName(0))?.data, "tailscaled's data stays in the cluster meanwhile");
    await w.fake.clearFaults();
    w.clock.now = new Date(T0.getTime() + 60_000);
    await w.mc.settle();
    assert.equal(gw(w.mc), undefined);
    const deleted = writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//)
      .filter((r) => r.status === 200 || r.status === undefined)
      .map((r) => r.path);
    for (const id of [w.node.id, before.id, fresh.id]) assert.ok(deleted.includes(`/api/v1/node/${id}`), id);
    assert.equal([...w.fake.state.nodes.values()].filter((n) => n.tags.includes(TAG)).length, 0);
  });
});
