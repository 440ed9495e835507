/**
 * TailnetSite and Tailnet together, end to end: the Metacontroller emulator drives the real hook
 * server with the real Tailnet and TailnetSite kinds against the fake Headscale 0.29, so the
 * Tailnet's policy writes, Headscale's auto-approval (re-run on every PUT, additive only) and the
 * site's own approvals and withdrawals all meet. Exit-node sites and what deleting a site does.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HookKind } from "../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../src/headscale/view.js";
import { kindModules } from "../../../src/kinds/index.js";
import type { KindModule } from "../../../src/kinds/types.js";
import { createOperatorMetrics } from "../../../src/metrics/registry.js";
import { memoryEventRecorder } from "../../../src/server/events.js";
import { useFakeHeadscale } from "../../fakes/headscale/index.js";
import { FakeMetacontroller } from "../../fakes/metacontroller.js";
import { parentObject } from "../../fixtures/hooks.js";
import { build } from "../../helpers/server.js";
import { apiKeySecret, baseConfigMap, NOW, tailnet, tailnetSpec } from "../tailnet/fixtures.js";

const API = "tailnet.internal/v1alpha1";
const LAN = "192.168.10.0/24";
const ROUTER = "tag:router-home";
const EXIT = "tag:exit-home";
const EXIT_ROUTES = ["0.0.0.0/0", "::/0"];
/** Every group the generated parts name is defined, so the fake refuses nothing for that. */
const BASE = `// base policy
{
  "groups": { "group:eng": ["alice@"], "group:platform": ["alice@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] }, ],
}`;

type Ctx = { after: (fn: () => Promise<void> | void) => void };

interface WorldOpts {
  mode?: "Apply" | "DryRun";
  kinds?: Map<HookKind, KindModule>;
  /** Tailnet spec overrides. */
  spec?: Record<string, unknown>;
}

async function world(t: Ctx, opts: WorldOpts = {}) {
  let ms = NOW.getTime();
  const now = () => new Date(ms);
  const fake = await useFakeHeadscale(t, { now });
  const views = new HeadscaleViews({ timeoutMs: 5000, cacheTTLSeconds: 10, now, retries: 0 });
  t.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const { app, logs } = await build(t, {
    server: { kinds: opts.kinds ?? new Map(kindModules), deps: { views, metrics, now, events: memoryEventRecorder() } },
  });
  const mc = new FakeMetacontroller({ app });
  mc.apply(apiKeySecret(fake.apiKey));
  mc.apply(baseConfigMap(BASE));
  const spec = tailnetSpec({ allowedEgressTargets: [], ...opts.spec });
  spec.headscale = { ...(spec.headscale as Record<string, unknown>), url: fake.url };
  spec.policy = { ...(spec.policy as Record<string, unknown>), mode: opts.mode ?? "Apply" };
  mc.apply(tailnet(spec));
  const siteCond = (name: string, type: string) => mc.condition("TailnetSite", name, type, "net");
  const tailnetCond = (type: string) => mc.condition("Tailnet", "home", type);
  const live = () => JSON.parse(fake.state.policies.at(-1)?.text ?? "{}") as Record<string, unknown>;
  const advance = (s: number) => {
    ms += s * 1000;
  };
  return { fake, mc, metrics, logs, siteCond, tailnetCond, live, advance, views };
}

function applySite(
  mc: FakeMetacontroller,
  name: string,
  prefixes: string[],
  tags: string[],
  created = "2026-11-01T00:00:00Z",
) {
  return mc.apply(
    parentObject(
      "TailnetSite",
      name,
      { tailnetRef: { name: "home" }, prefixes, advertiserTags: tags, allowFrom: ["group:eng"] },
      { namespace: "net", creationTimestamp: created },
    ),
  );
}

const grantsOf = (policy: Record<string, unknown>) => (policy.grants ?? []) as { dst: string[] }[];

describe("TailnetSite + Tailnet end to end: exit-node sites", () => {
  it("an exit-node site renders autoApprovers.exitNode and a grant to autogroup:internet; the exit node is approved", async (t) => {
    // No reservedNetworks: nothing else keeps the default routes out of the policy.
    const w = await world(t, { spec: { reservedNetworks: [] } });
    const exitNode = w.fake.addNode({ name: "exit-1", tags: [EXIT], availableRoutes: EXIT_ROUTES });
    const router = w.fake.addNode({ name: "router-1", tags: [ROUTER], availableRoutes: [LAN] });
    applySite(w.mc, "lan", [LAN], [ROUTER]);
    applySite(w.mc, "exit", ["::/0", "0.0.0.0/0"], [EXIT]);
    await w.mc.settle();

    // Headscale accepted the policy: every other object's policy is live too.
    assert.equal(w.tailnetCond("PolicyApplied")?.reason, "InSync", w.tailnetCond("PolicyApplied")?.message);
    const policy = w.live();
    const approvers = policy.autoApprovers as { routes: Record<string, string[]>; exitNode: string[] };
    assert.deepEqual(approvers.exitNode, [EXIT]);
    assert.deepEqual(approvers.routes, { [LAN]: [ROUTER] }, "no 0.0.0.0/0 routes key: it approves no exit node");
    assert.ok(
      grantsOf(policy).some(
        (g) => JSON.stringify(g) === JSON.stringify({ dst: ["autogroup:internet"], ip: ["*"], src: ["group:eng"] }),
      ),
    );
    assert.ok(!JSON.stringify(grantsOf(policy)).includes("/0"), "no raw default route as a grant destination");
    assert.deepEqual(w.fake.state.nodes.get(exitNode.id)?.approvedRoutes, EXIT_ROUTES);
    assert.deepEqual(w.fake.state.nodes.get(router.id)?.approvedRoutes, [LAN]);

    assert.equal(w.siteCond("exit", "Ready")?.reason, "Ready");
    assert.equal(w.siteCond("exit", "Approved")?.message, "approved: 0.0.0.0/0, ::/0 on exit-1");
    assert.equal(w.siteCond("exit", "RouteConflict")?.reason, "NoConflict", "0.0.0.0/0 overlaps no reserved network");
    assert.equal(w.siteCond("exit", "UnmanagedOverlap")?.reason, "None");
    assert.equal(w.siteCond("lan", "RouteConflict")?.reason, "NoConflict", "nor blocks a subnet site");
    assert.equal(w.siteCond("lan", "UnmanagedOverlap")?.reason, "None", "an exit node is no unmanaged overlap");
    assert.deepEqual(w.mc.errors, []);
  });

  it("a default route beside another prefix is InvalidSpec on that site only; the policy of everyone else is written", async (t) => {
    const w = await world(t);
    w.fake.addNode({ name: "router-1", tags: [ROUTER], availableRoutes: [LAN] });
    applySite(w.mc, "lan", [LAN], [ROUTER]);
    applySite(w.mc, "mixed", ["192.168.20.0/24", "0.0.0.0/0"], ["tag:router-mixed"]);
    applySite(w.mc, "half", ["0.0.0.0/0"], [EXIT]);
    await w.mc.settle();
    assert.equal(w.siteCond("mixed", "Ready")?.reason, "InvalidSpec");
    assert.equal(
      w.siteCond("mixed", "Ready")?.message,
      "spec.prefixes[1]: 0.0.0.0/0 is a default route: an exit-node site lists exactly 0.0.0.0/0 and ::/0 (Headscale approves and serves them only as a pair); other prefixes belong in another TailnetSite",
    );
    assert.equal(w.siteCond("half", "Ready")?.reason, "InvalidSpec");
    assert.equal(w.tailnetCond("PolicyApplied")?.reason, "InSync", w.tailnetCond("PolicyApplied")?.message);
    assert.match(
      w.tailnetCond("PolicyRendered")?.message ?? "",
      /left out \(Headscale would reject them\): .*0\.0\.0\.0\/0/,
    );
    const policy = w.live();
    assert.ok(!JSON.stringify(policy).includes('"0.0.0.0/0"'), "no default route anywhere in the policy");
    assert.equal(w.siteCond("lan", "Ready")?.reason, "Ready");
    assert.deepEqual(w.mc.errors, []);
  });
});
