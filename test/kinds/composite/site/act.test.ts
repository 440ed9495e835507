import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import {
  approveSiteRoutes,
  replayedForOthers,
  replayedRoutes,
  withdrawSiteRoutes,
} from "../../../../src/kinds/composite/site/act.js";
import type { ApprovalAction } from "../../../../src/kinds/composite/site/plan.js";
import { type FakeHeadscale, useFakeHeadscale } from "../../../fakes/headscale/index.js";

const P = "192.168.10.0/24";
const Q = "192.168.20.0/24";

async function setup(t: { after: (fn: () => Promise<void> | void) => void }) {
  const fake = await useFakeHeadscale(t);
  // A long TTL: the cached node list goes stale on purpose, as it would between syncs.
  const views = new HeadscaleViews({ timeoutMs: 2000, cacheTTLSeconds: 600, retries: 0 });
  t.after(() => views.close());
  const view = views.view({ url: fake.url, apiKey: fake.apiKey });
  return { fake, view };
}

const approvals = (fake: FakeHeadscale) => fake.requests.filter((r) => r.path.endsWith("/approve_routes"));

describe("approveSiteRoutes", () => {
  it("sends the node's full approved set plus the missing routes, never removing one", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({
      name: "router-1",
      tags: ["tag:router-home"],
      availableRoutes: [P, "10.1.0.0/16", "0.0.0.0/0", "::/0"],
      approvedRoutes: ["10.1.0.0/16", "0.0.0.0/0", "::/0"],
    });
    const stored = [...n.approvedRoutes]; // Headscale's order: ["0.0.0.0/0", "10.1.0.0/16", "::/0"]
    const outcomes = await approveSiteRoutes(view, [{ nodeId: n.id, node: "router-1", add: [P], replays: [] }]);
    assert.deepEqual(
      approvals(fake).map((r) => r.body),
      [{ routes: [...stored, P] }],
    );
    const after = ["0.0.0.0/0", "10.1.0.0/16", P, "::/0"];
    assert.deepEqual(outcomes, [{ ok: true, nodeId: n.id, node: "router-1", added: [P], approvedRoutes: after }]);
    assert.deepEqual(fake.state.nodes.get(n.id)?.approvedRoutes, after);
    // Our own write invalidated the cached node list: the next read goes to Headscale.
    const before = fake.count("GET", /^\/api\/v1\/node$/);
    const nodes = await view.nodes();
    assert.equal(fake.count("GET", /^\/api\/v1\/node$/), before + 1);
    assert.ok(nodes.ok && nodes.value[0].approvedRoutes.includes(P));
  });

  it("re-reads the node list first: a route approved meanwhile is not written again, one added meanwhile is kept", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({ name: "router-1", tags: ["tag:r"], availableRoutes: [P, Q], approvedRoutes: [] });
    assert.ok((await view.nodes()).ok); // cached: nothing approved
    // Someone else approves Q (another site's sync on another replica, an administrator).
    const node = fake.state.nodes.get(n.id);
    assert.ok(node);
    node.approvedRoutes = [Q];
    const outcomes = await approveSiteRoutes(view, [
      { nodeId: n.id, node: "router-1", add: [P], replays: [] },
      { nodeId: n.id, node: "router-1", add: [Q], replays: [] },
    ]);
    assert.deepEqual(
      approvals(fake).map((r) => r.body),
      [{ routes: [Q, P] }],
    );
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? o.added : o.error)),
      [[P], []],
    );
  });

  it("serialises concurrent approvals on the same router so neither overwrites the other", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({ name: "router-1", tags: ["tag:r"], availableRoutes: [P, Q], approvedRoutes: [] });
    assert.ok((await view.nodes()).ok);
    await fake.fault({ kind: "slow", delayMs: 50, path: /approve_routes$/ });
    const [a, b] = await Promise.all([
      approveSiteRoutes(view, [{ nodeId: n.id, node: "router-1", add: [P], replays: [] }]),
      approveSiteRoutes(view, [{ nodeId: n.id, node: "router-1", add: [Q], replays: [] }]),
    ]);
    assert.ok(a[0].ok && b[0].ok);
    assert.deepEqual(fake.state.nodes.get(n.id)?.approvedRoutes, [P, Q]);
    assert.deepEqual(
      approvals(fake).map((r) => r.body),
      [{ routes: [P] }, { routes: [P, Q] }],
    );
  });

  it("does not write for a node that is gone or no longer announces the route", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({ name: "router-1", tags: ["tag:r"], availableRoutes: [Q], approvedRoutes: [] });
    const outcomes = await approveSiteRoutes(view, [
      { nodeId: "999", node: "router-9", add: [P], replays: [] },
      { nodeId: n.id, node: "router-1", add: [P], replays: [] },
    ]);
    assert.deepEqual(outcomes, [
      { ok: false, nodeId: "999", node: "router-9", error: "node router-9 (id 999) is gone" },
      { ok: true, nodeId: n.id, node: "router-1", added: [], approvedRoutes: [] },
    ]);
    assert.deepEqual(fake.writes(), []);
  });

  it("reports a failed write or a failed re-read as an outcome naming the operation, without the API key", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({ name: "router-1", tags: ["tag:r"], availableRoutes: [P], approvedRoutes: [] });
    await fake.fault({ kind: "status", status: 500, path: /approve_routes$/, times: 1 });
    const [failed] = await approveSiteRoutes(view, [{ nodeId: n.id, node: "router-1", add: [P], replays: [] }]);
    assert.deepEqual(failed, {
      ok: false,
      nodeId: n.id,
      node: "router-1",
      error: "Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 fault injected: 500",
    });
    await fake.fault({ kind: "unauthorized", path: /^\/api\/v1\/node$/, times: 1 });
    const [unread] = await approveSiteRoutes(view, [{ nodeId: n.id, node: "router-1", add: [P], replays: [] }]);
    assert.equal(unread.ok, false);
    assert.match(
      !unread.ok ? unread.error : "",
      /^re-reading the node list before approving failed: Headscale GET \/api\/v1\/node: 401/,
    );
    assert.ok(!JSON.stringify([failed, unread]).includes(fake.apiKey));
    assert.equal(approvals(fake).length, 1, "no write after a failed re-read");
  });
});

describe("replayedRoutes", () => {
  it("counts routes actually added whose approval the last status recorded, one per route", () => {
    const actions: ApprovalAction[] = [
      { nodeId: "1", node: "a", add: [P, Q], replays: [P, Q] },
      { nodeId: "2", node: "b", add: [P], replays: [] },
      { nodeId: "3", node: "c", add: [Q], replays: [Q] },
    ];
    const n = replayedRoutes(actions, [
      { ok: true, nodeId: "1", node: "a", added: [P, Q], approvedRoutes: [P, Q] },
      { ok: true, nodeId: "2", node: "b", added: [P], approvedRoutes: [P] },
      { ok: false, nodeId: "3", node: "c", error: "x" },
    ]);
    assert.equal(n, 2);
    assert.equal(replayedRoutes(actions, [{ ok: true, nodeId: "1", node: "a", added: [], approvedRoutes: [P, Q] }]), 0);
  });
});

describe("withdrawSiteRoutes", () => {
  it("re-reads the node and sends its full approved set without exactly these routes (the exit pair together)", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({
      name: "router-1",
      tags: ["tag:r"],
      availableRoutes: [P, Q, "0.0.0.0/0", "::/0"],
      approvedRoutes: [P, "0.0.0.0/0", "::/0"],
    });
    assert.ok((await view.nodes()).ok); // cached before someone approves Q
    const node = fake.state.nodes.get(n.id);
    assert.ok(node);
    node.approvedRoutes = ["0.0.0.0/0", P, Q, "::/0"];
    const outcomes = await withdrawSiteRoutes(view, [{ nodeId: n.id, node: "router-1", remove: [P] }]);
    assert.deepEqual(
      approvals(fake).map((r) => r.body),
      [{ routes: ["0.0.0.0/0", Q, "::/0"] }],
      "Q, approved after the cached read, stays",
    );
    assert.deepEqual(outcomes, [{ ok: true, nodeId: n.id, node: "router-1", removed: [P] }]);
    await withdrawSiteRoutes(view, [{ nodeId: n.id, node: "router-1", remove: ["::/0"] }]);
    assert.deepEqual(fake.state.nodes.get(n.id)?.approvedRoutes, [Q], "both exit routes go, or Headscale re-adds one");
  });

  it("writes nothing for a node that is gone or holds none of the routes; a failed write is an outcome", async (t) => {
    const { fake, view } = await setup(t);
    const n = fake.addNode({ name: "router-1", tags: ["tag:r"], availableRoutes: [P], approvedRoutes: [P] });
    const none = await withdrawSiteRoutes(view, [
      { nodeId: "999", node: "router-9", remove: [P] },
      { nodeId: n.id, node: "router-1", remove: [Q] },
    ]);
    assert.deepEqual(
      none.map((o) => (o.ok ? o.removed : o.error)),
      [[], []],
    );
    assert.deepEqual(fake.writes(), []);
    await fake.fault({ kind: "status", status: 500, path: /approve_routes$/, times: 1 });
    const [failed] = await withdrawSiteRoutes(view, [{ nodeId: n.id, node: "router-1", remove: [P] }]);
    assert.deepEqual(failed, {
      ok: false,
      nodeId: n.id,
      node: "router-1",
      error: "Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 fault injected: 500",
    });
    assert.deepEqual(fake.state.nodes.get(n.id)?.approvedRoutes, [P]);
  });
});

describe("replayedForOthers", () => {
  it("counts the other sites' re-approvals per site, only for routes really added", () => {
    const actions: ApprovalAction[] = [
      { nodeId: "1", node: "a", add: [P, Q], replays: [], others: [{ namespace: "net", name: "lab", replays: [Q] }] },
      { nodeId: "2", node: "b", add: [Q], replays: [], others: [{ namespace: "net", name: "lab", replays: [Q] }] },
    ];
    assert.deepEqual(
      replayedForOthers(actions, [
        { ok: true, nodeId: "1", node: "a", added: [P, Q], approvedRoutes: [P, Q] },
        { ok: true, nodeId: "2", node: "b", added: [], approvedRoutes: [Q] },
      ]),
      [{ namespace: "net", name: "lab", count: 1 }],
    );
  });
});
