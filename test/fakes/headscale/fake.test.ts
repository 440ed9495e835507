/** Behaviour of the fake Headscale itself, as the NOTES describe 0.29 (raw HTTP, no client in between). */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type FakeHeadscale, type FakeHeadscaleOptions, useFakeHeadscale } from "./index.js";

type After = { after: (fn: () => Promise<void> | void) => void };

async function call(fake: FakeHeadscale, method: string, path: string, body?: unknown, key = fake.apiKey) {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, type: res.headers.get("content-type") ?? "", text, json };
}

const ROUTER_POLICY = JSON.stringify({
  tagOwners: { "tag:router": [], "tag:exit": [], "tag:other": [] },
  autoApprovers: { routes: { "10.0.0.0/8": ["tag:router"] }, exitNode: ["tag:exit"] },
});

async function fakeWith(t: After, opts: FakeHeadscaleOptions = { policy: ROUTER_POLICY }) {
  return useFakeHeadscale(t, opts);
}

describe("auth and routing", () => {
  test("missing or wrong key: plain-text 401 even on unknown paths", async (t) => {
    const fake = await fakeWith(t);
    for (const path of ["/api/v1/node", "/api/v1/does-not-exist"]) {
      const res = await call(fake, "GET", path, undefined, "nope");
      assert.equal(res.status, 401);
      assert.equal(res.text, "Unauthorized");
      assert.match(res.type, /^text\/plain/);
    }
  });

  test("an expired API key is refused", async (t) => {
    const fake = await fakeWith(t);
    const [record] = fake.state.apiKeys.values();
    record.expiration = new Date(Date.now() - 1000);
    assert.equal((await call(fake, "GET", "/api/v1/node")).status, 401);
  });

  test("unknown /api/v1 path: 404 rpcStatus Not Found; /health needs no key", async (t) => {
    const fake = await fakeWith(t);
    const res = await call(fake, "GET", "/api/v1/routes");
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { code: 5, message: "Not Found", details: [] });
    const health = await fetch(`${fake.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "pass" });
  });

  test("an unparsable body is a 400 InvalidArgument", async (t) => {
    const fake = await fakeWith(t);
    const res = await call(fake, "PUT", "/api/v1/policy", "{not json");
    assert.equal(res.status, 400);
    assert.equal((res.json as { code: number }).code, 3);
  });

  test("the request log records method, path, query and parsed body", async (t) => {
    const fake = await fakeWith(t);
    await call(fake, "GET", "/api/v1/node?user=alice");
    await call(fake, "POST", "/api/v1/policy/check", { policy: "{}" });
    await call(fake, "PUT", "/api/v1/policy", { policy: "{}" });
    assert.deepEqual(fake.requests[0], {
      method: "GET",
      path: "/api/v1/node",
      query: "?user=alice",
      body: undefined,
      status: 500,
    });
    assert.equal(fake.count("POST", /policy\/check$/), 1);
    assert.deepEqual(
      fake.writes().map((r) => `${r.method} ${r.path}`),
      ["PUT /api/v1/policy"],
      "policy/check is not a write",
    );
  });
});

describe("policy", () => {
  test("PUT appends a version every time, even for identical text; check persists nothing", async (t) => {
    const fake = await fakeWith(t);
    await call(fake, "POST", "/api/v1/policy/check", { policy: ROUTER_POLICY });
    assert.equal(fake.state.policies.length, 1);
    for (let i = 0; i < 2; i++)
      assert.equal((await call(fake, "PUT", "/api/v1/policy", { policy: ROUTER_POLICY })).status, 200);
    assert.equal(fake.state.policies.length, 3);
    assert.equal(fake.policyWrites, 2);
  });

  test("rejections: PUT 500 code 2 'setting policy: …', check 400 code 3", async (t) => {
    const fake = await fakeWith(t);
    const text = '{"grants": [{"src": ["*"], "dst": ["*"]}]}';
    const put = await call(fake, "PUT", "/api/v1/policy", { policy: text });
    assert.equal(put.status, 500);
    assert.deepEqual(put.json, {
      code: 2,
      message: "setting policy: parsing policy: ip and app can not both be empty",
      details: [],
    });
    const check = await call(fake, "POST", "/api/v1/policy/check", { policy: text });
    assert.equal(check.status, 400);
    assert.deepEqual(check.json, { code: 3, message: "parsing policy: ip and app can not both be empty", details: [] });
    assert.equal(fake.policyWrites, 0);
  });

  test("HuJSON is accepted; syntax errors say 'parsing policy: parsing HuJSON: hujson: line L, column C'", async (t) => {
    const fake = await fakeWith(t, {});
    const ok = await call(fake, "PUT", "/api/v1/policy", { policy: '// c\n{"tagOwners": {"tag:a": [],},}' });
    assert.equal(ok.status, 200);
    const bad = await call(fake, "POST", "/api/v1/policy/check", { policy: '{"tagOwners": ' });
    assert.match((bad.json as { message: string }).message, /^parsing policy: parsing HuJSON: hujson: line 1, column /);
    const word = await call(fake, "POST", "/api/v1/policy/check", { policy: "{\n  not json" });
    assert.equal(
      (word.json as { message: string }).message,
      "parsing policy: parsing HuJSON: hujson: line 2, column 3: invalid literal: not",
    );
  });

  test("unknown top-level fields: 0.29 wording with a colon, 0.28 rejects grants without one", async (t) => {
    const fake = await fakeWith(t);
    const v29 = await call(fake, "POST", "/api/v1/policy/check", { policy: '{"grantz": []}' });
    assert.equal((v29.json as { message: string }).message, 'parsing policy: unknown field: "grantz"');
    const old = await useFakeHeadscale(t, { version: "0.28" });
    const v28 = await call(old, "PUT", "/api/v1/policy", { policy: '{"grants": []}' });
    assert.equal((v28.json as { message: string }).message, 'setting policy: parsing policy: unknown field "grants"');
    assert.deepEqual((await call(old, "POST", "/api/v1/policy/check", { policy: "{}" })).json, {
      code: 5,
      message: "Not Found",
      details: [],
    });
  });

  test("real 0.29 rejections through HTTP: undefined groups, default-route grants, nested unknown fields", async (t) => {
    const fake = await fakeWith(t);
    const put = await call(fake, "PUT", "/api/v1/policy", {
      policy: JSON.stringify({ autoApprovers: { routes: { "10.0.0.0/8": ["group:ops"] } } }),
    });
    assert.deepEqual(put.json, {
      code: 2,
      message: 'setting policy: parsing policy: group not defined in policy: "group:ops"',
      details: [],
    });
    const exit = await call(fake, "POST", "/api/v1/policy/check", {
      policy: JSON.stringify({ grants: [{ src: ["*"], dst: ["0.0.0.0/0"], ip: ["*"] }] }),
    });
    assert.deepEqual(
      [exit.status, (exit.json as { message: string }).message],
      [400, 'parsing policy: dst "0.0.0.0/0": to allow all IP addresses, use "*" or "autogroup:internet"'],
    );
    const nested = await call(fake, "POST", "/api/v1/policy/check", {
      policy: JSON.stringify({
        ssh: [
          { action: "accept", src: ["autogroup:member"], dst: ["autogroup:self"], users: ["root"], chekPeriod: "1h" },
        ],
      }),
    });
    assert.equal((nested.json as { message: string }).message, 'parsing policy: unknown field: "chekPeriod"');
    assert.equal(fake.policyWrites, 0);
  });

  test("tests run against the fake's nodes on check and PUT (no 'parsing policy:' prefix)", async (t) => {
    const fake = await fakeWith(t);
    const policy = JSON.stringify({
      tagOwners: { "tag:web": [], "tag:db": [] },
      acls: [{ action: "accept", src: ["tag:web"], dst: ["tag:db:5432"] }],
      tests: [{ src: "tag:web", accept: ["tag:db:5432"], deny: ["tag:db:22"] }],
    });
    const none = await call(fake, "PUT", "/api/v1/policy", { policy });
    assert.deepEqual(none.json, {
      code: 2,
      message: 'setting policy: test(s) failed:\ntag:web: source "tag:web" resolved to no IP addresses',
      details: [],
    });
    fake.addNode({ name: "web", tags: ["tag:web"] });
    fake.addNode({ name: "db", tags: ["tag:db"] });
    assert.equal((await call(fake, "PUT", "/api/v1/policy", { policy })).status, 200);
    const wrong = policy.replace('"deny":["tag:db:22"]', '"deny":["tag:db:5432"]');
    const check = await call(fake, "POST", "/api/v1/policy/check", { policy: wrong });
    assert.deepEqual(
      [check.status, (check.json as { message: string }).message],
      [400, "test(s) failed:\ntag:web -> tag:db:5432: expected DENIED, got ALLOWED"],
    );
  });

  test("file mode: GET has updatedAt null, PUT is refused with Headscale's message", async (t) => {
    const fake = await fakeWith(t, { policyMode: "file", policy: ROUTER_POLICY });
    assert.deepEqual((await call(fake, "GET", "/api/v1/policy")).json, { policy: ROUTER_POLICY, updatedAt: null });
    const put = await call(fake, "PUT", "/api/v1/policy", { policy: "{}" });
    assert.equal(put.status, 500);
    assert.deepEqual(put.json, { code: 2, message: "update is disabled for modes other than 'database'", details: [] });
    assert.equal(
      (await call(fake, "POST", "/api/v1/policy/check", { policy: "{}" })).status,
      200,
      "check works in file mode",
    );
  });

  test("empty database: GET is a 500 'acl policy not found'", async (t) => {
    const fake = await fakeWith(t, {});
    const res = await call(fake, "GET", "/api/v1/policy");
    assert.equal(res.status, 500);
    assert.equal((res.json as { message: string }).message, "loading ACL from database: acl policy not found");
  });
});

describe("routes", () => {
  test("PUT re-runs auto-approval for every node: contained prefixes by tag, exit routes via exitNode only", async (t) => {
    const fake = await fakeWith(t, {});
    const router = fake.addNode({
      name: "r",
      tags: ["tag:router"],
      availableRoutes: ["10.1.0.0/16", "192.168.1.0/24", "0.0.0.0/0"],
    });
    const exit = fake.addNode({ name: "e", tags: ["tag:exit"], availableRoutes: ["0.0.0.0/0", "::/0"] });
    const other = fake.addNode({ name: "o", tags: ["tag:other"], availableRoutes: ["10.2.0.0/16"] });
    await call(fake, "PUT", "/api/v1/policy", { policy: ROUTER_POLICY });
    assert.deepEqual(router.approvedRoutes, ["10.1.0.0/16"]);
    assert.deepEqual(exit.approvedRoutes, ["0.0.0.0/0", "::/0"]);
    assert.deepEqual(other.approvedRoutes, []);
  });

  test("auto-approval is additive: removing the approver does not revoke", async (t) => {
    const fake = await fakeWith(t);
    const node = fake.addNode({ name: "r", tags: ["tag:router"], availableRoutes: ["10.1.0.0/16"] });
    await call(fake, "PUT", "/api/v1/policy", { policy: ROUTER_POLICY });
    await call(fake, "PUT", "/api/v1/policy", { policy: '{"tagOwners": {"tag:router": []}}' });
    assert.deepEqual(node.approvedRoutes, ["10.1.0.0/16"]);
  });

  test("registerWithKey: tags from the key, key marked used, auto-approval at registration", async (t) => {
    const fake = await fakeWith(t);
    const created = await call(fake, "POST", "/api/v1/preauthkey", {
      aclTags: ["tag:router"],
      reusable: false,
      ephemeral: false,
      expiration: "2031-01-01T00:00:00Z",
    });
    const key = (created.json as { preAuthKey: { id: string; key: string } }).preAuthKey;
    const node = fake.registerWithKey(key.key, { name: "site-router", availableRoutes: ["10.5.0.0/16"] });
    assert.deepEqual(node.tags, ["tag:router"]);
    assert.equal(node.userId, null);
    assert.deepEqual(node.approvedRoutes, ["10.5.0.0/16"]);
    assert.equal(fake.state.preAuthKeys.get(key.id)?.used, true);
    assert.throws(() => fake.registerWithKey(key.id, { name: "again" }), /already used/);
    const listed = (await call(fake, "GET", "/api/v1/node")).json as { nodes: Array<{ preAuthKey: { key: string } }> };
    assert.match(listed.nodes[0].preAuthKey.key, /^hskey-auth-[A-Za-z0-9_-]{12}-\*\*\*$/);
  });

  test("registerWithKey: requested tags are refused with a pre-auth key, even the key's own (0.28+)", async (t) => {
    const fake = await fakeWith(t);
    const created = await call(fake, "POST", "/api/v1/preauthkey", {
      aclTags: ["tag:k8s-shop-db"],
      reusable: true,
      ephemeral: true,
      expiration: "2031-01-01T00:00:00Z",
    });
    const key = (created.json as { preAuthKey: { id: string; key: string } }).preAuthKey;
    assert.throws(
      () => fake.registerWithKey(key.key, { name: "shop-db", requestTags: ["tag:k8s-shop-db"] }),
      /requested tags \[tag:k8s-shop-db\] are invalid or not permitted/,
    );
    assert.equal(fake.state.nodes.size, 0, "nothing registered");
    assert.equal(fake.state.preAuthKeys.get(key.id)?.used, false, "the key is not used up by the refusal");
    assert.deepEqual(fake.registerWithKey(key.key, { name: "shop-db" }).tags, ["tag:k8s-shop-db"]);
  });

  test("a key created without expiration is already expired (year 0001)", async (t) => {
    const fake = await fakeWith(t);
    const created = await call(fake, "POST", "/api/v1/preauthkey", { aclTags: ["tag:router"] });
    const key = (created.json as { preAuthKey: { id: string; expiration: string } }).preAuthKey;
    assert.equal(key.expiration, "0001-01-01T00:00:00Z");
    assert.throws(() => fake.registerWithKey(key.id, { name: "x" }), /authkey expired/);
  });

  test("approve_routes replaces the set, stores both exit routes, and subnetRoutes follows the HA primary", async (t) => {
    const fake = await fakeWith(t);
    const a = fake.addNode({ name: "a", tags: ["tag:router"], availableRoutes: ["10.9.0.0/16", "0.0.0.0/0", "::/0"] });
    const b = fake.addNode({
      name: "b",
      tags: ["tag:router"],
      availableRoutes: ["10.9.0.0/16"],
      approvedRoutes: ["10.9.0.0/16"],
    });
    const res = await call(fake, "POST", `/api/v1/node/${a.id}/approve_routes`, {
      routes: ["10.9.0.0/16", "0.0.0.0/0"],
    });
    const node = (res.json as { node: { approvedRoutes: string[]; subnetRoutes: string[] } }).node;
    assert.deepEqual(node.approvedRoutes, ["0.0.0.0/0", "10.9.0.0/16", "::/0"]);
    assert.deepEqual(node.subnetRoutes, ["0.0.0.0/0", "10.9.0.0/16", "::/0"]);
    const served = async () =>
      ((await call(fake, "GET", "/api/v1/node")).json as { nodes: Array<{ subnetRoutes: string[] }> }).nodes.map(
        (n) => n.subnetRoutes,
      );
    assert.deepEqual(await served(), [["0.0.0.0/0", "10.9.0.0/16", "::/0"], []]);
    a.online = false;
    assert.deepEqual(await served(), [["0.0.0.0/0", "::/0"], ["10.9.0.0/16"]], "failover to b; exit routes stay");
    const single = (await call(fake, "GET", `/api/v1/node/${b.id}`)).json as {
      node: { subnetRoutes: string[]; user: unknown };
    };
    assert.deepEqual(single.node.subnetRoutes, [], "GetNode never fills subnetRoutes");
    assert.equal(single.node.user, null, "GetNode shows no user for tagged nodes");
  });

  test("setTags: tags must be owned, [] is refused, a user-owned node loses its user", async (t) => {
    const fake = await fakeWith(t);
    fake.addUser({ name: "alice" });
    const node = fake.addNode({ name: "laptop", user: "alice" });
    const none = await call(fake, "POST", `/api/v1/node/${node.id}/tags`, { tags: [] });
    assert.equal(none.status, 400);
    const ok = await call(fake, "POST", `/api/v1/node/${node.id}/tags`, { tags: ["tag:router"] });
    assert.equal(ok.status, 200);
    assert.equal(node.userId, null);
    assert.deepEqual(node.tags, ["tag:router"]);
  });

  test("givenName collisions get -1, -2 suffixes", async (t) => {
    const fake = await fakeWith(t);
    const names = ["web", "web", "web"].map((name) => fake.addNode({ name, tags: ["tag:router"] }).givenName);
    assert.deepEqual(names, ["web", "web-1", "web-2"]);
  });
});

describe("database (hscontrol/app.go, handlers.go, grpcv1.go at v0.29.2)", () => {
  // Checked against the real 0.29.2 binary on PostgreSQL, stopped: every /api/v1 path (health, node, policy, an
  // unknown one) answered 401 "Unauthorized" (text/plain; charset=utf-8), /health 500 {"status":"fail"}.
  test("database down: /health 500 fail, every /api/v1 call (health included) the plain 401 of a bad key", async (t) => {
    const fake = await fakeWith(t);
    fake.setDatabaseDown(true);
    const health = await fetch(`${fake.url}/health`);
    assert.equal(health.status, 500);
    assert.match(health.headers.get("content-type") ?? "", /^application\/health\+json/);
    assert.deepEqual(await health.json(), { status: "fail" });
    for (const path of ["/api/v1/health", "/api/v1/node", "/api/v1/policy", "/api/v1/does-not-exist"]) {
      const res = await call(fake, "GET", path);
      assert.deepEqual([res.status, res.text], [401, "Unauthorized"], path);
      assert.match(res.type, /^text\/plain/);
    }
    fake.setDatabaseDown(false);
    assert.equal((await call(fake, "GET", "/api/v1/node")).status, 200);
    assert.deepEqual(await (await fetch(`${fake.url}/health`)).json(), { status: "pass" });
  });

  // Real 0.29.2 on PostgreSQL with the policies table renamed away: 500 code 2 "loading ACL from database:
  // ERROR: relation "policies" does not exist (SQLSTATE 42P01)"; the PUT then failed with the bare driver error.
  test("a database error on GET /api/v1/policy carries the same prefix as 'no policy stored'", async (t) => {
    const fake = await fakeWith(t);
    await fake.fault({ kind: "databaseError", path: /^\/api\/v1\/policy$/, times: 1 });
    const res = await call(fake, "GET", "/api/v1/policy");
    assert.equal(res.status, 500);
    assert.deepEqual(res.json, {
      code: 2,
      message: "loading ACL from database: database is locked (5) (SQLITE_BUSY)",
      details: [],
    });
    assert.equal((await call(fake, "GET", "/api/v1/policy")).status, 200, "times: 1");
  });

  // Checked against the real 0.29.2 binary with SQLite held by an exclusive lock: the PUT answered 500
  // "database is locked (5) (SQLITE_BUSY)", the refused policy's tag was then accepted by SetTags, the stored
  // policy's tag refused, and GET returned the stored policy.
  test("a PUT whose insert fails leaves the new policy live in memory, unstored", async (t) => {
    const fake = await fakeWith(t);
    const rejected = JSON.stringify({ tagOwners: { "tag:new": [] } });
    await fake.fault({ kind: "databaseError", path: /^\/api\/v1\/policy$/, times: 1 });
    const put = await call(fake, "PUT", "/api/v1/policy", { policy: rejected });
    assert.deepEqual(
      [put.status, put.json],
      [500, { code: 2, message: "database is locked (5) (SQLITE_BUSY)", details: [] }],
    );
    assert.equal(fake.policyWrites, 0);
    assert.equal(fake.state.policies.length, 1, "nothing stored");
    assert.equal(
      ((await call(fake, "GET", "/api/v1/policy")).json as { policy: string }).policy,
      ROUTER_POLICY,
      "GET reads the database",
    );
    // ...but the policy manager serves the new text: its tags are owned now, the old ones are not.
    const node = fake.addNode({ name: "n", tags: ["tag:router"] });
    assert.equal((await call(fake, "POST", `/api/v1/node/${node.id}/tags`, { tags: ["tag:new"] })).status, 200);
    assert.equal((await call(fake, "POST", `/api/v1/node/${node.id}/tags`, { tags: ["tag:router"] })).status, 400);
    // a parse rejection never swaps
    await call(fake, "PUT", "/api/v1/policy", { policy: '{"grantz": []}' });
    assert.equal((await call(fake, "POST", `/api/v1/node/${node.id}/tags`, { tags: ["tag:new"] })).status, 200);
  });
});

describe("API keys (hscontrol/db/api_key.go, types/api_key.go)", () => {
  test("the default key has a 12-character base64url prefix with - and _, listed masked", async (t) => {
    const fake = await fakeWith(t);
    assert.match(fake.apiKey, /^hskey-api-tEst_prEf-x1-[A-Za-z0-9_-]{64}$/);
    const listed = (await call(fake, "GET", "/api/v1/apikey")).json as { apiKeys: Array<{ prefix: string }> };
    assert.deepEqual(
      listed.apiKeys.map((k) => k.prefix),
      ["hskey-api-tEst_prEf-x1-***"],
    );
    const legacy = await useFakeHeadscale(t, { apiKey: "Ab3-E7x.0123456789abcdef0123456789abcdef" });
    const old = (await call(legacy, "GET", "/api/v1/apikey")).json as { apiKeys: Array<{ prefix: string }> };
    assert.deepEqual(
      old.apiKeys.map((k) => k.prefix),
      ["Ab3-E7x***"],
    );
  });

  test("create returns the full key once; it authenticates; expire by listed prefix refuses it from then on", async (t) => {
    const fake = await fakeWith(t);
    const created = await call(fake, "POST", "/api/v1/apikey", { expiration: "2031-01-01T00:00:00Z" });
    assert.equal(created.status, 200);
    const key = (created.json as { apiKey: string }).apiKey;
    const m = /^hskey-api-([A-Za-z0-9_-]{12})-[A-Za-z0-9_-]{64}$/.exec(key);
    assert.ok(m, "hskey-api-<12>-<64>");
    const listed = (await call(fake, "GET", "/api/v1/apikey", undefined, key)).json as {
      apiKeys: Array<{ prefix: string; expiration: string }>;
    };
    assert.deepEqual(listed.apiKeys.at(-1), {
      ...listed.apiKeys.at(-1),
      prefix: `hskey-api-${m[1]}-***`,
      expiration: "2031-01-01T00:00:00Z",
    });
    assert.ok(!JSON.stringify(listed).includes(key.slice(-64)), "the list never shows the secret");
    // The new key expires the old one; the old one is refused from then on, the new one keeps working.
    const expired = await call(fake, "POST", "/api/v1/apikey/expire", { prefix: "hskey-api-tEst_prEf-x1-***" }, key);
    assert.deepEqual([expired.status, expired.json], [200, {}]);
    assert.equal((await call(fake, "GET", "/api/v1/apikey")).status, 401);
    assert.equal((await call(fake, "GET", "/api/v1/apikey", undefined, key)).status, 200);
    // The bare 12-character prefix is accepted too.
    assert.equal((await call(fake, "POST", "/api/v1/apikey/expire", { prefix: m[1] }, key)).status, 200);
    assert.equal((await call(fake, "GET", "/api/v1/apikey", undefined, key)).status, 401);
  });

  test("as 0.29: a create without expiration is born expired; expire needs exactly one of id and prefix", async (t) => {
    const fake = await fakeWith(t);
    const born = await call(fake, "POST", "/api/v1/apikey", {});
    const key = (born.json as { apiKey: string }).apiKey;
    assert.equal((await call(fake, "GET", "/api/v1/apikey", undefined, key)).status, 401);
    const both = await call(fake, "POST", "/api/v1/apikey/expire", { prefix: "x", id: "1" });
    assert.deepEqual(
      [both.status, (both.json as { message: string }).message],
      [400, "provide either id or prefix, not both"],
    );
    const neither = await call(fake, "POST", "/api/v1/apikey/expire", {});
    assert.deepEqual(
      [neither.status, (neither.json as { message: string }).message],
      [400, "must provide id or prefix"],
    );
    const unknown = await call(fake, "POST", "/api/v1/apikey/expire", { prefix: "hskey-api-nOnEXiSTent0-***" });
    assert.deepEqual([unknown.status, unknown.json], [500, { code: 2, message: "record not found", details: [] }]);
  });

  test("pre-auth keys are minted with base64url prefixes and secrets", async (t) => {
    const fake = await fakeWith(t);
    const alphabet = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const created = await call(fake, "POST", "/api/v1/preauthkey", {
        aclTags: ["tag:router"],
        expiration: "2031-01-01T00:00:00Z",
      });
      const key = (created.json as { preAuthKey: { key: string } }).preAuthKey.key;
      const m = /^hskey-auth-([A-Za-z0-9_-]{12})-([A-Za-z0-9_-]{64})$/.exec(key);
      assert.ok(m, key);
      for (const c of m[1]) alphabet.add(c);
    }
    assert.ok(
      [...alphabet].some((c) => c === "-" || c === "_" || /[A-Z]/.test(c)),
      "not lower-case alnum only",
    );
  });
});

describe("faults", () => {
  test("times and path limit a fault; clearFaults removes the rest", async (t) => {
    const fake = await fakeWith(t);
    await fake.fault({ kind: "status", status: 503, times: 1, path: /^\/api\/v1\/user$/ });
    await fake.fault({ kind: "unauthorized", path: /^\/api\/v1\/apikey$/ });
    assert.equal((await call(fake, "GET", "/api/v1/node")).status, 200, "other paths are untouched");
    const first = await call(fake, "GET", "/api/v1/user");
    assert.equal(first.status, 503);
    assert.deepEqual(first.json, { code: 14, message: "fault injected: 503", details: [] });
    assert.equal((await call(fake, "GET", "/api/v1/user")).status, 200);
    assert.equal((await call(fake, "GET", "/api/v1/apikey")).status, 401);
    await fake.clearFaults();
    assert.equal((await call(fake, "GET", "/api/v1/apikey")).status, 200);
  });

  test("refused closes the listener and reopens it on the same port", async (t) => {
    const fake = await fakeWith(t);
    await fake.fault({ kind: "refused" });
    await assert.rejects(fetch(`${fake.url}/health`));
    await fake.clearFaults();
    assert.equal((await fetch(`${fake.url}/health`)).status, 200);
  });

  test("malformed answers 200 with invalid JSON", async (t) => {
    const fake = await fakeWith(t);
    await fake.fault({ kind: "malformed", times: 1 });
    const res = await call(fake, "GET", "/api/v1/node");
    assert.equal(res.status, 200);
    assert.equal(res.json, undefined);
  });

  test("close() works while a request hangs on a timeout fault", async (t) => {
    const fake = await fakeWith(t);
    await fake.fault({ kind: "timeout" });
    const pending = fetch(`${fake.url}/api/v1/node`, { headers: { authorization: `Bearer ${fake.apiKey}` } });
    while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    await fake.close();
    await assert.rejects(pending);
  });
});
