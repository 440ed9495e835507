/**
 * Two clusters on one Headscale (docs/OPERATIONS.md "Several clusters on one Headscale"): two hook servers with
 * their own clusterName, view cache and Metacontroller, one fake Headscale. Each operator rewrites only its own
 * section; racing syncs end with both sections live, no repeat PUT and no flapping; a write another writer undoes
 * before the read-back is merged and written again (WriteContended when it never holds).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { VERIFY_SHARED_WRITE_SECONDS } from "../../../../src/kinds/composite/tailnet/act.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { operatorWrittenHash } from "../../../../src/policy/marker.js";
import { parseShared } from "../../../../src/policy/sections.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import type { FakeHeadscale } from "../../../fakes/headscale/index.js";
import { useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { build } from "../../../helpers/server.js";
import { apiKeySecret, baseConfigMap, egress, ingress, NOW, tailnet, tailnetSpec } from "./fixtures.js";
import { API, LIVE, tailnetOnlyKinds } from "./harness.js";

type After = { after: (fn: () => Promise<void> | void) => void };

/** One cluster: its own operator (clusterName), view cache and Metacontroller; its Tailnet "home" with its own uid. */
async function cluster(
  t: After,
  fake: FakeHeadscale,
  name: string,
  opts: { base: boolean; now: () => Date; uid?: string },
) {
  // no cache: each sync reads what the other cluster wrote (the clock stands still here)
  const views = new HeadscaleViews({ timeoutMs: 3000, cacheTTLSeconds: 0, now: opts.now, retries: 0 });
  t.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const { app, logs } = await build(t, {
    config: { clusterName: name },
    server: { deps: { views, now: opts.now, events: memoryEventRecorder(), metrics }, kinds: tailnetOnlyKinds() },
  });
  const mc = new FakeMetacontroller({ app });
  mc.apply(apiKeySecret(fake.apiKey));
  const spec = opts.base ? tailnetSpec() : tailnetSpec({ policy: { mode: "Apply", tagOwners: ["group:platform"] } });
  if (opts.base) mc.apply(baseConfigMap());
  spec.headscale = { ...(spec.headscale as Record<string, unknown>), url: fake.url };
  const parent = tailnet(spec);
  parent.metadata.uid = opts.uid ?? `uid-${name}`;
  mc.apply(parent);
  const reason = (type: string) => mc.condition("Tailnet", "home", type)?.reason;
  /** PUTs this operator sent (its log line per written policy). */
  const puts = () => logs.filter((l) => l.includes('"msg":"Headscale policy written"')).length;
  const metricsText = async () => (await app.inject({ method: "GET", url: "/metrics" })).body;
  const view = () => views.view({ url: fake.url, apiKey: fake.apiKey });
  return { name, mc, reason, puts, metricsText, view, apply: (o: K8sObject) => mc.apply(o) };
}

type Cluster = Awaited<ReturnType<typeof cluster>>;

function live(fake: FakeHeadscale): string {
  const stored = fake.state.policies.at(-1);
  if (!stored) throw new Error("Headscale stores no policy");
  return stored.text;
}

/** The section ids in the live policy and the tags its body owns. */
function summary(fake: FakeHeadscale) {
  const text = live(fake);
  const body = JSON.parse(text.slice(text.indexOf("\n{") + 1)) as { tagOwners?: Record<string, string[]> };
  return {
    sections: parseShared(text).sections.map((s) => s.data.id),
    tags: Object.keys(body.tagOwners ?? {}).sort(),
    intact: operatorWrittenHash(text) !== undefined,
  };
}

async function world(t: After) {
  const now = () => NOW;
  const fake = await useFakeHeadscale(t, { policy: LIVE, now });
  const east = await cluster(t, fake, "east", { base: true, now });
  const west = await cluster(t, fake, "west", { base: false, now });
  return { fake, east, west };
}

/** Both clusters settle at once (their hooks interleave at every Headscale call), then once more each. */
async function settleBoth(east: Cluster, west: Cluster): Promise<void> {
  await Promise.all([east.mc.settle(), west.mc.settle()]);
  await east.mc.settle();
  await west.mc.settle();
  for (const c of [east, west]) assert.deepEqual(c.mc.errors, [], `${c.name}: hook errors`);
}

describe("two clusters on one Headscale", () => {
  it("each writes its own section; racing creates and deletes end with both, no repeat PUT, drift quiet", async (t) => {
    const { fake, east, west } = await world(t);
    east.apply(ingress("grafana", "monitoring"));
    west.apply(egress("db", "shop"));
    await settleBoth(east, west);
    assert.deepEqual(summary(fake), {
      sections: ["east/home", "west/home"],
      tags: ["tag:k8s-monitoring-grafana", "tag:k8s-shop-db"],
      intact: true,
    });
    // interleaved: both change at once, twice
    east.apply(ingress("loki", "monitoring"));
    west.apply(ingress("kibana", "logging"));
    await Promise.all([east.mc.settle(), west.mc.settle()]);
    west.mc.delete(API, "TailnetEgress", "db", "shop");
    east.apply(egress("cache", "shop"));
    await settleBoth(east, west);
    assert.deepEqual(summary(fake), {
      sections: ["east/home", "west/home"],
      tags: ["tag:k8s-logging-kibana", "tag:k8s-monitoring-grafana", "tag:k8s-monitoring-loki", "tag:k8s-shop-cache"],
      intact: true,
    });
    for (const c of [east, west]) {
      assert.equal(c.reason("PolicyApplied"), "InSync", c.name);
      assert.equal(c.reason("SharedPolicy"), "Exclusive", c.name);
    }
    // resyncs: no PUT from either side, the text unchanged, no drift Event
    const before = { east: east.puts(), west: west.puts(), text: live(fake), stored: fake.state.policies.length };
    for (let i = 0; i < 3; i++) await settleBoth(east, west);
    assert.deepEqual(
      { east: east.puts(), west: west.puts(), text: live(fake), stored: fake.state.policies.length },
      before,
    );
    // every PUT is one an operator logged as written, or one another writer undid before its read-back
    const retried = (await east.metricsText()) + (await west.metricsText());
    const undone = [...retried.matchAll(/tailnet_policy_write_retries_total\{[^}]*\} (\d+)/g)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    assert.equal(fake.policyWrites, before.east + before.west + undone);
  });

  it("a write into a policy another cluster shares looks again within 5 s (a lost update is repaired soon); alone, no early look", async (t) => {
    const { fake, east, west } = await world(t);
    /** resyncAfterSeconds of this cluster's Tailnet syncs since call `mark`, once it wrote again. */
    const resyncsSince = (c: Cluster, mark: number, writes: number) => {
      assert.ok(c.puts() > writes, `${c.name} wrote`);
      return c.mc.calls
        .slice(mark)
        .filter((k) => k.hook === "sync" && k.kind === "Tailnet")
        .map((k) => (k.response as { resyncAfterSeconds?: number } | undefined)?.resyncAfterSeconds);
    };
    // east alone: its write needs no second look
    east.apply(ingress("grafana", "monitoring"));
    await east.mc.settle();
    let mark = east.mc.calls.length;
    const eastAlone = east.puts();
    east.apply(ingress("loki", "monitoring"));
    await east.mc.settle();
    assert.ok(!resyncsSince(east, mark, eastAlone).includes(VERIFY_SHARED_WRITE_SECONDS));
    // west writes its section beside east's: both now share, so a write asks for a look after 5 s
    west.apply(egress("db", "shop"));
    await settleBoth(east, west);
    mark = east.mc.calls.length;
    const eastShared = east.puts();
    east.apply(ingress("tempo", "monitoring"));
    await east.mc.settle();
    assert.ok(resyncsSince(east, mark, eastShared).includes(VERIFY_SHARED_WRITE_SECONDS));
    assert.deepEqual(summary(fake).sections, ["east/home", "west/home"]);
  });

  it("a tag both clusters generate: the newer cluster is refused, both say so, and neither rewrites", async (t) => {
    const { fake, east, west } = await world(t);
    east.apply(ingress("grafana", "monitoring"));
    await settleBoth(east, west);
    west.apply(ingress("grafana", "monitoring"));
    await settleBoth(east, west);
    assert.equal(east.reason("SharedPolicy"), "ClaimsContested");
    assert.equal(west.reason("SharedPolicy"), "ClaimsRefused");
    const owners = JSON.parse(live(fake).slice(live(fake).indexOf("\n{") + 1)).tagOwners;
    assert.deepEqual(owners["tag:k8s-monitoring-grafana"], ["group:platform"]);
    const puts = [east.puts(), west.puts()];
    await settleBoth(east, west);
    assert.deepEqual([east.puts(), west.puts()], puts, "no PUT repeats without a change");
  });

  it("another writer undoes a write before the read-back: merged and written again; never holding is WriteContended", async (t) => {
    const { fake, east, west } = await world(t);
    east.apply(ingress("grafana", "monitoring"));
    west.apply(egress("db", "shop"));
    await settleBoth(east, west);
    // from now on, right after east's PUT, another writer (one that read before it) puts the old text back
    const view = east.view();
    const put = view.putPolicy.bind(view);
    let undo = 1;
    view.putPolicy = async (text: string) => {
      const old = live(fake);
      const r = await put(text);
      if (undo-- > 0) fake.setPolicy(old);
      return r;
    };
    east.apply(ingress("loki", "monitoring"));
    await east.mc.settle();
    assert.match(await east.metricsText(), /tailnet_policy_write_retries_total\{tailnet="home",result="retried"\} 1/);
    assert.ok(summary(fake).tags.includes("tag:k8s-monitoring-loki"));
    assert.deepEqual(summary(fake).sections, ["east/home", "west/home"]);

    undo = Number.POSITIVE_INFINITY;
    east.apply(ingress("tempo", "monitoring"));
    await east.mc.syncParent(east.mc.get(API, "Tailnet", "home") as K8sObject);
    assert.equal(east.reason("PolicyApplied"), "WriteContended");
    assert.match(await east.metricsText(), /tailnet_policy_write_retries_total\{tailnet="home",result="gave_up"\} 1/);
    assert.ok(!summary(fake).tags.includes("tag:k8s-monitoring-tempo"), "the other writer's text stands");
    undo = 0;
    await east.mc.settle();
    assert.ok(summary(fake).tags.includes("tag:k8s-monitoring-tempo"), "the next sync merged and wrote it");
    assert.deepEqual(summary(fake).sections, ["east/home", "west/home"]);
  });

  it("a cluster that left: its section stays until removed by hand, then the others write the body without it", async (t) => {
    const { fake, east, west } = await world(t);
    east.apply(ingress("grafana", "monitoring"));
    west.apply(egress("db", "shop"));
    await settleBoth(east, west);
    west.mc.delete(API, "Tailnet", "home");
    await west.mc.settle();
    await east.mc.settle();
    assert.deepEqual(summary(fake).sections, ["east/home", "west/home"], "deleting a Tailnet rewrites nothing");
    // the administrator deletes west's line (headscale policy get / set); the marker still names the body
    const text = live(fake);
    fake.setPolicy(
      text
        .split("\n")
        .filter((l) => !l.startsWith('// tailnet-operator section {"id":"west/home"'))
        .join("\n"),
    );
    await east.mc.syncParent(east.mc.get(API, "Tailnet", "home") as K8sObject);
    await east.mc.settle();
    assert.deepEqual(summary(fake), { sections: ["east/home"], tags: ["tag:k8s-monitoring-grafana"], intact: true });
    assert.equal(east.reason("PolicyApplied"), "InSync");
  });

  it("two installations that kept one cluster name: the second writes nothing and says why", async (t) => {
    const now = () => NOW;
    const fake = await useFakeHeadscale(t, { policy: LIVE, now });
    const first = await cluster(t, fake, "default", { base: true, now });
    first.apply(ingress("grafana", "monitoring"));
    await first.mc.settle();
    const text = live(fake);
    const second = await cluster(t, fake, "default", { base: false, now, uid: "uid-other" });
    second.apply(egress("db", "shop"));
    await second.mc.settle();
    assert.equal(second.reason("PolicyApplied"), "ClusterNameTaken");
    assert.equal(second.reason("SharedPolicy"), "ClusterNameTaken");
    assert.equal(live(fake), text, "the first installation's policy, untouched");
    assert.equal(second.puts(), 0);
  });

  it("a policy the operator wrote before sections is adopted: rewritten once with this cluster's section", async (t) => {
    const now = () => NOW;
    const fake = await useFakeHeadscale(t, { policy: LIVE, now });
    const east = await cluster(t, fake, "east", { base: true, now });
    east.apply(ingress("grafana", "monitoring"));
    await east.mc.settle();
    // what the version before sections wrote: the marker and the same body, no lines
    const text = live(fake);
    const legacy = [text.split("\n")[0], text.slice(text.indexOf("\n{") + 1)].join("\n");
    fake.setPolicy(legacy);
    assert.equal(parseShared(legacy).legacy, true);
    const puts = east.puts();
    east.mc.apply({ ...(east.mc.get(API, "Tailnet", "home") as K8sObject) });
    await east.mc.settle();
    assert.equal(east.puts(), puts + 1);
    assert.deepEqual(summary(fake).sections, ["east/home"]);
    assert.equal(east.reason("PolicyApplied"), "InSync");
    assert.equal(live(fake), text);
  });
});
