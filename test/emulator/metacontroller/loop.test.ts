import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { MetacontrollerLoop } from "../../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../../src/emulator/metacontroller/types.js";
import { FakeMetacontroller } from "../../fakes/metacontroller.js";
import { parentObject } from "../../fixtures/hooks.js";
import { build } from "../../helpers/server.js";

/** A finalize answering finalized: true with a child: the parent is gone and the child never applied. */
async function finalizedRemovesParent(t: TestContext) {
  const { kindModules } = await import("../../../src/kinds/composite/index.js");
  const base = kindModules.get("egress");
  assert.ok(base);
  const kinds = new Map(kindModules);
  const extra: Obj = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "late" }, data: { a: "b" } };
  const kept: Obj = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kept" }, data: { a: "b" } };
  kinds.set("egress", {
    ...base,
    sync: async (req, deps) => {
      const r = await base.sync(req, deps);
      return { ...r, children: [...r.children, kept] };
    },
    finalize: async (req, deps) => {
      const r = await base.finalize(req, deps);
      return { ...r, finalized: true, children: [...r.children, extra] };
    },
  });
  const { app } = await build(t, { server: { kinds } });
  const applied: string[] = [];
  const loop = new MetacontrollerLoop({ app, checkChild: (c) => applied.push(`${c.kind}/${c.metadata.name}`) });
  const parent = loop.apply(
    parentObject(
      "TailnetEgress",
      "db",
      { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
      { namespace: "shop" },
    ),
  );
  await loop.settle();
  assert.ok(loop.get("v1", "ConfigMap", "kept", "shop"), "the egress has a child before the delete");
  applied.length = 0;
  loop.delete("tailnet.internal/v1alpha1", "TailnetEgress", "db", "shop");
  await loop.settle();
  assert.ok(loop.calls.some((c) => c.hook === "finalize"));
  assert.deepEqual(applied, [], "no child of a finalized: true answer is applied");
  assert.equal(loop.get("v1", "ConfigMap", "late", "shop"), undefined);
  assert.equal(loop.get("v1", "ConfigMap", "kept", "shop"), undefined);
  assert.equal(loop.get("tailnet.internal/v1alpha1", "TailnetEgress", "db", "shop"), undefined);
  assert.deepEqual(loop.childrenOf(parent), [], "the garbage collector removed the children");
}

/** The sync's related map has a group for every rule of the customize answer, even an empty one. */
async function oneGroupPerRelatedRule(t: TestContext) {
  const { app } = await build(t);
  const mc = new FakeMetacontroller({ app });
  mc.apply(
    parentObject(
      "TailnetEgress",
      "db",
      { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
      { namespace: "shop" },
    ),
  );
  await mc.settle();
  const sync = mc.calls.find((c) => c.hook === "sync");
  assert.ok(sync);
  const related = (sync.body as { related: Record<string, Record<string, unknown>> }).related;
  // the egress's rules name tailnets, secrets, its namespace, pods and services (none of them exists here),
  // and every egress, ingress and gateway (whose agent nodes it may not reach unasked): only itself exists
  assert.deepEqual(Object.keys(related).sort(), [
    "Namespace.v1",
    "Pod.v1",
    "Secret.v1",
    "Service.v1",
    "Tailnet.tailnet.internal/v1alpha1",
    "TailnetEgress.tailnet.internal/v1alpha1",
    "TailnetGateway.tailnet.internal/v1alpha1",
    "TailnetIngress.tailnet.internal/v1alpha1",
  ]);
  for (const [type, group] of Object.entries(related))
    assert.deepEqual(Object.keys(group), type.startsWith("TailnetEgress.") ? ["shop/db"] : [], type);
}

describe("the Metacontroller emulator against the real server", () => {
  it("syncs every kind to a fixpoint with a stable status, then finalizes", async (t) => {
    const { app } = await build(t);
    const mc = new FakeMetacontroller({ app });
    mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      }),
    );
    mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        { tailnetRef: { name: "home" }, prefixes: ["192.168.1.0/24"], advertiserTags: ["tag:router"] },
        { namespace: "net" },
      ),
    );
    const rounds = await mc.settle();
    assert.ok(rounds <= 3, `settled in ${rounds} rounds`);
    assert.deepEqual(mc.errors, []);
    const before = JSON.stringify(mc.status("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net"));
    assert.equal(await mc.settle(), 1);
    assert.equal(JSON.stringify(mc.status("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net")), before);
    assert.equal(mc.calls.filter((c) => c.hook === "customize").length, 2, "customize is cached per uid+generation");
    mc.delete("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net");
    await mc.settle();
    assert.equal(mc.get("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net"), undefined);
    assert.ok(mc.calls.some((c) => c.hook === "finalize" && c.parent === "net/lan"));
  });

  it("rejects a status the CRD would prune (the hot-loop guard)", async (t) => {
    const { kindModules } = await import("../../../src/kinds/composite/index.js");
    const base = kindModules.get("site");
    assert.ok(base);
    const kinds = new Map(kindModules);
    kinds.set("site", { ...base, sync: async () => ({ status: { bogus: 1 }, children: [] }) });
    const { app } = await build(t, { server: { kinds } });
    const mc = new FakeMetacontroller({ app });
    mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        { tailnetRef: { name: "home" }, prefixes: ["10.0.0.0/8"], advertiserTags: ["tag:r"] },
        { namespace: "n" },
      ),
    );
    await assert.rejects(mc.settle(), /fields the CRD prunes/);
  });

  it("sends one group per related rule of the customize answer, empty when nothing matches", oneGroupPerRelatedRule);

  it("refuses a customize answer the strict v2 decoder would refuse", async (t) => {
    const { default: Fastify } = await import("fastify");
    for (const [answer, error] of [
      [{ relatedResources: [], events: [] }, /strict v2 decode of the customize answer fails on key events/],
      [{ relatedResources: [{ apiVersion: "v1", resource: "pods", note: 1 }] }, /related rule fails on key note/],
      [
        { relatedResources: [{ apiVersion: "v1", resource: "pods", labelSelector: { matchLabel: {} } }] },
        /label selector fails on key matchLabel/,
      ],
    ] as const) {
      // a server that answers exactly this (ours drops such keys: src/server/hooks.ts)
      const raw = Fastify();
      raw.post("/hooks/site/customize", async () => answer);
      t.after(() => raw.close());
      const loop = new MetacontrollerLoop({ app: raw });
      loop.apply(
        parentObject(
          "TailnetSite",
          "lan",
          { tailnetRef: { name: "home" }, prefixes: ["10.0.0.0/8"], advertiserTags: ["tag:r"] },
          { namespace: "n" },
        ),
      );
      await assert.rejects(loop.settle(), error);
    }
  });

  it("finalized: true removes the parent without applying the children of that answer", finalizedRemovesParent);
});

describe("the loop as the real Metacontroller (issue 24)", () => {
  /** An egress kind whose sync answers `children(n)` and a status counting its syncs, seeing `seen`. */
  async function countingLoop(
    t: { after: (fn: () => Promise<void> | void) => void },
    children: (n: number) => Obj[],
    lag = false,
  ) {
    const { default: Fastify } = await import("fastify");
    const raw = Fastify();
    const seen: unknown[] = [];
    let n = 0;
    raw.post("/hooks/egress/customize", async () => ({ relatedResources: [] }));
    raw.post("/hooks/egress/sync", async (req) => {
      const body = req.body as { parent: Obj };
      seen.push(body.parent.status?.n);
      n++;
      return { status: { n }, children: children(n) };
    });
    t.after(() => raw.close());
    const loop = new MetacontrollerLoop({ app: raw, parentCacheLag: lag });
    const parent = loop.apply(
      parentObject(
        "TailnetEgress",
        "db",
        { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
        { namespace: "n" },
      ),
    );
    const sync = async () => {
      const live = loop.get(parent.apiVersion, parent.kind, parent.metadata.name, "n");
      if (!live) throw new Error("no parent");
      await loop.syncParent(loop.cachedParent(live));
    };
    return { loop, seen, sync };
  }

  it("parentCacheLag: the sync after a status write sees the parent without it, the next one with it", async (t) => {
    const lagging = await countingLoop(t, () => [], true);
    for (let i = 0; i < 4; i++) await lagging.sync();
    assert.deepEqual(lagging.seen, [undefined, undefined, 2, 2]);
    const live = await countingLoop(t, () => [], false);
    for (let i = 0; i < 4; i++) await live.sync();
    assert.deepEqual(live.seen, [undefined, 1, 2, 3]);
  });

  it("an update whose merge collapses two ports is refused as the API server refuses it; the child stays", async (t) => {
    const svc = (n: number): Obj => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "dns", labels: { sync: String(n) } },
      spec: {
        ports: [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "dns-tcp", port: 53, protocol: "TCP" },
        ],
      },
    });
    const { loop, sync } = await countingLoop(t, (n) => [svc(n)]);
    await sync();
    assert.deepEqual(loop.errors, [], "a create is not merged");
    await sync();
    assert.deepEqual(loop.errors, [
      'update Service n/dns: spec.ports[1].name: Duplicate value: "dns-tcp"; spec.ports[1].port: Duplicate value: {"port":53,"protocol":"TCP"}',
    ]);
    assert.equal(
      loop.get("v1", "Service", "dns", "n")?.metadata.labels?.sync,
      "1",
      "the refused update changed nothing",
    );
  });
});
