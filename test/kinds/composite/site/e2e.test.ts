/**
 * TailnetSite end to end: the Metacontroller emulator drives the real hook server, which talks to
 * the fake Headscale. The Tailnet kind is replaced by a stub that keeps the Tailnet's status as the
 * test sets it and returns no children, so these tests see only the site's own Headscale traffic
 * (a real Tailnet would PUT the policy, and Headscale's auto-approval would race the site's).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HookKind } from "../../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { b64 } from "../../../../src/kinds/shared/secrets.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { type FakeHeadscale, type FaultSpec, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { statusKeepingTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";

const API = "tailnet.internal/v1alpha1";
const P4 = "192.168.10.0/24";
const P6 = "fd00:1::/64";
const TAG = "tag:router-home";
const NOW = new Date("2026-11-29T10:00:00Z");

type Ctx = { after: (fn: () => Promise<void> | void) => void };

interface WorldOpts {
  mode?: "Apply" | "DryRun";
  credentials?: boolean;
  tailnet?: boolean;
  /** Headscale request timeout: generous (a loaded CI machine), short only where a timeout is the test. */
  timeoutMs?: number;
}

async function world(t: Ctx, opts: WorldOpts = {}) {
  const fake = await useFakeHeadscale(t);
  // No cache (every sync reads the node list), no retries: each fault shows on the next sync.
  const views = new HeadscaleViews({ timeoutMs: opts.timeoutMs ?? 5000, cacheTTLSeconds: 0, retries: 0 });
  t.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const kinds = new Map<HookKind, KindModule>(kindModules);
  kinds.set("tailnet", statusKeepingTailnet);
  const { app, logs } = await build(t, {
    server: { kinds, deps: { views, metrics, now: () => NOW, events: memoryEventRecorder() } },
  });
  const mc = new FakeMetacontroller({ app });
  if (opts.tailnet !== false) {
    mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
        policy: { mode: opts.mode ?? "Apply" },
        reservedNetworks: ["10.96.0.0/12", "10.244.0.0/16"],
      }),
    );
  }
  if (opts.credentials !== false) {
    mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
      data: { url: b64(fake.url), apiKey: b64(fake.apiKey) },
    });
  }
  return { fake, mc, metrics, logs };
}

function applySite(
  mc: FakeMetacontroller,
  name: string,
  prefixes: string[],
  opts: { created?: string; tags?: string[] } = {},
) {
  return mc.apply(
    parentObject(
      "TailnetSite",
      name,
      { tailnetRef: { name: "home" }, prefixes, advertiserTags: opts.tags ?? [TAG], allowFrom: ["group:eng"] },
      { namespace: "net", creationTimestamp: opts.created ?? "2026-11-01T00:00:00Z" },
    ),
  );
}

const cond = (mc: FakeMetacontroller, name: string, type: string) => mc.condition("TailnetSite", name, type, "net");
const reasonsOf = (mc: FakeMetacontroller, name: string) =>
  Object.fromEntries(
    ["RouteConflict", "UnmanagedOverlap", "Advertised", "Approved", "Ready"].map((t) => [t, cond(mc, name, t)?.reason]),
  );
const statusJson = (mc: FakeMetacontroller, name: string) => JSON.stringify(mc.status(API, "TailnetSite", name, "net"));
const approvalsSent = (fake: FakeHeadscale) => fake.requests.filter((r) => r.path.endsWith("/approve_routes"));
const lastSiteSync = (mc: FakeMetacontroller, name: string) =>
  [...mc.calls].reverse().find((c) => c.hook === "sync" && c.parent === `net/${name}`)?.response as {
    resyncAfterSeconds?: number;
    children: unknown[];
  };

/** The replay counter of a site; undefined when the series does not exist. */
async function replays(metrics: ReturnType<typeof createOperatorMetrics>, name: string): Promise<number | undefined> {
  const m = await metrics.routeApprovalsReplayed.get();
  return m.values.find((v) => v.labels.name === name && v.labels.namespace === "net" && v.labels.tailnet === "home")
    ?.value;
}

/** A settled site whose router's routes the operator approved. */
async function approvedSite(t: Ctx, opts: WorldOpts = {}) {
  const w = await world(t, opts);
  const router = w.fake.addNode({
    name: "router-1",
    tags: [TAG],
    availableRoutes: [P4, P6, "10.50.0.0/16"],
    approvedRoutes: ["10.50.0.0/16"],
  });
  applySite(w.mc, "lan", [P4, P6]);
  const rounds = await w.mc.settle();
  assert.ok(rounds <= 3, `settled in ${rounds} rounds`);
  return { ...w, router };
}

describe("TailnetSite end to end", () => {
  it("approves advertised routes read-modify-write, reports Approved at once, and is stable", async (t) => {
    const { fake, mc, metrics, router } = await approvedSite(t);
    assert.deepEqual(
      approvalsSent(fake).map((r) => [r.path, r.body]),
      [[`/api/v1/node/${router.id}/approve_routes`, { routes: ["10.50.0.0/16", P4, P6] }]],
    );
    const firstSync = mc.calls.find((c) => c.hook === "sync" && c.parent === "net/lan")?.response as {
      status: { conditions: { type: string; reason: string }[] };
    };
    assert.equal(firstSync.status.conditions.find((c) => c.type === "Approved")?.reason, "Approved", "the fold-back");
    assert.deepEqual(reasonsOf(mc, "lan"), {
      RouteConflict: "NoConflict",
      UnmanagedOverlap: "None",
      Advertised: "Advertised",
      Approved: "Approved",
      Ready: "Ready",
    });
    assert.equal(cond(mc, "lan", "Approved")?.message, "approved: 192.168.10.0/24, fd00:1::/64 on router-1");
    assert.deepEqual(mc.status(API, "TailnetSite", "lan", "net")?.advertisers, [
      { node: "router-1", prefixes: [P4, P6], approved: true },
    ]);
    assert.deepEqual(mc.childrenOf(mc.get(API, "TailnetSite", "lan", "net") ?? parentObject("x", "x", {})), []);
    assert.deepEqual(lastSiteSync(mc, "lan").children, []);
    assert.equal(await replays(metrics, "lan"), 0, "a first approval is no replay (the series exists at 0)");

    const before = statusJson(mc, "lan");
    assert.equal(await mc.settle(), 1);
    assert.equal(statusJson(mc, "lan"), before, "byte-identical on a repeat sync");
    assert.equal(approvalsSent(fake).length, 1, "nothing approved twice");
    assert.deepEqual(mc.errors, []);
  });

  it("replays the approvals after the router re-registers as a new node, counting one per route", async (t) => {
    const { fake, mc, metrics, router } = await approvedSite(t);
    // The router lost its state: the old (ephemeral) node is gone, a new one announces the same routes.
    fake.state.nodes.delete(router.id);
    const reborn = fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: [P4, P6], approvedRoutes: [] });
    await mc.settle();
    assert.equal(await replays(metrics, "lan"), 2);
    assert.deepEqual(approvalsSent(fake).at(-1)?.body, { routes: [P4, P6] });
    assert.equal(approvalsSent(fake).at(-1)?.path, `/api/v1/node/${reborn.id}/approve_routes`);
    assert.equal(cond(mc, "lan", "Ready")?.reason, "Ready");

    // Someone removes one approval by hand: one more replay, the other routes stay.
    const live = fake.state.nodes.get(reborn.id);
    assert.ok(live);
    live.approvedRoutes = [P6, "172.20.0.0/16"];
    await mc.settle();
    assert.equal(await replays(metrics, "lan"), 3);
    assert.deepEqual(fake.state.nodes.get(reborn.id)?.approvedRoutes, ["172.20.0.0/16", P4, P6]);

    // Stable again: no more approvals, no more replays.
    const sent = approvalsSent(fake).length;
    assert.equal(await mc.settle(), 1);
    assert.equal(approvalsSent(fake).length, sent);
    assert.equal(await replays(metrics, "lan"), 3);
    assert.deepEqual(mc.errors, []);
  });

  it("keeps old routers' approvals and counts a replay even when the stale node is still listed", async (t) => {
    const { fake, mc, metrics, router } = await approvedSite(t);
    const reborn = fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: [P4], approvedRoutes: [] });
    await mc.settle();
    assert.equal(reborn.givenName, "router-1-1");
    assert.equal(await replays(metrics, "lan"), 1);
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, ["10.50.0.0/16", P4, P6], "untouched");
    assert.deepEqual(mc.status(API, "TailnetSite", "lan", "net")?.advertisers, [
      { node: "router-1", prefixes: [P4, P6], approved: true },
      { node: "router-1-1", prefixes: [P4], approved: true },
    ]);
  });

  it("NotAdvertised: no router announces yet; waits 30 s and writes nothing", async (t) => {
    const { fake, mc } = await world(t);
    fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: [] });
    applySite(mc, "lan", [P4]);
    await mc.settle();
    assert.equal(cond(mc, "lan", "Ready")?.reason, "NotAdvertised");
    assert.equal(cond(mc, "lan", "Advertised")?.message, "no node tagged tag:router-home advertises 192.168.10.0/24");
    assert.equal(lastSiteSync(mc, "lan").resyncAfterSeconds, 30);
    assert.deepEqual(fake.writes(), []);
    assert.deepEqual(mc.errors, []);
  });

  it("DryRun: reports NotApproved and approves nothing", async (t) => {
    const { fake, mc } = await world(t, { mode: "DryRun" });
    fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: [P4] });
    applySite(mc, "lan", [P4]);
    await mc.settle();
    assert.deepEqual(reasonsOf(mc, "lan"), {
      RouteConflict: "NoConflict",
      UnmanagedOverlap: "None",
      Advertised: "Advertised",
      Approved: "NotApproved",
      Ready: "NotApproved",
    });
    assert.equal(
      cond(mc, "lan", "Ready")?.message,
      "advertised but not approved: 192.168.10.0/24 on router-1; Tailnet home is in DryRun (spec.policy.mode): the operator approves no routes",
    );
    assert.deepEqual(fake.writes(), []);
  });

  it("OverlapsSite: the newer site is blocked and approves nothing; the older one is untouched", async (t) => {
    const { fake, mc, router } = await approvedSite(t);
    const others = (name: string) =>
      JSON.stringify(
        ((mc.status(API, "TailnetSite", name, "net")?.conditions ?? []) as { type: string }[]).filter(
          (c) => c.type !== "UnmanagedOverlap",
        ),
      );
    const before = others("lan");
    fake.addNode({ name: "router-lab", tags: ["tag:router-lab"], availableRoutes: ["192.168.10.128/25"] });
    applySite(mc, "lab", ["192.168.10.128/25"], { created: "2026-11-05T00:00:00Z", tags: ["tag:router-lab"] });
    await mc.settle();
    assert.equal(cond(mc, "lab", "RouteConflict")?.reason, "OverlapsSite");
    assert.equal(
      cond(mc, "lab", "Ready")?.message,
      "prefix 192.168.10.128/25 of TailnetSite net/lab overlaps prefix 192.168.10.0/24 of the older TailnetSite net/lan",
    );
    assert.equal(cond(mc, "lab", "Approved")?.reason, "NotApproved");
    assert.equal(approvalsSent(fake).length, 1, "only the older site's approval");
    assert.equal(others("lan"), before, "the older site is untouched");
    // The blocked site's router announces inside the older site without its tag: reported there, nothing more.
    assert.equal(
      cond(mc, "lan", "UnmanagedOverlap")?.message,
      "node without an advertiser tag (tag:router-home) advertises an overlapping route: router-lab 192.168.10.128/25 (overlaps 192.168.10.0/24)",
    );
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, ["10.50.0.0/16", P4, P6]);
    assert.deepEqual(mc.errors, []);
  });

  it("OverlapsReserved: a prefix inside reservedNetworks is blocked and approves nothing", async (t) => {
    const { fake, mc } = await world(t);
    fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: ["10.96.1.0/24"] });
    applySite(mc, "svc", ["10.96.1.0/24"]);
    await mc.settle();
    assert.equal(cond(mc, "svc", "Ready")?.reason, "OverlapsReserved");
    assert.equal(
      cond(mc, "svc", "RouteConflict")?.message,
      "prefix 10.96.1.0/24 of TailnetSite net/svc overlaps reserved network 10.96.0.0/12 of Tailnet home",
    );
    assert.deepEqual(fake.writes(), []);
  });

  it("Unmanaged: names the node without an advertiser tag; report only", async (t) => {
    const { fake, mc } = await approvedSite(t);
    fake.addUser({ name: "alice" });
    fake.addNode({ name: "laptop", user: "alice", availableRoutes: ["192.168.10.0/25"] });
    await mc.settle();
    assert.equal(cond(mc, "lan", "UnmanagedOverlap")?.status, "True");
    assert.equal(
      cond(mc, "lan", "UnmanagedOverlap")?.message,
      "node without an advertiser tag (tag:router-home) advertises an overlapping route: laptop 192.168.10.0/25 (overlaps 192.168.10.0/24)",
    );
    assert.equal(cond(mc, "lan", "Ready")?.reason, "Ready");
    assert.equal(approvalsSent(fake).length, 1, "the laptop's route is not approved");
  });

  it("NotApproved: a failed approval is reported with the operation, and retried on the next sync", async (t) => {
    const { fake, mc } = await world(t);
    fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: [P4] });
    await fake.fault({ kind: "status", status: 500, path: /approve_routes$/, times: 1 });
    applySite(mc, "lan", [P4]);
    await mc.syncParent(mc.get(API, "TailnetSite", "lan", "net") ?? parentObject("x", "x", {}));
    assert.equal(cond(mc, "lan", "Ready")?.reason, "NotApproved");
    assert.equal(
      cond(mc, "lan", "Approved")?.message,
      "advertised but not approved: 192.168.10.0/24 on router-1; approving on router-1 failed: Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 fault injected: 500",
    );
    assert.equal(lastSiteSync(mc, "lan").resyncAfterSeconds, 30);
    await mc.settle();
    assert.equal(cond(mc, "lan", "Ready")?.reason, "Ready");
    assert.equal(approvalsSent(fake).length, 2);
    assert.deepEqual(mc.errors, []);
  });

  it("NoTailnet and NoAPIKey: Headscale is not asked", async (t) => {
    const none = await world(t, { tailnet: false, credentials: false });
    applySite(none.mc, "lan", [P4]);
    await none.mc.settle();
    assert.equal(cond(none.mc, "lan", "Ready")?.reason, "NoTailnet");
    assert.equal(cond(none.mc, "lan", "Ready")?.message, 'Tailnet "home" not found');
    assert.equal(none.fake.requests.length, 0);

    const nokey = await world(t, { credentials: false });
    applySite(nokey.mc, "lan", [P4]);
    await nokey.mc.settle();
    assert.equal(cond(nokey.mc, "lan", "Ready")?.reason, "NoAPIKey");
    assert.equal(cond(nokey.mc, "lan", "RouteConflict")?.reason, "NoConflict");
    assert.equal(cond(nokey.mc, "lan", "Advertised")?.reason, "NotObserved");
    assert.equal(nokey.fake.requests.length, 0);
    assert.deepEqual([...none.mc.errors, ...nokey.mc.errors], []);
  });

  it("InvalidSpec: overlapping prefixes inside one site", async (t) => {
    const { fake, mc } = await world(t);
    applySite(mc, "lan", [P4, "192.168.10.0/25"]);
    await mc.settle();
    assert.equal(cond(mc, "lan", "Ready")?.reason, "InvalidSpec");
    assert.equal(
      cond(mc, "lan", "Ready")?.message,
      "spec.prefixes[1]: 192.168.10.0/25 overlaps spec.prefixes[0] 192.168.10.0/24",
    );
    assert.deepEqual(fake.writes(), []);
    assert.deepEqual(mc.errors, []);
  });

  it("finalize: withdraws exactly the site's prefixes (read-modify-write), then the site goes away", async (t) => {
    const { fake, mc, router, metrics } = await approvedSite(t);
    const series = async () =>
      (await metrics.resourceCondition.get()).values.filter((v) => v.labels.name === "lan").length;
    assert.ok((await series()) > 0);
    const writes = fake.writes().length;
    mc.delete(API, "TailnetSite", "lan", "net");
    await mc.settle();
    assert.equal(await series(), 0, "the resource series are withdrawn");
    assert.equal(await replays(metrics, "lan"), undefined, "and the replay counter");
    assert.equal(mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.ok(mc.calls.some((c) => c.hook === "finalize" && c.parent === "net/lan" && c.code === 200));
    // No policy is stored (the Tailnet is a stub here): nothing auto-approves the routes, so they go.
    assert.deepEqual(
      fake
        .writes()
        .slice(writes)
        .map((r) => [r.path, r.body]),
      [[`/api/v1/node/${router.id}/approve_routes`, { routes: ["10.50.0.0/16"] }]],
    );
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, ["10.50.0.0/16"], "the other route stays");
    assert.deepEqual(mc.errors, []);
  });

  it("finalize in DryRun writes nothing and releases the site", async (t) => {
    const { fake, mc, router } = await approvedSite(t);
    // The Tailnet switches to DryRun after the approval (its status is the stub's).
    const tn = mc.get(API, "Tailnet", "home");
    assert.ok(tn);
    mc.apply({ ...tn, spec: { ...(tn.spec as Record<string, unknown>), policy: { mode: "DryRun" } } });
    const writes = fake.writes().length;
    mc.delete(API, "TailnetSite", "lan", "net");
    await mc.settle();
    assert.equal(mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.equal(fake.writes().length, writes, "no write in DryRun");
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, ["10.50.0.0/16", P4, P6]);
    assert.deepEqual(mc.errors, []);
  });

  it("finalize while Headscale is down: Ready=False/Withdrawing, not finalized, no write; then withdraws", async (t) => {
    const { fake, mc, router } = await approvedSite(t, { timeoutMs: 1000 });
    const writes = fake.writes().length;
    await fake.fault({ kind: "status", status: 500 });
    mc.delete(API, "TailnetSite", "lan", "net");
    await mc.settle();
    assert.ok(mc.get(API, "TailnetSite", "lan", "net"), "held while the withdrawal cannot be done");
    assert.equal(cond(mc, "lan", "Ready")?.reason, "Withdrawing");
    assert.match(
      cond(mc, "lan", "Ready")?.message ?? "",
      /^withdrawing route approvals: routes not observed: Headscale GET \/api\/v1\/node: 500/,
    );
    const last = [...mc.calls].reverse().find((c) => c.hook === "finalize")?.response as {
      finalized: boolean;
      resyncAfterSeconds?: number;
    };
    assert.deepEqual([last.finalized, last.resyncAfterSeconds], [false, 10]);
    assert.equal(fake.writes().length, writes);
    await fake.clearFaults();
    await mc.settle();
    assert.equal(mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, ["10.50.0.0/16"]);
    assert.deepEqual(mc.errors, []);
  });

  const faults: { name: string; spec: FaultSpec; message: RegExp }[] = [
    { name: "refused", spec: { kind: "refused" }, message: /^routes not observed: Headscale GET \/api\/v1\/node: / },
    { name: "timeout", spec: { kind: "timeout" }, message: /^routes not observed: Headscale GET \/api\/v1\/node: / },
    {
      name: "500",
      spec: { kind: "status", status: 500 },
      message: /^routes not observed: Headscale GET \/api\/v1\/node: 500/,
    },
    {
      name: "401",
      spec: { kind: "unauthorized" },
      message: /^routes not observed: Headscale GET \/api\/v1\/node: 401/,
    },
  ];
  for (const f of faults) {
    it(`Headscale ${f.name}: NotObserved, HTTP 200, no write, last advertisers kept; then recovers`, async (t) => {
      const { fake, mc, metrics, router, logs } = await approvedSite(t, { timeoutMs: 1000 });
      const advertisers = mc.status(API, "TailnetSite", "lan", "net")?.advertisers;
      const live = fake.state.nodes.get(router.id);
      assert.ok(live);
      live.approvedRoutes = ["10.50.0.0/16"]; // an approval is lost while Headscale cannot be read
      await fake.fault(f.spec);
      await mc.settle();
      assert.deepEqual(reasonsOf(mc, "lan"), {
        RouteConflict: "NoConflict",
        UnmanagedOverlap: "NotObserved",
        Advertised: "NotObserved",
        Approved: "NotObserved",
        Ready: "NotObserved",
      });
      assert.equal(cond(mc, "lan", "Advertised")?.status, "Unknown");
      assert.match(cond(mc, "lan", "Ready")?.message ?? "", f.message);
      assert.deepEqual(mc.status(API, "TailnetSite", "lan", "net")?.advertisers, advertisers);
      assert.equal(lastSiteSync(mc, "lan").resyncAfterSeconds, 30);
      assert.equal(approvalsSent(fake).length, 1, "no write while unobserved");
      assert.deepEqual(mc.errors, [], "a failed observation is a 200");

      await fake.clearFaults();
      await mc.settle();
      assert.equal(cond(mc, "lan", "Ready")?.reason, "Ready");
      assert.equal(await replays(metrics, "lan"), 2, "the kept advertisers remembered the approval");
      assert.ok(!logs.join("").includes(fake.apiKey), "the API key never reaches the log");
      assert.ok(!JSON.stringify(mc.calls.map((c) => c.response)).includes(fake.apiKey));
    });
  }
});
