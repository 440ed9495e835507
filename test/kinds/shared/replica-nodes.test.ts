// Which node each replica is (src/kinds/shared/replica-nodes.ts): every row of the design's table (issue 32 §2.3),
// the safety invariants 1–4, scale-down, renames and the NodeIdentity verdicts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HsNode } from "../../../src/headscale/types.js";
import { wantedLabel } from "../../../src/kinds/shared/replica.js";
import {
  type NodeStatusItem,
  nodeIdentityVerdict,
  planFinalNodes,
  planReplicaNodes,
  type ReplicaNodesInput,
  recordedNodes,
  type StateFact,
  statusNodes,
} from "../../../src/kinds/shared/replica-nodes.js";
import { AT, hsNode, preAuthKey } from "./fixtures.js";

const TAG = "tag:k8s-shop-db";
const OWN = new Set(["5", "6"]);
const minutesAgo = (m: number) => new Date(AT.getTime() - m * 60_000).toISOString();

function node(id: string, over: Partial<HsNode> & { key?: string } = {}): HsNode {
  const { key = "5", ...rest } = over;
  return {
    ...hsNode({ id, name: `shop-db-${id}`, tags: [TAG] }),
    preAuthKey: preAuthKey({ id: key, aclTags: [TAG], expiration: null }),
    lastSeen: minutesAgo(0),
    createdAt: minutesAgo(600),
    ...rest,
  };
}
const offline = (id: string, over: Partial<HsNode> & { key?: string } = {}) =>
  node(id, { online: false, lastSeen: minutesAgo(5), ...over });
const fact = (index: number, deviceId?: string): StateFact => ({
  index,
  name: `db-agent-${index}-state`,
  ...(deviceId ? { deviceId } : {}),
  hasState: !!deviceId,
});
const rec = (replica: number, n: HsNode, extra: Partial<NodeStatusItem> = {}): NodeStatusItem => ({
  replica,
  id: n.id,
  name: n.givenName,
  addresses: [...n.ipAddresses].sort(),
  nodeKey: n.nodeKey,
  machineKey: n.machineKey,
  preAuthKeyId: n.preAuthKey?.id,
  online: n.online,
  ...extra,
});

function input(over: Partial<ReplicaNodesInput>): ReplicaNodesInput {
  return {
    replicas: 1,
    facts: [],
    running: new Set([0]),
    pods: [],
    nodes: [],
    ownKeys: OWN,
    tag: TAG,
    record: [],
    now: AT,
    wanted: (i) => wantedLabel("shop-db", i),
    ...over,
  };
}
const verdicts = (p: ReturnType<typeof planReplicaNodes>) => p.bindings.map((b) => b.verdict);
const ids = (ns: readonly HsNode[]) => ns.map((n) => n.id);

describe("planReplicaNodes: the table", () => {
  it("bound, stable: device_id names our recorded node with the recorded node key; no write", () => {
    const x = node("17", { givenName: "shop-db" });
    const p = planReplicaNodes(input({ facts: [fact(0, "17")], nodes: [x], record: [rec(0, x)] }));
    assert.deepEqual(verdicts(p), ["stable"]);
    assert.deepEqual(p.deletes, []);
    assert.deepEqual(p.renames, []);
    assert.deepEqual(nodeIdentityVerdict(p, 1, false), {
      status: "True",
      reason: "Stable",
      message: "every replica keeps its node (0=17)",
    });
  });

  it("bound, first binding: no record yet, the record is written from the node", () => {
    const x = node("17", { givenName: "shop-db" });
    const p = planReplicaNodes(input({ facts: [fact(0, "17")], nodes: [x] }));
    assert.deepEqual(verdicts(p), ["firstBinding"]);
    assert.deepEqual(statusNodes(p, new Set()), [rec(0, x)]);
  });

  it("re-registered: device_id names a new node of ours; the offline predecessor is deleted after 60 s", () => {
    const y = offline("17", { givenName: "shop-db" });
    const x = node("18", { givenName: "shop-db-1" });
    const p = planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [y, x], record: [rec(0, y)] }));
    assert.deepEqual(verdicts(p), ["reregistered"]);
    assert.deepEqual(ids(p.deletes), ["17"]);
    assert.deepEqual(p.renames, [], "renamed only once the predecessor is gone");
    assert.deepEqual(nodeIdentityVerdict(p, 1, false), {
      status: "False",
      reason: "Reregistered",
      message: "replica 0: registered node 18 while its previous node 17 still exists",
    });
    // the delete failed: status moves to the new node and remembers the predecessor
    assert.deepEqual(statusNodes(p, new Set()), [rec(0, x, { predecessorId: "17" })]);
    // it succeeded: no predecessor left
    assert.deepEqual(statusNodes(p, new Set(["17"])), [rec(0, x)]);
  });

  it("re-registered, predecessor online or seen under 60 s ago: kept", () => {
    const x = node("18");
    for (const y of [node("17"), offline("17", { lastSeen: new Date(AT.getTime() - 30_000).toISOString() })]) {
      const p = planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [y, x], record: [rec(0, y)] }));
      assert.deepEqual(p.deletes, []);
    }
  });

  it("then, with the predecessor gone, the node is renamed back to the wanted label", () => {
    const x = node("18", { givenName: "shop-db-1" });
    const p = planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [x], record: [rec(0, x)] }));
    assert.deepEqual(verdicts(p), ["stable"]);
    assert.deepEqual(
      p.renames.map((r) => [r.node.id, r.name]),
      [["18", "shop-db"]],
    );
  });

  it("the predecessor recorded in status is still deleted in a later sync", () => {
    const y = offline("17");
    const x = node("18");
    const p = planReplicaNodes(
      input({ facts: [fact(0, "18")], nodes: [y, x], record: [rec(0, x, { predecessorId: "17" })] }),
    );
    assert.deepEqual(verdicts(p), ["stable"]);
    assert.deepEqual(ids(p.deletes), ["17"]);
    assert.equal(nodeIdentityVerdict(p, 1, false).reason, "Reregistered", "until the predecessor is gone");
    const gone = planReplicaNodes(
      input({ facts: [fact(0, "18")], nodes: [x], record: [rec(0, x, { predecessorId: "17" })] }),
    );
    assert.equal(nodeIdentityVerdict(gone, 1, false).reason, "Stable");
  });

  it("IdentityChanged: same id, another node key, not the accepted one; accepting it makes it stable", () => {
    const x = node("17");
    const record = [rec(0, x, { nodeKey: "nodekey:0123456789abcdef" })];
    const p = planReplicaNodes(input({ facts: [fact(0, "17")], nodes: [x], record }));
    assert.deepEqual(verdicts(p), ["identityChanged"]);
    assert.deepEqual(p.deletes, []);
    assert.deepEqual(nodeIdentityVerdict(p, 1, false), {
      status: "False",
      reason: "IdentityChanged",
      message:
        "replica 0: node 17 (shop-db-17) changed its node key from nodekey:01234567… to nodekey:17… while its state persisted",
    });
    assert.equal(statusNodes(p, new Set())[0]?.nodeKey, "nodekey:0123456789abcdef", "the record keeps the old key");
    const accepted = planReplicaNodes(
      input({ facts: [fact(0, "17")], nodes: [x], record, acceptedNodeKey: x.nodeKey }),
    );
    assert.deepEqual(verdicts(accepted), ["stable"]);
  });

  it("ForeignNode: device_id names a node with another tag, a foreign key, no such node, or garbage", () => {
    const cases: [HsNode[], string][] = [
      [[node("17", { tags: ["tag:other"] })], "17"],
      [[node("17", { key: "99" })], "17"],
      [[], "17"],
      [[node("17")], "invalid"],
    ];
    for (const [nodes, id] of cases) {
      const p = planReplicaNodes(input({ facts: [fact(0, id)], nodes }));
      assert.deepEqual(verdicts(p), ["foreign"]);
      assert.deepEqual(p.deletes, []);
      assert.equal(nodeIdentityVerdict(p, 1, false).reason, "ForeignNode");
    }
    const p = planReplicaNodes(input({ facts: [fact(0, "17")], nodes: [node("17", { key: "99" })] }));
    assert.equal(
      nodeIdentityVerdict(p, 1, false).message,
      "replica 0: its state Secret names node 17, which this object did not register",
    );
  });

  it("pending: no device_id with a record — registering within 120 s of the pod's start, then StateLost", () => {
    const y = offline("17");
    const base = { nodes: [y], record: [rec(0, y)], facts: [fact(0)] };
    const young = planReplicaNodes(
      input({ ...base, pods: [{ index: 0, startedAt: new Date(AT.getTime() - 60_000) }] }),
    );
    assert.deepEqual(verdicts(young), ["registering"]);
    const old = planReplicaNodes(input({ ...base, pods: [{ index: 0, startedAt: new Date(AT.getTime() - 180_000) }] }));
    assert.deepEqual(verdicts(old), ["stateLost"]);
    assert.deepEqual(old.deletes, [], "the recorded node waits until a new node is bound");
    assert.deepEqual(statusNodes(old, new Set()), [rec(0, y)], "the record stays");
    assert.deepEqual(nodeIdentityVerdict(old, 1, false), {
      status: "False",
      reason: "StateLost",
      message: "replica 0: no node in its state Secret 120s after its pod started, and its recorded node 17 is offline",
    });
  });

  it("a new replica without a node is Registering (k of n)", () => {
    const x = node("17");
    const p = planReplicaNodes(
      input({ replicas: 2, facts: [fact(0, "17"), fact(1)], nodes: [x], record: [rec(0, x)] }),
    );
    assert.deepEqual(verdicts(p), ["stable", "registering"]);
    assert.deepEqual(nodeIdentityVerdict(p, 2, false), {
      status: "True",
      reason: "Registering",
      message: "1 of 2 replicas bound to a node",
    });
    assert.equal(nodeIdentityVerdict(p, 2, true).reason, "Migrating");
  });
});

describe("planReplicaNodes: unbound nodes", () => {
  it("ours, unbound, offline ≥ 60 s and older than 120 s: deleted; online: reported, kept", () => {
    const x = node("17");
    const legacyOffline = offline("3", { key: "6" });
    const legacyOnline = node("4", { key: "6" });
    const young = offline("20", { createdAt: minutesAgo(1) });
    const p = planReplicaNodes(
      input({ facts: [fact(0, "17")], nodes: [x, legacyOffline, legacyOnline, young], record: [rec(0, x)] }),
    );
    assert.deepEqual(ids(p.deletes), ["3"]);
    assert.deepEqual(ids(p.unboundOnline), ["4"]);
  });
});

describe("planReplicaNodes: safety invariants", () => {
  it("1: a node named by an active replica's device_id is never deleted, even offline and superseded in status", () => {
    const a = offline("17");
    const b = offline("18");
    // replica 1's record says 17 (lagging), its state names 18; replica 0's state names 17
    const p = planReplicaNodes(
      input({ replicas: 2, facts: [fact(0, "17"), fact(1, "18")], nodes: [a, b], record: [rec(1, a)] }),
    );
    assert.deepEqual(p.deletes, []);
  });

  it("2: an online node is never deleted outside finalize", () => {
    const y = node("17");
    const x = node("18");
    const stray = node("30", { createdAt: minutesAgo(600) });
    const p = planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [y, x, stray], record: [rec(0, y)] }));
    assert.deepEqual(p.deletes, []);
  });

  it("3: only our nodes, and nothing without a node list read this sync", () => {
    const admin = offline("40", { key: "99" });
    const taggedNoKey = offline("41", { preAuthKey: null });
    const twoTags = offline("42", { tags: [TAG, "tag:x"] });
    const x = node("17");
    const p = planReplicaNodes(
      input({ facts: [fact(0, "17")], nodes: [x, admin, taggedNoKey, twoTags], record: [rec(0, offline("40"))] }),
    );
    assert.deepEqual(p.deletes, [], "a record naming a foreign node does not make it deletable");
    const unread = planReplicaNodes(
      input({ facts: [fact(0, "18")], nodes: undefined, record: [rec(0, offline("17"))], replicas: 1 }),
    );
    assert.deepEqual(unread.deletes, []);
    assert.deepEqual(unread.renames, []);
  });

  it("4: a lagging record names the bound node (no write), a deleted node (no-op) or an offline predecessor", () => {
    const x = node("18");
    // lagging record = the bound node itself
    assert.deepEqual(planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [x], record: [rec(0, x)] })).deletes, []);
    // lagging record names a node already deleted
    const gone = planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [x], record: [rec(0, offline("17"))] }));
    assert.deepEqual(gone.deletes, []);
    assert.deepEqual(verdicts(gone), ["reregistered"]);
    assert.equal(nodeIdentityVerdict(gone, 1, false).reason, "Stable", "no predecessor left: nothing to report");
  });
});

describe("scale-down", () => {
  it("3→1: replicas 1 and 2 wait while their pods run, then their offline nodes go", () => {
    const n = [node("10"), offline("11"), offline("12")];
    const facts = [fact(0, "10"), fact(1, "11"), fact(2, "12")];
    const record = [rec(0, n[0]!), rec(1, n[1]!), rec(2, n[2]!)];
    const running = planReplicaNodes(input({ facts, nodes: n, record, running: new Set([0, 1, 2]) }));
    assert.deepEqual(
      running.removed.map((r) => [r.index, ids(r.nodes), r.waiting]),
      [
        [1, ["11"], "its pod is still running"],
        [2, ["12"], "its pod is still running"],
      ],
    );
    const stopped = planReplicaNodes(input({ facts, nodes: n, record, running: new Set([0]) }));
    assert.deepEqual(
      stopped.removed.map((r) => [r.index, ids(r.nodes), r.waiting]),
      [
        [1, ["11"], undefined],
        [2, ["12"], undefined],
      ],
    );
    assert.deepEqual(stopped.deletes, [], "removed replicas' nodes are deleted through `removed`, not twice");
  });

  it("a removed replica's node still online waits; an unread node list waits", () => {
    const online = node("11");
    const p = planReplicaNodes(
      input({ facts: [fact(0, "10"), fact(1, "11")], nodes: [node("10"), online], running: new Set([0]) }),
    );
    assert.deepEqual(p.removed[0]?.waiting, "node shop-db-11 is still online");
    const unread = planReplicaNodes(input({ facts: [fact(1, "11")], nodes: undefined, running: new Set([0]) }));
    assert.equal(unread.removed[0]?.waiting, "the node list could not be read");
  });

  it("replicas 0 is a scale-down to zero: every replica is removed", () => {
    const p = planReplicaNodes(
      input({
        replicas: 0,
        facts: [fact(0, "10")],
        nodes: [offline("10")],
        record: [rec(0, offline("10"))],
        running: new Set(),
      }),
    );
    assert.deepEqual(p.bindings, []);
    assert.deepEqual(
      p.removed.map((r) => [r.index, ids(r.nodes)]),
      [[0, ["10"]]],
    );
  });
});

describe("renames", () => {
  it("never takes a name a node that is not ours holds, and says so", () => {
    const x = node("18", { givenName: "shop-db-1" });
    const admin = node("2", { key: "99", tags: ["tag:admin"], givenName: "shop-db" });
    const p = planReplicaNodes(input({ facts: [fact(0, "18")], nodes: [x, admin], record: [rec(0, x)] }));
    assert.deepEqual(p.renames, []);
    assert.deepEqual(p.renameBlocked, ["replica 0: shop-db is held by node 2, which this object did not register"]);
  });

  it("replica 1 wants <host>-r1", () => {
    const a = node("10", { givenName: "shop-db" });
    const b = node("11", { givenName: "shop-db-1" });
    const p = planReplicaNodes(
      input({ replicas: 2, facts: [fact(0, "10"), fact(1, "11")], nodes: [a, b], record: [rec(0, a), rec(1, b)] }),
    );
    assert.deepEqual(
      p.renames.map((r) => [r.node.id, r.name]),
      [["11", "shop-db-r1"]],
    );
  });
});

describe("status records", () => {
  it("recordedNodes drops malformed items and round-trips statusNodes", () => {
    const x = node("17");
    const p = planReplicaNodes(input({ facts: [fact(0, "17")], nodes: [x] }));
    const items = statusNodes(p, new Set());
    assert.deepEqual(recordedNodes({ nodes: [...items, { replica: "x" }, null] }), items);
    assert.deepEqual(recordedNodes(undefined), []);
  });

  it("finalize deletes every node of ours, online or not, and nothing else", () => {
    const nodes = [node("10"), offline("11", { key: "6" }), node("12", { key: "99" }), node("13", { tags: ["tag:x"] })];
    assert.deepEqual(ids(planFinalNodes(nodes, TAG, OWN)), ["10", "11"]);
  });
});
