/**
 * TailnetSite and Tailnet together, end to end: the Metacontroller emulator drives the real hook
 * server with the real Tailnet and TailnetSite kinds against the fake Headscale 0.29, so the
 * Tailnet's policy writes, Headscale's auto-approval (re-run on every PUT, additive only) and the
 * site's own approvals and withdrawals all meet. Exit-node sites and what deleting a site does.
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HookKind } from "../../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { parseHuJson } from "../../../../src/policy/hujson.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";
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
  // parsed as Headscale does: HuJSON (the operator's marker line is a comment)
  const live = () => {
    const parsed = parseHuJson(fake.state.policies.at(-1)?.text ?? "{}");
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed.value as Record<string, unknown>;
  };
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

describe("TailnetSite: a default route in pieces is an exit route (issue 31 item 5)", () => {
  it("prefixes that together cover the address space are InvalidSpec; nothing of them is approved or rendered", async (t) => {
    const w = await world(t, { spec: { reservedNetworks: [] } });
    const halves = ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"];
    const router = w.fake.addNode({ name: "router-1", tags: [ROUTER], availableRoutes: [LAN, ...halves] });
    applySite(w.mc, "lan", [LAN], [ROUTER], "2026-10-01T00:00:00Z"); // older: the halves overlap it
    applySite(w.mc, "halves", halves, [ROUTER]);
    applySite(w.mc, "v6", ["::/1", "8000::/1"], ["tag:router-v6"]);
    await w.mc.settle();
    assert.equal(w.siteCond("halves", "Ready")?.reason, "InvalidSpec");
    assert.equal(
      w.siteCond("halves", "Ready")?.message,
      "spec.prefixes: 0.0.0.0/1, 128.0.0.0/1, ::/1, 8000::/1 together cover 0.0.0.0/0, ::/0: a default route in pieces; an exit-node site lists exactly 0.0.0.0/0 and ::/0 (Headscale approves them only through autoApprovers.exitNode)",
    );
    assert.equal(
      w.siteCond("v6", "Ready")?.message,
      "spec.prefixes: ::/1, 8000::/1 together cover ::/0: a default route in pieces; an exit-node site lists exactly 0.0.0.0/0 and ::/0 (Headscale approves them only through autoApprovers.exitNode)",
    );
    assert.equal(w.tailnetCond("PolicyApplied")?.reason, "InSync", w.tailnetCond("PolicyApplied")?.message);
    const approvers = w.live().autoApprovers as { routes: Record<string, string[]> };
    assert.deepEqual(approvers.routes, { [LAN]: [ROUTER] });
    assert.deepEqual(w.fake.state.nodes.get(router.id)?.approvedRoutes, [LAN]);
    assert.deepEqual(w.mc.errors, []);
  });

  it("halves in two sites on one router: the second half is neither auto-approved nor approved by the writer", async (t) => {
    const w = await world(t, { spec: { reservedNetworks: [] } });
    const router = w.fake.addNode({ name: "router-1", tags: [ROUTER], availableRoutes: ["0.0.0.0/1", "128.0.0.0/1"] });
    // the older site keeps its half, whatever the names (the writer's order, architecture.md)
    applySite(w.mc, "low", ["0.0.0.0/1"], [ROUTER]);
    applySite(w.mc, "high", ["128.0.0.0/1"], [ROUTER], "2026-11-02T00:00:00Z");
    await w.mc.settle();
    const approvers = w.live().autoApprovers as { routes: Record<string, string[]> };
    assert.deepEqual(approvers.routes, { "0.0.0.0/1": [ROUTER] });
    assert.deepEqual(w.fake.state.nodes.get(router.id)?.approvedRoutes, ["0.0.0.0/1"]);
    assert.match(
      w.tailnetCond("PolicyRendered")?.message ?? "",
      /left out \(Headscale would reject them\): .*128\.0\.0\.0\/1/,
    );
    assert.deepEqual(w.mc.errors, []);
  });
});

describe("TailnetSite left out of the policy (issue 31 item 4)", () => {
  it("a site whose grant names an undefined group is left out; it says LeftOutOfPolicy and the other site's policy is written", async (t) => {
    const w = await world(t, { spec: { reservedNetworks: [] } });
    w.fake.addNode({ name: "router-1", tags: [ROUTER], availableRoutes: [LAN, "192.168.30.0/24"] });
    applySite(w.mc, "lan", [LAN], [ROUTER]);
    w.mc.apply(
      parentObject(
        "TailnetSite",
        "typo",
        {
          tailnetRef: { name: "home" },
          prefixes: ["192.168.30.0/24"],
          advertiserTags: [ROUTER],
          allowFrom: ["group:engg"],
        },
        { namespace: "net", creationTimestamp: "2026-11-02T00:00:00Z" },
      ),
    );
    await w.mc.settle();
    assert.equal(w.tailnetCond("PolicyApplied")?.reason, "InSync", w.tailnetCond("PolicyApplied")?.message);
    const approved = w.siteCond("typo", "Approved");
    assert.deepEqual(
      [approved?.status, approved?.reason, approved?.message],
      [
        "False",
        "LeftOutOfPolicy",
        `Tailnet home left this object's contribution out of the policy (InvalidContribution), so that everyone else's is written: grant source "group:engg": group not defined in policy`,
      ],
    );
    assert.equal(w.siteCond("typo", "Ready")?.reason, "LeftOutOfPolicy");
    assert.equal(w.siteCond("lan", "Ready")?.reason, "Ready");
    const approvers = w.live().autoApprovers as { routes: Record<string, string[]> };
    assert.deepEqual(approvers.routes, { [LAN]: [ROUTER] });
    assert.deepEqual(w.mc.errors, []);

    // fixed in Git: rendered again, the condition clears
    applySite(w.mc, "typo", ["192.168.30.0/24"], [ROUTER], "2026-11-02T00:00:00Z");
    await w.mc.settle();
    assert.equal(w.siteCond("typo", "Approved")?.reason, "Approved");
    assert.equal(
      (w.live().autoApprovers as { routes: Record<string, string[]> }).routes["192.168.30.0/24"]?.[0],
      ROUTER,
    );
  });
});

const LAB = "192.168.20.0/24";
const OWN = "10.50.0.0/16";
const approveCalls = (fake: { requests: { method: string; path: string; body?: unknown }[] }) =>
  fake.requests.filter((r) => r.path.endsWith("/approve_routes"));
const putIndexes = (fake: { requests: { method: string; path: string }[] }) =>
  fake.requests.flatMap((r, i) => (r.method === "PUT" && r.path === "/api/v1/policy" ? [i] : []));

/** A router serving two subnet sites and an exit-node site, plus a route an administrator approved. */
async function sharedRouter(t: Ctx, opts: WorldOpts = {}) {
  const w = await world(t, { spec: { reservedNetworks: [] }, ...opts });
  const router = w.fake.addNode({
    name: "router-1",
    tags: [ROUTER],
    availableRoutes: [LAN, LAB, OWN, ...EXIT_ROUTES],
    approvedRoutes: [OWN],
  });
  applySite(w.mc, "lan", [LAN], [ROUTER]);
  applySite(w.mc, "lab", [LAB], [ROUTER], "2026-11-02T00:00:00Z");
  applySite(w.mc, "exit", EXIT_ROUTES, [ROUTER], "2026-11-03T00:00:00Z");
  await w.mc.settle();
  const approved = () => w.fake.state.nodes.get(router.id)?.approvedRoutes;
  assert.deepEqual(approved(), ["0.0.0.0/0", OWN, LAN, LAB, "::/0"]);
  assert.equal(w.siteCond("lan", "Ready")?.reason, "Ready");
  return { ...w, router, approved };
}

describe("TailnetSite + Tailnet end to end: deleting a site withdraws its approvals", () => {
  it("the Tailnet drops the site's autoApprovers first, then finalize withdraws exactly its prefix; a reload does not bring it back", async (t) => {
    const w = await sharedRouter(t);
    const before = w.fake.requests.length;
    w.mc.delete(API, "TailnetSite", "lan", "net");
    await w.mc.settle();
    assert.equal(w.mc.get(API, "TailnetSite", "lan", "net"), undefined, "finalized");
    assert.deepEqual(w.approved(), ["0.0.0.0/0", OWN, LAB, "::/0"], "other sites', exit and unmanaged routes stay");
    const routes = (w.live().autoApprovers as { routes: Record<string, string[]> }).routes;
    assert.deepEqual(Object.keys(routes), [LAB], "the live policy no longer auto-approves the deleted site's prefix");
    // Order: the policy PUT without the site comes before the withdrawal.
    const withdrawal = w.fake.requests.findIndex((r, i) => i >= before && r.path.endsWith("/approve_routes"));
    assert.ok(withdrawal > 0, "one withdrawal was sent");
    assert.deepEqual(w.fake.requests[withdrawal].body, { routes: ["0.0.0.0/0", OWN, LAB, "::/0"] });
    assert.ok(
      putIndexes(w.fake).some((i) => i >= before && i < withdrawal),
      "the policy was written first",
    );
    // Headscale re-runs auto-approval on every reload: the withdrawn route stays withdrawn.
    w.fake.setPolicy(w.fake.state.policies.at(-1)?.text ?? "");
    assert.deepEqual(w.approved(), ["0.0.0.0/0", OWN, LAB, "::/0"]);
    assert.deepEqual(w.mc.errors, []);
  });

  it("a finalize that runs before the Tailnet re-rendered waits (Ready=False/Withdrawing) and writes nothing", async (t) => {
    const w = await sharedRouter(t);
    const sent = approveCalls(w.fake).length;
    w.mc.delete(API, "TailnetSite", "lan", "net");
    const deleting = w.mc.get(API, "TailnetSite", "lan", "net");
    assert.ok(deleting);
    await w.mc.syncParent(deleting);
    assert.equal(w.siteCond("lan", "Ready")?.reason, "Withdrawing");
    assert.equal(
      w.siteCond("lan", "Ready")?.message,
      `withdrawing route approvals: waiting on ${LAN} on router-1 (Tailnet home has not written the policy without this site yet: it still auto-approves it through autoApprovers.routes["${LAN}"] for ${ROUTER})`,
    );
    assert.equal(approveCalls(w.fake).length, sent, "nothing withdrawn while the live policy would re-approve it");
    assert.ok(w.mc.get(API, "TailnetSite", "lan", "net"));
    await w.mc.settle();
    assert.equal(w.mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.deepEqual(w.approved(), ["0.0.0.0/0", OWN, LAB, "::/0"]);
    assert.deepEqual(w.mc.errors, []);
  });

  it("deleting the exit-node site withdraws the exit pair only", async (t) => {
    const w = await sharedRouter(t);
    w.mc.delete(API, "TailnetSite", "exit", "net");
    await w.mc.settle();
    assert.equal(w.mc.get(API, "TailnetSite", "exit", "net"), undefined);
    assert.deepEqual(w.approved(), [OWN, LAN, LAB]);
    assert.equal((w.live().autoApprovers as { exitNode?: string[] }).exitNode, undefined);
    assert.deepEqual(w.mc.errors, []);
  });

  it("a route the base policy also auto-approves is not the site's alone: kept, and the deletion is not held", async (t) => {
    const w = await sharedRouter(t);
    w.mc.apply(
      baseConfigMap(`{
  "groups": { "group:eng": ["alice@"], "group:platform": ["alice@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
  "autoApprovers": { "routes": { "192.168.0.0/16": ["${ROUTER}"] } },
}`),
    );
    await w.mc.settle();
    w.mc.delete(API, "TailnetSite", "lan", "net");
    await w.mc.settle();
    assert.equal(w.mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.deepEqual(w.approved(), ["0.0.0.0/0", OWN, LAN, LAB, "::/0"], "the base policy's approval stays");
    assert.deepEqual(w.mc.errors, []);
  });

  it("the same entry in the base policy: the deletion waits, then keeps the route after the wait and is released", async (t) => {
    const w = await sharedRouter(t);
    w.mc.apply(
      baseConfigMap(`{
  "groups": { "group:eng": ["alice@"], "group:platform": ["alice@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
  "autoApprovers": { "routes": { "${LAN}": ["${ROUTER}"] } },
}`),
    );
    await w.mc.settle();
    w.mc.delete(API, "TailnetSite", "lan", "net");
    await w.mc.settle();
    assert.equal(w.siteCond("lan", "Ready")?.reason, "Withdrawing", "indistinguishable from the site's own entry");
    w.advance(3 * 3600); // past deletionTimestamp + WITHDRAW_WAIT_SECONDS
    await w.mc.settle();
    assert.equal(w.mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.deepEqual(w.approved(), ["0.0.0.0/0", OWN, LAN, LAB, "::/0"]);
    assert.ok(w.logs.join("").includes("route approvals left in place"), "the kept route is logged");
    assert.deepEqual(w.mc.errors, []);
  });

  it("DryRun: the deletion writes nothing and is released", async (t) => {
    const w = await sharedRouter(t);
    const tn = w.mc.get(API, "Tailnet", "home");
    assert.ok(tn);
    const spec = tn.spec as { policy: Record<string, unknown> };
    w.mc.apply({ ...tn, spec: { ...spec, policy: { ...spec.policy, mode: "DryRun" } } });
    await w.mc.settle();
    const writes = w.fake.writes().length;
    w.mc.delete(API, "TailnetSite", "lan", "net");
    await w.mc.settle();
    assert.equal(w.mc.get(API, "TailnetSite", "lan", "net"), undefined);
    assert.equal(w.fake.writes().length, writes);
    assert.deepEqual(w.approved(), ["0.0.0.0/0", OWN, LAN, LAB, "::/0"]);
    assert.ok(w.logs.join("").includes("no route approval is withdrawn"));
    assert.deepEqual(w.mc.errors, []);
  });
});
