import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MockAgent } from "undici";
import type { HeadscaleClient } from "../../src/headscale/client.js";
import { keysWithTag } from "../../src/headscale/lists.js";
import type { HsPreAuthKey } from "../../src/headscale/types.js";
import { connectionKey, HeadscaleView, HeadscaleViews, type HeadscaleViewsOptions } from "../../src/headscale/view.js";
import { type FakeHeadscale, type FakeHeadscaleOptions, useFakeHeadscale } from "../fakes/headscale/index.js";

type After = { after: (fn: () => Promise<void> | void) => void };

/** A settable clock: the cache reads time only through it. */
function clock(start = Date.parse("2026-07-01T10:00:00Z")) {
  let ms = start;
  return {
    now: () => new Date(ms),
    advance: (delta: number) => {
      ms += delta;
    },
  };
}

async function setup(
  t: After,
  fakeOpts: FakeHeadscaleOptions = { policy: '{"tagOwners": {"tag:a": []}}' },
  viewOpts: Partial<HeadscaleViewsOptions> = {},
) {
  const fake = await useFakeHeadscale(t, fakeOpts);
  const time = clock();
  const views = new HeadscaleViews({ timeoutMs: 10_000, cacheTTLSeconds: 10, now: time.now, ...viewOpts });
  t.after(() => views.close());
  const view = views.view({ url: fake.url, apiKey: fake.apiKey });
  return { fake, time, views, view };
}

const nodeCalls = (fake: FakeHeadscale) => fake.count("GET", /^\/api\/v1\/node$/);

describe("HeadscaleView cache", () => {
  test("a part is reused within the TTL and refetched after it", async (t) => {
    const { fake, time, view } = await setup(t);
    const first = await view.nodes();
    assert.equal(first.ok, true);
    assert.deepEqual(first.at, time.now());
    time.advance(9_999);
    const second = await view.nodes();
    assert.equal(second, first, "same observation object");
    assert.equal(nodeCalls(fake), 1);
    time.advance(1);
    const third = await view.nodes();
    assert.notEqual(third, first);
    assert.equal(nodeCalls(fake), 2);
  });

  test("concurrent callers share one in-flight request", async (t) => {
    const { fake, view } = await setup(t);
    const results = await Promise.all(Array.from({ length: 50 }, () => view.users()));
    assert.equal(new Set(results).size, 1);
    assert.equal(fake.count("GET", /^\/api\/v1\/user$/), 1);
  });

  test("invalidate(part) drops one part, invalidate() all of them", async (t) => {
    const { fake, view } = await setup(t);
    await Promise.all([view.nodes(), view.policy()]);
    view.invalidate("nodes");
    await Promise.all([view.nodes(), view.policy()]);
    assert.equal(nodeCalls(fake), 2);
    assert.equal(fake.count("GET", /^\/api\/v1\/policy$/), 1);
    view.invalidate();
    await Promise.all([view.nodes(), view.policy()]);
    assert.equal(nodeCalls(fake), 3);
    assert.equal(fake.count("GET", /^\/api\/v1\/policy$/), 2);
  });

  test("a read in flight during invalidate() is not reused or cached afterwards", async (t) => {
    const { fake, view } = await setup(t);
    fake.addNode({ name: "before", tags: ["tag:a"] });
    const stale = view.nodes();
    view.invalidate("nodes");
    fake.addNode({ name: "after", tags: ["tag:a"] });
    const fresh = view.nodes();
    const [s, f] = await Promise.all([stale, fresh]);
    assert.notEqual(s, f);
    const again = await view.nodes();
    assert.equal(again, f, "the post-invalidate read is the cached one");
    assert.equal(nodeCalls(fake), 2);
  });

  test("failures are observations, cached for at most 2s", async (t) => {
    const { fake, time, view } = await setup(t, undefined, { retries: 0 });
    await fake.fault({ kind: "status", status: 500, path: /^\/api\/v1\/node$/ });
    const failed = await view.nodes();
    assert.equal(failed.ok, false);
    assert.ok(!failed.ok && failed.error.status === 500);
    await fake.clearFaults();
    time.advance(1_999);
    assert.equal(await view.nodes(), failed, "still the cached failure");
    assert.equal(nodeCalls(fake), 1);
    time.advance(1);
    const recovered = await view.nodes();
    assert.equal(recovered.ok, true);
    assert.equal(nodeCalls(fake), 2);
  });

  test("with a TTL under 2s failures expire with the TTL", async (t) => {
    const { fake, time, view } = await setup(t, undefined, { retries: 0, cacheTTLSeconds: 0.5 });
    await fake.fault({ kind: "status", status: 500, times: 1, path: /^\/api\/v1\/user$/ });
    assert.equal((await view.users()).ok, false);
    time.advance(500);
    assert.equal((await view.users()).ok, true);
  });

  test("nothing throws: a refused server comes back as an Obs error", async (t) => {
    const { fake, view } = await setup(t, undefined, { retries: 0 });
    await fake.fault({ kind: "refused" });
    const [nodes, policy, health, keys, apiKeys, caps] = await Promise.all([
      view.nodes(),
      view.policy(),
      view.apiHealth(),
      view.preAuthKeys(),
      view.apiKeys(),
      view.capabilities(),
    ]);
    for (const obs of [nodes, policy, health, keys, apiKeys]) {
      assert.equal(obs.ok, false);
      assert.ok(!obs.ok && obs.error.classification === "refused");
    }
    assert.ok(caps.ok);
    assert.deepEqual(caps.value, { nodeTags: null, nodeApprovedRoutes: null, policyCheck: null, policyMode: null });
  });

  test("policy() is null for an empty database and the policy otherwise", async (t) => {
    const { fake, view } = await setup(t, {});
    const empty = await view.policy();
    assert.deepEqual(empty.ok && empty.value, null);
    fake.setPolicy("{}");
    view.invalidate("policy");
    const live = await view.policy();
    assert.ok(live.ok && live.value?.policy === "{}");
    // A database error has the same "loading ACL from database" prefix, but is a failed read, not "none".
    await fake.fault({ kind: "databaseError", path: /^\/api\/v1\/policy$/ });
    view.invalidate("policy");
    const locked = await view.policy();
    assert.equal(locked.ok, false);
    assert.equal(!locked.ok && locked.error.detail, "loading ACL from database: database is locked (5) (SQLITE_BUSY)");
  });

  test("capabilities() probes policy/check once per TTL and reuses nodes/policy", async (t) => {
    const { fake, time, view } = await setup(t);
    fake.addNode({ name: "n", tags: ["tag:a"] });
    for (let i = 0; i < 3; i++) {
      const caps = await view.capabilities();
      assert.ok(caps.ok);
      assert.deepEqual(caps.value, {
        nodeTags: true,
        nodeApprovedRoutes: true,
        policyCheck: true,
        policyMode: "database",
      });
    }
    assert.equal(fake.count("POST", /^\/api\/v1\/policy\/check$/), 1);
    assert.deepEqual(fake.requests.find((r) => r.path === "/api/v1/policy/check")?.body, { policy: "{}" });
    assert.equal(nodeCalls(fake), 1);
    time.advance(10_000);
    await view.capabilities();
    assert.equal(fake.count("POST", /^\/api\/v1\/policy\/check$/), 2);
  });

  test("a wave of 1,000 syncs costs at most 5 HTTP calls", async (t) => {
    const { fake, view } = await setup(t);
    fake.addNode({ name: "n", tags: ["tag:a"] });
    const wave = Array.from({ length: 1000 }, () => Promise.all([view.nodes(), view.policy(), view.apiHealth()]));
    const results = await Promise.all(wave);
    assert.ok(results.every(([n, p, h]) => n.ok && p.ok && h.ok));
    assert.ok(fake.requests.length <= 5, `${fake.requests.length} calls`);
    assert.equal(fake.requests.length, 3);
  });
});

describe("HeadscaleViews", () => {
  test("one view per connection, keyed by a hash that does not contain the key", async (t) => {
    const { fake, views, view } = await setup(t);
    assert.equal(views.view({ url: fake.url, apiKey: fake.apiKey }), view);
    assert.notEqual(views.view({ url: fake.url, apiKey: `${fake.apiKey}x` }), view);
    assert.notEqual(views.view({ url: fake.url, apiKey: fake.apiKey, ca: "PEM" }), view);
    assert.equal(views.size, 3);
    const key = connectionKey({ url: fake.url, apiKey: fake.apiKey });
    assert.match(key, /^[0-9a-f]{64}$/);
    assert.ok(!key.includes(fake.apiKey));
  });

  test("views idle for 10 minutes are closed on the next view() call", async (t) => {
    const { fake, time, views, view } = await setup(t);
    await view.nodes();
    time.advance(10 * 60 * 1000 + 1);
    const other = views.view({ url: fake.url, apiKey: "other" });
    assert.equal(views.size, 1);
    const fresh = views.view({ url: fake.url, apiKey: fake.apiKey });
    assert.notEqual(fresh, view);
    assert.notEqual(fresh, other);
    // The evicted view's client is closed: no more requests go out through it.
    view.invalidate();
    const obs = await view.nodes();
    assert.ok(!obs.ok && obs.error.detail === "client closed");
  });

  test("close() closes every client", async (t) => {
    const { fake, views, view } = await setup(t);
    await views.close();
    const obs = await view.apiHealth();
    assert.ok(!obs.ok && obs.error.detail === "client closed");
    assert.equal(views.size, 0);
    assert.equal(fake.requests.length, 0);
  });

  test("dispatcherFactory and onRequest are passed to each client", async (t) => {
    const mock = new MockAgent();
    mock.disableNetConnect();
    t.after(() => mock.close());
    mock.get("https://hs.test").intercept({ path: "/api/v1/health" }).reply(200, { databaseConnectivity: true });
    const labels: string[] = [];
    const seen: Array<{ url: string; ca?: string }> = [];
    const views = new HeadscaleViews({
      timeoutMs: 5000,
      cacheTTLSeconds: 10,
      onRequest: (m) => labels.push(`${m.method} ${m.path} ${m.code}`),
      dispatcherFactory: (conn) => {
        seen.push(conn);
        return mock;
      },
    });
    t.after(() => views.close());
    const obs = await views.view({ url: "https://hs.test", apiKey: "secret", ca: "PEM" }).apiHealth();
    assert.ok(obs.ok && obs.value.databaseConnectivity);
    assert.deepEqual(seen, [{ url: "https://hs.test", ca: "PEM" }]);
    assert.deepEqual(labels, ["GET /api/v1/health 200"]);
  });
});

describe("HeadscaleView writes", () => {
  test("a write settles into an Outcome and drops the part it changed", async (t) => {
    const { fake, view } = await setup(t);
    const node = fake.addNode({ name: "n", tags: ["tag:a"] });
    const before = await view.nodes();
    assert.equal(before.ok && before.value.length, 1);
    const out = await view.deleteNode(node.id);
    assert.equal(out.ok, true);
    const after = await view.nodes();
    assert.equal(after.ok && after.value.length, 0, "the node list was read again");
    assert.equal(nodeCalls(fake), 2);
  });

  test("renameNode: an Outcome with the renamed node; the node list is read again, also after a refusal", async (t) => {
    const { fake, view } = await setup(t);
    fake.addNode({ name: "web", tags: ["tag:a"] });
    const node = fake.addNode({ name: "web", tags: ["tag:a"] });
    await view.nodes();
    const refused = await view.renameNode(node.id, "web");
    assert.equal(refused.ok, false);
    assert.equal(!refused.ok && refused.error.classification, "duplicate");
    assert.equal(!refused.ok && refused.error.detail, "node name is not unique: web");
    const out = await view.renameNode(node.id, "web-r1");
    assert.equal(out.ok && out.value.givenName, "web-r1");
    const listed = await view.nodes();
    assert.deepEqual(listed.ok && listed.value.map((n) => n.givenName), ["web", "web-r1"]);
    assert.equal(nodeCalls(fake), 2, "one read before, one after the writes");
    assert.deepEqual(
      fake.writes().map((r) => `${r.method} ${r.path}`),
      [`POST /api/v1/node/${node.id}/rename/web`, `POST /api/v1/node/${node.id}/rename/web-r1`],
    );
  });

  test("a definite refusal keeps the cache; a lost answer or a 404 drops it", async (t) => {
    const { fake, view } = await setup(t);
    await view.nodes();
    const rows: { name: string; status: number; refetch: boolean }[] = [
      { name: "400 refused", status: 400, refetch: false },
      { name: "404 already gone", status: 404, refetch: true },
      { name: "503 maybe applied", status: 503, refetch: true },
    ];
    for (const row of rows) {
      await fake.fault({ kind: "status", status: row.status, method: "DELETE", times: 1 });
      const calls = nodeCalls(fake);
      const out = await view.deleteNode("999");
      assert.equal(out.ok, false, row.name);
      await view.nodes();
      assert.equal(nodeCalls(fake) - calls, row.refetch ? 1 : 0, row.name);
    }
  });
  // issue 25: a mint used to drop the cached key list, so every sync after a mint re-read every key (a fresh
  // install of n objects: n lists of up to n keys). The created key is now added to what the view knows.
  const keyReads = (fake: FakeHeadscale) => fake.count("GET", /^\/api\/v1\/preauthkey$/);
  const mint = (view: HeadscaleView, tag: string) =>
    view.createPreAuthKey({
      aclTags: [tag],
      reusable: true,
      ephemeral: true,
      expiration: new Date(Date.now() + 3600_000),
    });

  test("a minted key joins the cached key list, masked, without a re-read", async (t) => {
    const { fake, view } = await setup(t);
    const before = await view.preAuthKeys();
    assert.equal(before.ok && before.value.length, 0);
    const created = await mint(view, "tag:a");
    assert.ok(created.ok);
    const after = await view.preAuthKeys();
    assert.equal(keyReads(fake), 1, "the list was not read again after the mint");
    assert.ok(after.ok);
    assert.deepEqual(
      after.value.map((k) => [k.id, k.aclTags]),
      [[created.value.id, ["tag:a"]]],
    );
    assert.equal(after.value[0].key.endsWith("-***"), true, "the cached copy never holds the secret");
    assert.ok(!JSON.stringify(after.value).includes(created.value.key), "no secret in the cache");
    assert.equal(keysWithTag(after.value, "tag:a")[0]?.id, created.value.id, "and the list's index has it");
  });

  test("a key minted while the list is being read is in that read's result", async () => {
    // Headscale answers each read with what it held when the read started (a snapshot), when the test lets it
    const held: HsPreAuthKey[] = [];
    const reads: { resolve: (v: HsPreAuthKey[]) => void; snapshot: HsPreAuthKey[] }[] = [];
    const listed = (id: string): HsPreAuthKey => ({
      user: null,
      id,
      key: `hskey-auth-${id.padStart(12, "0")}-***`,
      reusable: true,
      ephemeral: true,
      used: false,
      expiration: "2026-07-01T11:00:00Z",
      createdAt: "2026-07-01T10:00:00Z",
      aclTags: [`tag:k${id}`],
    });
    const client = {
      preAuthKeys: {
        list: () =>
          new Promise<HsPreAuthKey[]>((resolve) => reads.push({ resolve, snapshot: held.map((k) => ({ ...k })) })),
        create: async () => {
          const k = listed(String(held.length + 1));
          held.push(k);
          return { ...k, key: `hskey-auth-${k.id.padStart(12, "0")}-thesecretpart` };
        },
      },
    } as unknown as HeadscaleClient;
    const time = clock();
    const view = new HeadscaleView(client, 10_000, time.now);
    const reading = view.preAuthKeys();
    const created = await mint(view, "tag:k1");
    assert.ok(created.ok);
    reads[0]?.resolve(reads[0].snapshot);
    const read = await reading;
    assert.ok(read.ok);
    assert.deepEqual(
      read.value.map((k) => k.id),
      ["1"],
      "the read that started before the mint has the key added",
    );
    assert.equal(reads.length, 1);
    // a read that already lists the key (it landed before the read) does not get it twice
    view.invalidate("preAuthKeys");
    const again = view.preAuthKeys();
    const second = await mint(view, "tag:k2");
    assert.ok(second.ok);
    reads[1]?.resolve(held.map((k) => ({ ...k })));
    const both = await again;
    assert.deepEqual(both.ok && both.value.map((k) => k.id), ["1", "2"]);
    const cached = await view.preAuthKeys();
    assert.equal(cached, both, "and that read is what the cache holds");
    assert.equal(reads.length, 2);
  });

  test("a key the view added to its cached list is listed once when the list is read again", async (t) => {
    const { fake, view } = await setup(t);
    await mint(view, "tag:a");
    await view.preAuthKeys(); // read whole, remembered by the client for the next read
    const b = await mint(view, "tag:b"); // added to that cached list
    assert.ok(b.ok);
    view.invalidate("preAuthKeys");
    const again = await view.preAuthKeys(); // Headscale's answer: the last one with b appended
    assert.ok(again.ok);
    assert.deepEqual(
      again.value.map((k) => k.aclTags[0]),
      ["tag:a", "tag:b"],
    );
    assert.equal(keyReads(fake), 2);
  });

  test("a mint whose answer was lost drops the cached key list (it may have landed)", async (t) => {
    const { fake, view } = await setup(t);
    await view.preAuthKeys();
    await fake.fault({ kind: "status", status: 503, method: "POST", times: 1 });
    const out = await mint(view, "tag:a");
    assert.equal(out.ok, false);
    await view.preAuthKeys();
    assert.equal(keyReads(fake), 2);
  });
});
