import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MockAgent } from "undici";
import { createHeadscaleClient } from "../../src/headscale/client.js";
import {
  classifyRpcStatus,
  HeadscaleError,
  type HeadscaleErrorClassification,
  parseErrorBody,
  redactSecrets,
} from "../../src/headscale/errors.js";

describe("rpcStatus dialect (≤0.29)", () => {
  const rows: Array<{ name: string; code: number; message: string; want: HeadscaleErrorClassification }> = [
    {
      name: "policy write in file mode",
      code: 2,
      message: "update is disabled for modes other than 'database'",
      want: "policyFileMode",
    },
    {
      name: "policy rejected on PUT",
      code: 2,
      message: 'setting policy: parsing policy: src=tag not found: "tag:x"',
      want: "policyInvalid",
    },
    {
      name: "policy rejected on check",
      code: 3,
      message: 'parsing policy: unknown field: "grantz"',
      want: "policyInvalid",
    },
    {
      name: "HuJSON syntax",
      code: 2,
      message: "setting policy: parsing HuJSON: hujson: line 1: invalid character",
      want: "policyInvalid",
    },
    {
      name: "ambiguous user reference",
      code: 2,
      message: "setting policy: validating policy user references: multiple users found",
      want: "policyInvalid",
    },
    { name: "node not found by code", code: 5, message: "node not found", want: "notFound" },
    {
      name: "node gone on expire (0.29, plain error)",
      code: 2,
      message: "node no longer exists in NodeStore: 999",
      want: "notFound",
    },
    {
      name: "node gone on approve_routes (0.29, code 3)",
      code: 3,
      message: "node no longer exists in NodeStore: 999",
      want: "notFound",
    },
    { name: "user not found as plain error", code: 2, message: "user not found", want: "notFound" },
    {
      name: "empty policy table",
      code: 2,
      message: "loading ACL from database: acl policy not found",
      want: "notFound",
    },
    { name: "unknown path", code: 5, message: "Not Found", want: "notFound" },
    {
      name: "duplicate user on SQLite",
      code: 13,
      message: "creating user: creating user: UNIQUE constraint failed: users.name",
      want: "duplicate",
    },
    {
      name: "duplicate user on PostgreSQL",
      code: 2,
      message: 'duplicate key value violates unique constraint "idx_name_no_provider_identifier"',
      want: "duplicate",
    },
    { name: "already exists by code", code: 6, message: "exists", want: "duplicate" },
    { name: "database down", code: 2, message: "pinging database: dial tcp: connection refused", want: "databaseDown" },
    {
      name: "invalid tags",
      code: 3,
      message: "requested tags [tag:x] are invalid or not permitted",
      want: "invalidArgument",
    },
    {
      name: "rename to a taken name (0.29 RenameNode)",
      code: 2,
      message: "node name is not unique: shop-db",
      want: "duplicate",
    },
    {
      name: "rename to an invalid label (0.29 ValidateGivenName)",
      code: 2,
      message:
        'renaming node: "-x" is not a valid DNS label: "-x" is not a valid DNS label: must start with a letter or number',
      want: "invalidArgument",
    },
    {
      name: "rename of a node that is gone",
      code: 2,
      message: "node no longer exists in NodeStore: 9",
      want: "notFound",
    },
    { name: "anything else", code: 2, message: "something broke", want: "other" },
  ];
  for (const row of rows) {
    test(row.name, () => {
      assert.equal(classifyRpcStatus(row.code, row.message), row.want);
      const parsed = parseErrorBody(
        500,
        "application/json",
        JSON.stringify({ code: row.code, message: row.message, details: [] }),
      );
      assert.equal(parsed.classification, row.want);
      assert.equal(parsed.grpcCode, row.code);
      assert.equal(parsed.detail, row.message);
    });
  }
});

describe("problem+json dialect (0.30)", () => {
  const problem = (status: number, detail: string, errors: string[] = []) =>
    JSON.stringify({ title: "Error", status, detail, errors: errors.map((message) => ({ message })) });
  const rows: Array<{
    name: string;
    status: number;
    body: string;
    want: HeadscaleErrorClassification;
    detail: string;
  }> = [
    {
      name: "file mode is a 400",
      status: 400,
      body: problem(400, "update is disabled for modes other than 'database'"),
      want: "policyFileMode",
      detail: "update is disabled for modes other than 'database'",
    },
    {
      name: "invalid policy 400 with errors list",
      status: 400,
      body: problem(400, "parsing policy", ['src=tag not found: "tag:x"']),
      want: "policyInvalid",
      detail: 'parsing policy: src=tag not found: "tag:x"',
    },
    {
      name: "404 by status",
      status: 404,
      body: problem(404, "Node does not exist"),
      want: "notFound",
      detail: "Node does not exist",
    },
    { name: "409 by status", status: 409, body: problem(409, "user exists"), want: "duplicate", detail: "user exists" },
    {
      name: "400 otherwise",
      status: 400,
      body: problem(400, "bad input"),
      want: "invalidArgument",
      detail: "bad input",
    },
    {
      name: "500 database",
      status: 500,
      body: problem(500, "pinging database: timeout"),
      want: "databaseDown",
      detail: "pinging database: timeout",
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const parsed = parseErrorBody(row.status, "application/problem+json", row.body);
      assert.equal(parsed.classification, row.want);
      assert.equal(parsed.detail, row.detail);
      assert.equal(parsed.grpcCode, undefined);
    });
  }

  test("through the client (MockAgent): kind, status, classification and message", async (t) => {
    const mock = new MockAgent();
    mock.disableNetConnect();
    t.after(() => mock.close());
    const pool = mock.get("https://hs.example.com");
    const headers = { "content-type": "application/problem+json" };
    pool
      .intercept({ path: "/api/v1/policy", method: "PUT" })
      .reply(400, problem(400, "update is disabled for modes other than 'database'"), { headers });
    pool
      .intercept({ path: "/api/v1/policy/check", method: "POST" })
      .reply(400, problem(400, "invalid policy", ["via can only be a tag"]), { headers });
    pool
      .intercept({ path: "/api/v1/node/7", method: "DELETE" })
      .reply(404, problem(404, "node 7 not found"), { headers });
    pool
      .intercept({ path: "/api/v1/node", method: "GET" })
      .reply(401, JSON.stringify({ title: "Unauthorized", status: 401, detail: "api key expired" }), { headers });

    const client = createHeadscaleClient({
      url: "https://hs.example.com",
      apiKey: "k",
      timeoutMs: 5000,
      dispatcher: mock,
    });
    const put = await client.policy.put("{}").catch((e: unknown) => e);
    assert.ok(put instanceof HeadscaleError);
    assert.equal(put.classification, "policyFileMode");
    assert.equal(put.message, "Headscale PUT /api/v1/policy: 400 update is disabled for modes other than 'database'");

    const check = await client.policy.check("{}").catch((e: unknown) => e);
    assert.ok(check instanceof HeadscaleError);
    assert.equal(check.classification, "policyInvalid");
    assert.equal(check.detail, "invalid policy: via can only be a tag");

    const del = await client.nodes.delete("7").catch((e: unknown) => e);
    assert.ok(del instanceof HeadscaleError);
    assert.equal(del.classification, "notFound");

    const list = await client.nodes.list().catch((e: unknown) => e);
    assert.ok(list instanceof HeadscaleError);
    assert.equal(list.kind, "unauthorized");
    assert.equal(list.message, "Headscale GET /api/v1/node: 401 api key expired");
    mock.assertNoPendingInterceptors();
    await client.close();
  });
});

describe("other bodies", () => {
  test("plain text (a proxy page) becomes a one-line detail", () => {
    const parsed = parseErrorBody(502, "text/html", "<html>\n  <body>Bad   Gateway</body>\n</html>");
    assert.equal(parsed.detail, "<html> <body>Bad Gateway</body> </html>");
    assert.equal(parsed.classification, "other");
  });

  test("an overlong detail is clipped", () => {
    const parsed = parseErrorBody(500, "application/json", JSON.stringify({ code: 2, message: "x".repeat(2000) }));
    assert.equal(parsed.detail.length, 501);
  });

  test("messages: HTTP errors carry the status, transport errors do not", () => {
    const http = new HeadscaleError({
      kind: "http",
      operation: "GET /api/v1/node",
      status: 503,
      detail: "unavailable",
      classification: "other",
    });
    assert.equal(http.message, "Headscale GET /api/v1/node: 503 unavailable");
    const bare = new HeadscaleError({
      kind: "http",
      operation: "GET /api/v1/node",
      status: 503,
      detail: "",
      classification: "other",
    });
    assert.equal(bare.message, "Headscale GET /api/v1/node: 503");
    const transport = new HeadscaleError({
      kind: "transport",
      operation: "GET /api/v1/node",
      detail: "connection refused",
      classification: "refused",
    });
    assert.equal(transport.message, "Headscale GET /api/v1/node: connection refused");
    assert.equal(transport.name, "HeadscaleError");
  });
});

describe("redactSecrets", () => {
  test("masks full Headscale keys, keeps masked ones, and removes exact secrets", () => {
    const api = `hskey-api-abcdefabcdef-${"s".repeat(64)}`;
    const auth = `hskey-auth-123456789012-${"t".repeat(64)}`;
    assert.equal(
      redactSecrets(`key ${api} and ${auth} and hskey-auth-123456789012-***`),
      "key hskey-api-abcdefabcdef-*** and hskey-auth-123456789012-*** and hskey-auth-123456789012-***",
    );
    assert.equal(redactSecrets("legacy abcdefg.0123456789 used", ["abcdefg.0123456789"]), "legacy [redacted] used");
  });

  test("base64url prefixes with - and _ (a third of real keys) are cut by length; odd shapes masked whole", () => {
    const secret = `Zq_${"x-".repeat(30)}9a`;
    assert.equal(
      redactSecrets(`a hskey-api-ab_cd-EF_g1h-${secret} b hskey-auth--_abcdefghij-${secret} c`),
      "a hskey-api-ab_cd-EF_g1h-*** b hskey-auth--_abcdefghij-*** c",
    );
    assert.equal(redactSecrets("listed hskey-api-ab_cd-EF_g1h-*** stays"), "listed hskey-api-ab_cd-EF_g1h-*** stays");
    // a prefix a real 0.29.2 minted, ending in "-": listed with a double dash
    assert.equal(redactSecrets(`hskey-api-FaxpIB_mxOb--${secret}`), "hskey-api-FaxpIB_mxOb--***");
    assert.equal(redactSecrets("hskey-api-FaxpIB_mxOb--***"), "hskey-api-FaxpIB_mxOb--***");
    assert.equal(redactSecrets(`short hskey-api-a_b-${"Q".repeat(40)}`), "short hskey-api-***");
    assert.equal(redactSecrets(`bare hskey-auth-${"Q".repeat(40)}`), "bare hskey-auth-***");
  });
});
