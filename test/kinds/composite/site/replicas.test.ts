/**
 * Two operator replicas (two server instances, each with its own Headscale views, write queues and
 * metrics) against one fake Headscale: two TailnetSites whose prefixes share one advertiser node,
 * synced at the same moment by different replicas. `approve_routes` replaces the node's whole set,
 * so two read-modify-writes from two processes would lose one prefix; one writer per node (the
 * oldest site claiming it, see docs/architecture.md) means none is lost and nothing is replayed.
 * The Tailnet is a stub (no policy PUT), so Headscale's own auto-approval does not help here.
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
import { type FakeHeadscale, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { statusKeepingTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";

const API = "tailnet.internal/v1alpha1";
const LAN = "192.168.10.0/24";
const LAB = "192.168.20.0/24";
const TAG = "tag:router-home";
const NOW = new Date("2026-11-29T10:00:00Z");

type Ctx = { after: (fn: () => Promise<void> | void) => void };

/** One replica: its own server, views (cache, write queue) and metrics, and its own view of the cluster. */
async function replica(t: Ctx, fake: FakeHeadscale) {
  const views = new HeadscaleViews({ timeoutMs: 5000, cacheTTLSeconds: 0, retries: 0 });
  t.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const kinds = new Map<HookKind, KindModule>(kindModules);
  kinds.set("tailnet", statusKeepingTailnet);
  const { app } = await build(t, {
    server: { kinds, deps: { views, metrics, now: () => NOW, events: memoryEventRecorder() } },
  });
  const mc = new FakeMetacontroller({ app });
  mc.apply(
    parentObject("Tailnet", "home", {
      headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      policy: { mode: "Apply" },
    }),
  );
  mc.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
    data: { url: b64(fake.url), apiKey: b64(fake.apiKey) },
  });
  for (const [name, prefix, created] of [
    ["lan", LAN, "2026-11-01T00:00:00Z"],
    ["lab", LAB, "2026-11-02T00:00:00Z"],
  ]) {
    mc.apply(
      parentObject(
        "TailnetSite",
        name,
        { tailnetRef: { name: "home" }, prefixes: [prefix], advertiserTags: [TAG], allowFrom: ["group:eng"] },
        { namespace: "net", creationTimestamp: created },
      ),
    );
  }
  const site = (name: string) => {
    const o = mc.get(API, "TailnetSite", name, "net");
    assert.ok(o);
    return o;
  };
  const replays = async () => (await metrics.routeApprovalsReplayed.get()).values.reduce((sum, v) => sum + v.value, 0);
  return { mc, site, replays };
}

describe("two replicas, one Headscale: no lost approvals", () => {
  it("two sites sharing a router, synced at the same moment by different replicas: both prefixes approved, 0 replays", async (t) => {
    const fake = await useFakeHeadscale(t, { now: () => NOW });
    const router = fake.addNode({ name: "router-1", tags: [TAG], availableRoutes: [LAN, LAB, "10.50.0.0/16"] });
    const a = await replica(t, fake);
    const b = await replica(t, fake);
    // Every node read takes a while, so both replicas read the router before either writes.
    await fake.fault({ kind: "slow", path: /^\/api\/v1\/node$/, delayMs: 150, times: 8 });
    await Promise.all([a.mc.syncParent(a.site("lan")), b.mc.syncParent(b.site("lab"))]);
    await fake.clearFaults();
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, [LAN, LAB]);

    // Both replicas keep syncing their site (and the other one): nothing is re-approved.
    for (let round = 0; round < 3; round++) {
      await Promise.all([a.mc.syncParent(a.site("lan")), b.mc.syncParent(b.site("lab"))]);
      await Promise.all([a.mc.syncParent(a.site("lab")), b.mc.syncParent(b.site("lan"))]);
    }
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, [LAN, LAB]);
    assert.equal((await a.replays()) + (await b.replays()), 0, "no approval was lost and replayed");
    assert.equal(a.mc.condition("TailnetSite", "lan", "Ready", "net")?.reason, "Ready");
    assert.equal(b.mc.condition("TailnetSite", "lab", "Ready", "net")?.reason, "Ready");
    assert.equal(
      fake.requests.filter((r) => r.path.endsWith("/approve_routes")).length,
      1,
      "one writer for the router: one approve_routes call carrying both prefixes",
    );
    assert.deepEqual([...a.mc.errors, ...b.mc.errors], []);
  });
});
