/**
 * The fake is held to Headscale's Swagger document: every endpoint the client uses answers, in success and in
 * error form, with bodies the document allows; and the checker itself does refuse what it should.
 */

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { createHeadscaleClient } from "../../../src/headscale/client.js";
import { loadContract, swaggerPath, swaggerRelease } from "./contract.js";
import { useFakeHeadscale } from "./index.js";

/** Swagger template → fake request path pattern, for every call the client makes. */
const CLIENT_OPERATIONS: Array<[string, string, RegExp]> = [
  ["GET", "/api/v1/health", /^\/api\/v1\/health$/],
  ["GET", "/api/v1/node", /^\/api\/v1\/node$/],
  ["DELETE", "/api/v1/node/{nodeId}", /^\/api\/v1\/node\/[^/]+$/],
  ["POST", "/api/v1/node/{nodeId}/expire", /^\/api\/v1\/node\/[^/]+\/expire$/],
  ["POST", "/api/v1/node/{nodeId}/tags", /^\/api\/v1\/node\/[^/]+\/tags$/],
  ["POST", "/api/v1/node/{nodeId}/approve_routes", /^\/api\/v1\/node\/[^/]+\/approve_routes$/],
  ["POST", "/api/v1/node/{nodeId}/rename/{newName}", /^\/api\/v1\/node\/[^/]+\/rename\/[^/]+$/],
  ["GET", "/api/v1/user", /^\/api\/v1\/user$/],
  ["GET", "/api/v1/apikey", /^\/api\/v1\/apikey$/],
  ["POST", "/api/v1/apikey", /^\/api\/v1\/apikey$/],
  ["POST", "/api/v1/apikey/expire", /^\/api\/v1\/apikey\/expire$/],
  ["POST", "/api/v1/preauthkey", /^\/api\/v1\/preauthkey$/],
  ["GET", "/api/v1/preauthkey", /^\/api\/v1\/preauthkey$/],
  ["POST", "/api/v1/preauthkey/expire", /^\/api\/v1\/preauthkey\/expire$/],
  ["GET", "/api/v1/policy", /^\/api\/v1\/policy$/],
  ["PUT", "/api/v1/policy", /^\/api\/v1\/policy$/],
  ["POST", "/api/v1/policy/check", /^\/api\/v1\/policy\/check$/],
];

describe("Swagger document", () => {
  test("comes from the Headscale module: the pin for 0.29, v0.28.0 for 0.28", () => {
    assert.match(swaggerRelease("0.29"), /^v0\.29\.\d+$/);
    assert.equal(swaggerRelease("0.28"), "v0.28.0");
    for (const version of ["0.29", "0.28"] as const) {
      const path = swaggerPath(version);
      assert.ok(existsSync(path), path);
      assert.ok(
        path.endsWith(
          `github.com/juanfont/headscale@${swaggerRelease(version)}/gen/openapiv2/headscale/v1/headscale.swagger.json`,
        ),
        path,
      );
      const info = (JSON.parse(readFileSync(path, "utf8")) as { info?: { title?: string } }).info;
      assert.equal(info?.title, "headscale/v1/headscale.proto");
    }
  });

  test("declares every operation the client uses", () => {
    const ops = new Set(loadContract("0.29").operations.map(([p, m]) => `${m.toUpperCase()} ${p}`));
    for (const [method, template] of CLIENT_OPERATIONS) assert.ok(ops.has(`${method} ${template}`), template);
    const ops028 = new Set(loadContract("0.28").operations.map(([p, m]) => `${m.toUpperCase()} ${p}`));
    assert.equal(ops028.has("POST /api/v1/policy/check"), false);
  });
});

describe("the checker", () => {
  const contract = loadContract("0.29");
  const user = {
    id: "1",
    name: "a",
    createdAt: "2026-01-01T00:00:00Z",
    displayName: "",
    email: "",
    providerId: "",
    provider: "",
    profilePicUrl: "",
  };

  test("accepts a protojson body with nulls where messages and timestamps are unset", () => {
    assert.equal(contract.check("GET", "/api/v1/user", 200, { users: [user, { ...user, createdAt: null }] }), null);
    assert.equal(contract.check("GET", "/api/v1/policy", 200, { policy: "{}", updatedAt: null }), null);
    assert.equal(contract.check("POST", "/api/v1/policy/check", 400, { code: 3, message: "x", details: [] }), null);
  });

  const bad: Array<[string, string, string, number, unknown]> = [
    ["a numeric id", "GET", "/api/v1/user", 200, { users: [{ ...user, id: 1 }] }],
    ["a missing field", "GET", "/api/v1/user", 200, { users: [{ ...user, email: undefined }] }],
    ["an undeclared field", "GET", "/api/v1/user", 200, { users: [{ ...user, forcedTags: [] }] }],
    ["null for a string", "GET", "/api/v1/user", 200, { users: [{ ...user, name: null }] }],
    ["a bad timestamp", "GET", "/api/v1/user", 200, { users: [{ ...user, createdAt: "yesterday" }] }],
    ["a non-empty body where {} is declared", "DELETE", "/api/v1/node/{nodeId}", 200, { ok: true }],
    ["an error without rpcStatus shape", "GET", "/api/v1/node", 500, { error: "x" }],
    ["an operation not in the document", "GET", "/api/v1/routes", 200, {}],
  ];
  for (const [name, method, template, status, body] of bad) {
    test(`refuses ${name}`, () => {
      assert.notEqual(contract.check(method, template, status, body), null);
    });
  }

  test("the fake replaces a violating reply with a 500 and records it", async (t) => {
    const fake = await useFakeHeadscale(t);
    fake.addNode({ name: "n", tags: ["tag:a"], registerMethod: "REGISTER_METHOD_BOGUS" });
    const res = await fetch(`${fake.url}/api/v1/node`, { headers: { authorization: `Bearer ${fake.apiKey}` } });
    assert.equal(res.status, 500);
    assert.match(await res.text(), /contract violation/);
    assert.equal(fake.violations.length, 1);
    assert.throws(() => fake.assertNoViolations(), /registerMethod|allowed values/);
    fake.violations.length = 0;
  });
});

describe("the fake answers every client operation in both forms within the contract", () => {
  for (const version of ["0.29", "0.28"] as const) {
    test(`version ${version}`, async (t) => {
      const fake = await useFakeHeadscale(t, { version, policy: '{"tagOwners": {"tag:a": [], "tag:b": []}}' });
      const client = createHeadscaleClient({ url: fake.url, apiKey: fake.apiKey, timeoutMs: 10_000, retries: 0 });
      t.after(() => client.close());
      const settle = (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          () => undefined,
        );
      fake.addUser({ name: "alice" });
      const node = fake.addNode({ name: "n", tags: ["tag:a"], availableRoutes: ["10.0.0.0/24"] });
      const doomed = fake.addNode({ name: "d", tags: ["tag:a"] });

      // Success forms.
      await client.apiHealth();
      await client.nodes.list();
      await client.nodes.expire(node.id);
      await client.nodes.setTags(node.id, ["tag:b"]);
      await client.nodes.approveRoutes(node.id, ["10.0.0.0/24"]);
      await client.nodes.rename(node.id, "n-renamed");
      await client.nodes.delete(doomed.id);
      await client.users.list();
      await client.apiKeys.list();
      const created = await client.apiKeys.create(new Date("2031-01-01T00:00:00Z"));
      await client.apiKeys.expire(`${created.slice(0, "hskey-api-".length + 12)}-***`);
      const key = await client.preAuthKeys.create({
        aclTags: ["tag:a"],
        reusable: true,
        ephemeral: false,
        expiration: new Date("2031-01-01T00:00:00Z"),
      });
      await client.preAuthKeys.list();
      await client.preAuthKeys.expire(key.id);
      await client.policy.get();
      await client.policy.put('{"tagOwners": {"tag:a": [], "tag:b": []}}');
      await settle(client.policy.check("{}"));

      // Error forms: natural errors where Headscale has them, an injected 500 where it has none.
      await fake.fault({ kind: "databaseError", path: /^\/api\/v1\/(health|policy)$/, times: 2 });
      await settle(client.apiHealth());
      await settle(client.policy.get());
      await settle(client.nodes.expire("999"));
      await settle(client.apiKeys.expire("hskey-api-nOnEXiSTent0-***"));
      await settle(client.nodes.setTags(node.id, ["tag:nobody"]));
      await settle(client.nodes.approveRoutes(node.id, ["nope"]));
      fake.addNode({ name: "taken", tags: ["tag:a"] });
      await settle(client.nodes.rename(node.id, "taken"));
      await settle(client.nodes.delete("999"));
      await settle(
        client.preAuthKeys.create({ aclTags: ["BAD"], reusable: false, ephemeral: false, expiration: new Date() }),
      );
      await settle(client.policy.put('{"nope": 1}'));
      await settle(client.policy.check('{"nope": 1}'));
      await fake.fault({
        kind: "status",
        status: 500,
        path: /^\/api\/v1\/(node|user|apikey|preauthkey|preauthkey\/expire|policy)$/,
      });
      await settle(client.nodes.list());
      await settle(client.users.list());
      await settle(client.apiKeys.list());
      await settle(client.apiKeys.create(new Date("2031-01-01T00:00:00Z")));
      await settle(client.preAuthKeys.list());
      await settle(client.preAuthKeys.expire(key.id));
      await settle(client.policy.get());
      await fake.clearFaults();

      for (const [method, template, pattern] of CLIENT_OPERATIONS) {
        const statuses = fake.requests.filter((r) => r.method === method && pattern.test(r.path)).map((r) => r.status);
        if (version === "0.28" && template === "/api/v1/policy/check") {
          assert.ok(statuses.length > 0 && statuses.every((s) => s === 404), "0.28 answers 404 for policy/check");
          continue;
        }
        assert.ok(statuses.includes(200), `${method} ${template} success form`);
        assert.ok(
          statuses.some((s) => s !== undefined && s >= 400),
          `${method} ${template} error form`,
        );
      }
      assert.deepEqual(fake.violations, []);
    });
  }
});
