import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createHeadscaleClient } from "../../src/headscale/client.js";
import type { RequestMetric } from "../../src/headscale/http.js";
import type { FakeHeadscaleOptions } from "../fakes/headscale/index.js";
import { clientOnFake, rejection } from "./helpers.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const setup = (t: Parameters<typeof clientOnFake>[0], fake: FakeHeadscaleOptions = { policy: POLICY }) =>
  clientOnFake(t, { fake });

const POLICY = `{
  // HuJSON: comments and trailing commas
  "tagOwners": { "tag:k8s-egress": [], "tag:router": [], },
  "autoApprovers": { "routes": { "10.0.0.0/8": ["tag:router"] } },
}`;

describe("health", () => {
  test("health() reads /health without a key and apiHealth() checks key + database", async (t) => {
    const { fake, client } = await setup(t);
    assert.deepEqual(await client.health(), { status: "pass" });
    assert.equal(fake.requests.at(-1)?.path, "/health");
    assert.deepEqual(await client.apiHealth(), { databaseConnectivity: true });
  });

  test("database down: the 401 of every call is explained by GET /health, not taken for a bad key", async (t) => {
    const { fake, client, metrics } = await setup(t);
    fake.setDatabaseDown(true);
    for (const call of [() => client.apiHealth(), () => client.nodes.list(), () => client.policy.get()]) {
      const error = await rejection(call());
      assert.equal(error.kind, "http");
      assert.equal(error.status, 401);
      assert.equal(error.classification, "databaseDown");
    }
    const error = await rejection(client.users.list());
    assert.equal(
      error.message,
      'Headscale GET /api/v1/user: 401 Unauthorized, and GET /health answers 500 {"status":"fail"}: Headscale\'s database is down, so it cannot check any API key',
    );
    assert.ok(
      metrics.some((m) => m.path === "/health" && m.code === 500),
      "the probe is measured",
    );
    const health = await rejection(client.health());
    assert.equal(health.status, 500);
    assert.equal(health.operation, "GET /health");
  });

  test("a 401 while /health passes is a rejected key; /health is probed once per wave", async (t) => {
    const { fake } = await setup(t);
    const wrong = createHeadscaleClient({ url: fake.url, apiKey: "hskey-api-wrong_key-xyz-nope", timeoutMs: 10_000 });
    t.after(() => wrong.close());
    const errors = await Promise.all([wrong.nodes.list(), wrong.users.list(), wrong.apiKeys.list()].map(rejection));
    for (const e of errors) assert.deepEqual([e.kind, e.status, e.classification], ["unauthorized", 401, "other"]);
    assert.equal(fake.count("GET", /^\/health$/), 1, "single-flight probe");
  });

  test("a database error behind a valid key: GET /api/v1/health is 500 classified databaseDown", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "databaseError", path: /^\/api\/v1\/health$/ });
    const error = await rejection(client.apiHealth());
    assert.deepEqual([error.kind, error.status, error.grpcCode], ["http", 500, 2]);
    assert.equal(error.classification, "databaseDown");
    assert.equal(
      error.message,
      "Headscale GET /api/v1/health: 500 pinging database: database is locked (5) (SQLITE_BUSY)",
    );
  });
});

describe("nodes", () => {
  test("list() decodes nodes with string ids, shapes and subnetRoutes", async (t) => {
    const { fake, client } = await setup(t);
    fake.addNode({
      name: "router-a",
      tags: ["tag:router"],
      availableRoutes: ["10.1.0.0/16"],
      approvedRoutes: ["10.1.0.0/16"],
    });
    fake.addUser({ name: "alice" });
    fake.addNode({ name: "laptop", user: "alice", online: false });
    const nodes = await client.nodes.list();
    assert.equal(nodes.length, 2);
    const [router, laptop] = nodes;
    assert.equal(router.id, "1");
    assert.deepEqual(router.tags, ["tag:router"]);
    assert.deepEqual(router.subnetRoutes, ["10.1.0.0/16"]);
    assert.deepEqual(router.shape, { hasTags: true, hasApprovedRoutes: true });
    assert.equal(router.user?.name, "tagged-devices");
    assert.deepEqual(router.ipAddresses, ["100.64.0.1", "fd7a:115c:a1e0::1"]);
    assert.equal(router.expiry, null);
    assert.equal(laptop.user?.name, "alice");
    assert.equal(laptop.online, false);
    assert.deepEqual(laptop.tags, []);
  });

  test("delete(), expire(), setTags() and approveRoutes() call the right paths and decode the node", async (t) => {
    const { fake, client } = await setup(t);
    const a = fake.addNode({ name: "a", tags: ["tag:k8s-egress"], availableRoutes: ["10.2.0.0/16"] });
    const b = fake.addNode({ name: "b", tags: ["tag:k8s-egress"] });

    const expired = await client.nodes.expire(a.id);
    assert.equal(expired.id, a.id);
    assert.ok(expired.expiry !== null);

    const tagged = await client.nodes.setTags(a.id, ["tag:router"]);
    assert.deepEqual(tagged.tags, ["tag:router"]);
    assert.deepEqual(fake.requests.at(-1)?.body, { tags: ["tag:router"] });

    const approved = await client.nodes.approveRoutes(a.id, ["10.2.0.0/16"]);
    assert.deepEqual(approved.approvedRoutes, ["10.2.0.0/16"]);
    assert.deepEqual(approved.subnetRoutes, ["10.2.0.0/16"]);
    assert.equal(fake.requests.at(-1)?.path, `/api/v1/node/${a.id}/approve_routes`);

    await client.nodes.delete(b.id);
    assert.equal(fake.state.nodes.has(b.id), false);
  });

  test("errors: unknown node 404, forbidden tag 400, malformed route 500", async (t) => {
    const { client, fake } = await setup(t);
    const node = fake.addNode({ name: "a", tags: ["tag:k8s-egress"] });

    const gone = await rejection(client.nodes.delete("999"));
    assert.equal(gone.status, 404);
    assert.equal(gone.classification, "notFound");
    assert.equal(gone.operation, "DELETE /api/v1/node/{nodeId}");

    const expire = await rejection(client.nodes.expire("999"));
    assert.equal(expire.classification, "notFound");

    const tags = await rejection(client.nodes.setTags(node.id, ["tag:unowned"]));
    assert.equal(tags.status, 400);
    assert.equal(tags.classification, "invalidArgument");
    assert.equal(tags.detail, "requested tags [tag:unowned] are invalid or not permitted");

    const routes = await rejection(client.nodes.approveRoutes(node.id, ["not-a-prefix"]));
    assert.equal(routes.status, 500);
    assert.match(routes.detail, /^parsing route: /);
  });
});

describe("rename", () => {
  test("nodes.rename posts to /rename/{newName} and answers the renamed node", async (t) => {
    const { client, fake } = await setup(t);
    const node = fake.addNode({ name: "shop-db", givenName: "shop-db-1", tags: ["tag:k8s-egress"] });
    const renamed = await client.nodes.rename(node.id, "shop-db");
    assert.deepEqual([renamed.id, renamed.name, renamed.givenName], [node.id, "shop-db", "shop-db"]);
    assert.deepEqual(
      [fake.requests.at(-1)?.method, fake.requests.at(-1)?.path, fake.requests.at(-1)?.body],
      ["POST", `/api/v1/node/${node.id}/rename/shop-db`, undefined],
    );
  });

  test("a taken name is a duplicate, a bad label invalidArgument, a gone node notFound (all 500 in 0.29)", async (t) => {
    const { client, fake } = await setup(t);
    fake.addNode({ name: "web", tags: ["tag:k8s-egress"] });
    const node = fake.addNode({ name: "web", tags: ["tag:k8s-egress"] });
    const taken = await rejection(client.nodes.rename(node.id, "web"));
    assert.deepEqual(
      [taken.status, taken.classification, taken.operation, taken.message],
      [
        500,
        "duplicate",
        "POST /api/v1/node/{nodeId}/rename/{newName}",
        "Headscale POST /api/v1/node/{nodeId}/rename/{newName}: 500 node name is not unique: web",
      ],
    );
    const bad = await rejection(client.nodes.rename(node.id, "we_b"));
    assert.equal(bad.classification, "invalidArgument");
    assert.equal(
      bad.detail,
      `renaming node: "we_b" is not a valid DNS label: "we_b" is not a valid DNS label: contains invalid character '_'`,
    );
    const gone = await rejection(client.nodes.rename("999", "web"));
    assert.deepEqual([gone.classification, gone.detail], ["notFound", "node no longer exists in NodeStore: 999"]);
  });

  test("the name is one path segment: a slash is encoded, never a second path", async (t) => {
    const { client, fake } = await setup(t);
    const node = fake.addNode({ name: "n", tags: ["tag:k8s-egress"] });
    await rejection(client.nodes.rename(node.id, "a/b"));
    assert.equal(fake.requests.at(-1)?.path, `/api/v1/node/${node.id}/rename/a%2Fb`);
  });
});

describe("users and API keys", () => {
  test("users.list() and apiKeys.list() decode", async (t) => {
    const { fake, client } = await setup(t);
    fake.addUser({ name: "alice" });
    fake.addUser({ name: "alice", provider: "oidc" });
    const users = await client.users.list();
    assert.deepEqual(
      users.map((u) => [u.id, u.name, u.provider]),
      [
        ["1", "alice", ""],
        ["2", "alice", "oidc"],
      ],
    );
    const keys = await client.apiKeys.list();
    assert.equal(keys.length, 1);
    assert.equal(keys[0].prefix, "hskey-api-tEst_prEf-x1-***");
    assert.ok(keys[0].expiration);
  });

  test("list errors carry the status and operation", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "status", status: 500, path: /^\/api\/v1\/(user|apikey)$/ });
    const users = await rejection(client.users.list());
    assert.equal(users.message, "Headscale GET /api/v1/user: 500 fault injected: 500");
    const keys = await rejection(client.apiKeys.list());
    assert.equal(keys.operation, "GET /api/v1/apikey");
  });
});

describe("pre-auth keys", () => {
  test("create() sends tags, flags and an RFC 3339 expiration, and returns the full key", async (t) => {
    const { fake, client } = await setup(t);
    const key = await client.preAuthKeys.create({
      aclTags: ["tag:k8s-egress"],
      reusable: false,
      ephemeral: true,
      expiration: new Date("2030-01-02T03:04:05.678Z"),
    });
    assert.deepEqual(fake.requests.at(-1)?.body, {
      reusable: false,
      ephemeral: true,
      expiration: "2030-01-02T03:04:05Z",
      aclTags: ["tag:k8s-egress"],
    });
    assert.match(key.key, /^hskey-auth-[A-Za-z0-9_-]{12}-[A-Za-z0-9_-]{64}$/);
    assert.equal(key.user, null);
    assert.equal(key.expiration, "2030-01-02T03:04:05Z");

    const listed = await client.preAuthKeys.list();
    assert.equal(listed.length, 1);
    assert.match(listed[0].key, /-\*\*\*$/);

    await client.preAuthKeys.expire(key.id);
    assert.deepEqual(fake.requests.at(-1)?.body, { id: key.id });
    const [after] = await client.preAuthKeys.list();
    assert.ok(after.expiration !== null && after.expiration < "2030");
  });

  test("create errors: bad tag syntax 400, no tags and no user 500", async (t) => {
    const { client } = await setup(t);
    const input = { reusable: false, ephemeral: false, expiration: new Date("2030-01-01T00:00:00Z") };
    const bad = await rejection(client.preAuthKeys.create({ ...input, aclTags: ["Tag:Bad"] }));
    assert.equal(bad.status, 400);
    assert.equal(bad.classification, "invalidArgument");
    const none = await rejection(client.preAuthKeys.create({ ...input, aclTags: [] }));
    assert.equal(none.status, 500);
  });

  test("list and expire failures are HeadscaleErrors", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "status", status: 500, path: /^\/api\/v1\/preauthkey/ });
    assert.equal((await rejection(client.preAuthKeys.list())).status, 500);
    assert.equal((await rejection(client.preAuthKeys.expire("1"))).operation, "POST /api/v1/preauthkey/expire");
  });
});

describe("policy", () => {
  test("get(), put() and check() in database mode", async (t) => {
    const { fake, client } = await setup(t);
    const live = await client.policy.get();
    assert.equal(live.policy, POLICY);
    assert.ok(live.updatedAt);

    await client.policy.check('{"tagOwners": {"tag:new": []}}');
    assert.equal(fake.state.policies.length, 1, "check persists nothing");

    const next = `${POLICY}\n// v2\n`;
    const stored = await client.policy.put(next);
    assert.equal(stored.policy, next);
    assert.ok(stored.updatedAt);
    assert.equal(fake.policyWrites, 1);
    assert.deepEqual(fake.requests.at(-1)?.body, { policy: next });
  });

  test("an unchanged policy is one string however often it is read (issue 36: each memo kept its own copy)", async (t) => {
    const big = `${POLICY}\n// ${"x".repeat(1 << 20)}\n`;
    const { client } = await setup(t, { policy: big });
    await client.policy.get();
    gc();
    const before = process.memoryUsage().heapUsed;
    const held = [];
    for (let i = 0; i < 12; i++) held.push(await client.policy.get());
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.ok(
      held.every((p) => p.policy === big),
      "every read is the text",
    );
    // a copy a read would hold 12 MiB
    assert.ok(grown < 4 * 2 ** 20, `12 reads hold ${grown} bytes`);
  });

  test("a rejected policy is policyInvalid on check (400) and on put (500)", async (t) => {
    const { client } = await setup(t);
    const bad = '{"acls": [{"action": "accept", "src": ["tag:ghost"], "dst": ["*:*"]}]}';
    const check = await rejection(client.policy.check(bad));
    assert.equal(check.status, 400);
    assert.equal(check.grpcCode, 3);
    assert.equal(check.classification, "policyInvalid");
    assert.equal(check.detail, 'parsing policy: src=tag not found: "tag:ghost"');
    const put = await rejection(client.policy.put(bad));
    assert.equal(put.status, 500);
    assert.equal(put.classification, "policyInvalid");
    assert.equal(
      put.message,
      'Headscale PUT /api/v1/policy: 500 setting policy: parsing policy: src=tag not found: "tag:ghost"',
    );
  });

  test("an empty database answers 'acl policy not found' (classified notFound)", async (t) => {
    const { client } = await setup(t, {});
    const error = await rejection(client.policy.get());
    assert.equal(error.status, 500);
    assert.equal(error.classification, "notFound");
    assert.equal(error.detail, "loading ACL from database: acl policy not found");
  });

  test("file mode: get() has updatedAt null, put() is policyFileMode", async (t) => {
    const { client } = await setup(t, { policyMode: "file", policy: POLICY });
    assert.deepEqual(await client.policy.get(), { policy: POLICY, updatedAt: null });
    const error = await rejection(client.policy.put(POLICY));
    assert.equal(error.status, 500);
    assert.equal(error.classification, "policyFileMode");
    assert.equal(error.detail, "update is disabled for modes other than 'database'");
  });

  test("0.28 has no policy/check: 404 Not Found", async (t) => {
    const { client } = await setup(t, { version: "0.28", policy: POLICY });
    const error = await rejection(client.policy.check("{}"));
    assert.equal(error.status, 404);
    assert.equal(error.grpcCode, 5);
    assert.equal(error.classification, "notFound");
  });
});

describe("auth and metrics", () => {
  test("a wrong key is a plain-text 401: kind unauthorized", async (t) => {
    const { fake } = await setup(t);
    const client = createHeadscaleClient({ url: fake.url, apiKey: "hskey-api-wrong-nope", timeoutMs: 10_000 });
    t.after(() => client.close());
    const error = await rejection(client.nodes.list());
    assert.equal(error.kind, "unauthorized");
    assert.equal(error.status, 401);
    assert.equal(error.message, "Headscale GET /api/v1/node: 401 Unauthorized");
    assert.equal(fake.count("GET", /^\/api\/v1\/node$/), 1, "401 is not retried");
  });

  test("onRequest sees templates, never ids, and the HTTP code", async (t) => {
    const { fake, client, metrics } = await setup(t);
    const node = fake.addNode({ name: "a", tags: ["tag:router"], availableRoutes: ["10.9.0.0/16"] });
    await client.nodes.approveRoutes(node.id, ["10.9.0.0/16"]);
    await rejection(client.nodes.delete("4242"));
    assert.deepEqual(
      metrics.map((m) => [m.method, m.path, m.code]),
      [
        ["POST", "/api/v1/node/{nodeId}/approve_routes", 200],
        ["DELETE", "/api/v1/node/{nodeId}", 404],
      ],
    );
    assert.ok(metrics.every((m) => m.seconds >= 0));
  });

  test("a throwing onRequest hook does not fail the call", async (t) => {
    const { fake } = await setup(t);
    const client = createHeadscaleClient({
      url: fake.url,
      apiKey: fake.apiKey,
      timeoutMs: 10_000,
      onRequest: () => {
        throw new Error("metrics broke");
      },
    });
    t.after(() => client.close());
    assert.deepEqual(await client.apiHealth(), { databaseConnectivity: true });
  });

  test("a base path on the URL is kept in front of every template", async (t) => {
    const { fake } = await setup(t);
    const client = createHeadscaleClient({ url: `${fake.url}/prefix/`, apiKey: fake.apiKey, timeoutMs: 10_000 });
    t.after(() => client.close());
    await rejection(client.users.list());
    assert.equal(fake.requests.at(-1)?.path, "/prefix/api/v1/user");
  });

  test("a URL that is not http(s) fails every call with a typed error, once, without echoing it", async (t) => {
    for (const url of ["ftp://user:pw@x", "not a url"]) {
      const metrics: RequestMetric[] = [];
      const client = createHeadscaleClient({ url, apiKey: "k", timeoutMs: 10, onRequest: (m) => metrics.push(m) });
      t.after(() => client.close());
      const error = await rejection(client.nodes.list());
      assert.equal(error.kind, "transport");
      assert.equal(error.message, "Headscale GET /api/v1/node: invalid url: expected an http or https URL");
      assert.deepEqual(metrics, [], "no request was attempted");
    }
  });
});
