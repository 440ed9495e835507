/**
 * What the operator's steady-state polling costs a Headscale (issue 25): every authenticated call costs the
 * server a bcrypt check of the API key (juanfont/headscale hscontrol/db/api_key.go validateAPIKey) and the
 * pre-auth key list is its largest answer. A simulated minute of resyncs (egresses round robin, the Tailnet
 * every 10 s) at the default cadences, counted per part against the fake Headscale.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_CONFIG } from "../../src/config.js";
import { HeadscaleViews } from "../../src/headscale/view.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import { memoryEventRecorder } from "../../src/server/events.js";
import { type FakeHeadscale, useFakeHeadscale } from "../fakes/headscale/index.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { parentObject } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";
import { API, applyTailnet } from "../replicas/harness.js";

const EGRESSES = 12;
const SYNCS_PER_SECOND = 4;

const egress = (i: number) =>
  parentObject(
    "TailnetEgress",
    `e${i}`,
    { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "100.64.0.20", ports: [{ port: 5432 }] }] },
    { namespace: "shop" },
  );

/** GETs per part of the Headscale API. */
function reads(fake: FakeHeadscale) {
  const get = (path: RegExp) => fake.count("GET", path);
  return {
    preAuthKeys: get(/^\/api\/v1\/preauthkey$/),
    nodes: get(/^\/api\/v1\/node$/),
    policy: get(/^\/api\/v1\/policy$/),
    users: get(/^\/api\/v1\/user$/),
    apiKeys: get(/^\/api\/v1\/apikey$/),
    health: get(/^\/api\/v1\/health$/),
  };
}
const minus = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (b[k] ?? 0)]));

async function world(t: Parameters<typeof useFakeHeadscale>[0]) {
  const fake = await useFakeHeadscale(t);
  let clock = Date.now();
  const now = () => new Date(clock);
  const { cacheTTLSeconds, slowPartTTLSeconds } = DEFAULT_CONFIG.headscale;
  const views = new HeadscaleViews({ timeoutMs: 5000, cacheTTLSeconds, slowPartTTLSeconds, retries: 0, now });
  t.after(() => views.close());
  const deps = { views, now, metrics: createOperatorMetrics({ defaultMetrics: false }), events: memoryEventRecorder() };
  const { app } = await build(t, { config: { logLevel: "warn" }, server: { deps } });
  const mc = new FakeMetacontroller({ app });
  applyTailnet(mc, fake);
  for (let i = 0; i < EGRESSES; i++) mc.apply(egress(i));
  await mc.settle(10);
  const live = (kind: string, name: string, ns?: string) => mc.get(API, kind, name, ns) as K8sObject;
  /** `seconds` of steady state: SYNCS_PER_SECOND egress resyncs a second, the Tailnet every 10 s. */
  const run = async (seconds: number, each?: (second: number) => Promise<void>) => {
    let k = 0;
    for (let s = 0; s < seconds; s++) {
      await each?.(s);
      if (s % 10 === 0) await mc.syncParent(live("Tailnet", "home"));
      for (let j = 0; j < SYNCS_PER_SECOND; j++)
        await mc.syncParent(live("TailnetEgress", `e${k++ % EGRESSES}`, "shop"));
      clock += 1000;
    }
  };
  return { fake, mc, run, advance: (ms: number) => (clock += ms), live };
}

describe("steady-state polling of Headscale (issue 25)", () => {
  it("the slow cadence is never shorter than cacheTTLSeconds and is cacheTTLSeconds when not set", async (t) => {
    const fake = await useFakeHeadscale(t);
    let clock = Date.now();
    const now = () => new Date(clock);
    const conn = { url: fake.url, apiKey: fake.apiKey };
    const usersRead = async (opts: { cacheTTLSeconds: number; slowPartTTLSeconds?: number }) => {
      const views = new HeadscaleViews({ timeoutMs: 5000, retries: 0, now, ...opts });
      t.after(() => views.close());
      const before = fake.count("GET", /^\/api\/v1\/user$/);
      await views.view(conn).users();
      clock += 5000;
      await views.view(conn).users();
      return fake.count("GET", /^\/api\/v1\/user$/) - before;
    };
    assert.equal(await usersRead({ cacheTTLSeconds: 0 }), 2, "no cache: every read asks (tests, render)");
    assert.equal(await usersRead({ cacheTTLSeconds: 10, slowPartTTLSeconds: 1 }), 1, "floored at cacheTTLSeconds");
    assert.equal(await usersRead({ cacheTTLSeconds: 1, slowPartTTLSeconds: 60 }), 1, "slow part kept 60 s");
  });

  it("a minute of resyncs reads the node list and policy once per cacheTTL, the rest once per slowPartTTL", async (t) => {
    const w = await world(t);
    // past every cached part's TTL, so the minute starts cold like any minute of a long run
    w.advance(120_000);
    const before = reads(w.fake);
    const writes = w.fake.writes().length;
    await w.run(60);
    const calls = minus(reads(w.fake), before);
    // per 10 s: nodes and the policy (the egress and Tailnet read them each TTL)
    assert.ok(calls.nodes <= 6 && calls.nodes >= 5, `node list read ${calls.nodes} times`);
    assert.ok(calls.policy <= 6 && calls.policy >= 5, `policy read ${calls.policy} times`);
    // per 60 s: what changes rarely or through us
    assert.deepEqual(
      { preAuthKeys: calls.preAuthKeys, users: calls.users, apiKeys: calls.apiKeys, health: calls.health },
      { preAuthKeys: 1, users: 1, apiKeys: 1, health: 1 },
    );
    assert.deepEqual(
      w.fake
        .writes()
        .slice(writes)
        .map((r) => `${r.method} ${r.path}`),
      [],
      "steady state writes nothing",
    );
    assert.deepEqual(w.mc.errors, []);
    w.fake.assertNoViolations();
  });

  it("a failing read of any part makes the next Tailnet sync ask /health again, within the slow TTL", async (t) => {
    const w = await world(t);
    w.advance(120_000);
    await w.run(11);
    const before = reads(w.fake);
    // the server answers 500 to the node list once, 20 s into a minute of cached health
    await w.run(20, async (s) => {
      if (s === 5)
        await w.fake.fault({ kind: "status", method: "GET", path: /^\/api\/v1\/node$/, status: 500, times: 1 });
    });
    const calls = minus(reads(w.fake), before);
    assert.ok(calls.health >= 1, `health read again after the failure (${calls.health})`);
    assert.ok(calls.apiKeys >= 1, `API keys read again after the failure (${calls.apiKeys})`);
    assert.equal(calls.preAuthKeys, 0, "the key list is not re-read for a node-list failure");
    await w.fake.clearFaults();
  });

  it("a node registered with a key the cached list shows unused makes the next key read fresh", async (t) => {
    const w = await world(t);
    w.advance(120_000);
    await w.run(11);
    const ids = (w.live("TailnetEgress", "e0", "shop").status as { preAuthKeyIds?: string[] }).preAuthKeyIds ?? [];
    assert.equal(ids.length, 1, "e0 holds one key");
    // Headscale marks only a single-use key used (0.29.3 hscontrol/state/state.go createAndSaveNewNode:
    // `!PreAuthKey.Reusable`), as the gateway's were; the egress's reusable key is made single-use to get one.
    const key = w.fake.state.preAuthKeys.get(ids[0] as string);
    assert.ok(key);
    key.reusable = false;
    w.fake.registerWithKey(key.id, { name: "shop-e0" });
    assert.equal(key.used, true);
    const before = reads(w.fake);
    // the node list is re-read within its 10 s TTL; the key list then, not at the end of its minute
    await w.run(15);
    const calls = minus(reads(w.fake), before);
    assert.equal(calls.preAuthKeys, 1, "the key list was read again once, after the node list showed the key used");
    assert.deepEqual(w.mc.errors, []);
  });
});
