import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type Capabilities,
  type CapabilityInputs,
  detectCapabilities,
  isEmptyDatabasePolicy,
  outcomeOf,
  probeCapabilities,
} from "../../src/headscale/capabilities.js";
import { createHeadscaleClient } from "../../src/headscale/client.js";
import { HeadscaleError } from "../../src/headscale/errors.js";
import { decodeNode } from "../../src/headscale/types.js";
import { type FakeHeadscaleOptions, useFakeHeadscale } from "../fakes/headscale/index.js";

const node029 = decodeNode({ id: "1", tags: ["tag:a"], approvedRoutes: [], availableRoutes: [], subnetRoutes: [] });
const node027 = decodeNode({ id: "1", forcedTags: [], validTags: [], approvedRoutes: [], availableRoutes: [] });
const node025 = decodeNode({ id: "1", forcedTags: [] });

const httpError = (status: number, detail: string, grpcCode?: number) =>
  new HeadscaleError({
    kind: "http",
    operation: "X /x",
    status,
    grpcCode,
    detail,
    classification: status === 400 ? "policyInvalid" : "other",
  });
const transport = new HeadscaleError({
  kind: "transport",
  operation: "X /x",
  detail: "connection refused",
  classification: "refused",
});
const fail = (error: HeadscaleError) => ({ ok: false as const, error });

describe("detectCapabilities (pure)", () => {
  const rows: Array<{ name: string; inputs: CapabilityInputs; want: Partial<Capabilities> }> = [
    {
      name: "0.29, database mode, check passes",
      inputs: {
        nodes: { ok: true, value: [node029] },
        policy: { ok: true, value: { policy: "{}", updatedAt: "2026-01-01T00:00:00Z" } },
        policyCheck: { ok: true, value: undefined },
      },
      want: { nodeTags: true, nodeApprovedRoutes: true, policyCheck: true, policyMode: "database" },
    },
    {
      name: "no nodes: node capabilities unknown, the rest decides",
      inputs: {
        nodes: { ok: true, value: [] },
        policy: { ok: true, value: null },
        policyCheck: { ok: true, value: undefined },
      },
      want: { nodeTags: null, nodeApprovedRoutes: null, policyCheck: true, policyMode: "database" },
    },
    {
      name: "file mode: updatedAt null",
      inputs: { policy: { ok: true, value: { policy: "{}", updatedAt: null } } },
      want: { policyMode: "file" },
    },
    {
      name: "empty database as the raw client error",
      inputs: { policy: fail(httpError(500, "loading ACL from database: acl policy not found", 2)) },
      want: { policyMode: "database" },
    },
    {
      name: "unreadable policy file",
      inputs: { policy: fail(httpError(500, 'reading policy from path "/etc/headscale/acl.hujson": no such file', 2)) },
      want: { policyMode: "file" },
    },
    {
      name: "0.27 node shape and no check endpoint",
      inputs: { nodes: { ok: true, value: [node027] }, policyCheck: fail(httpError(404, "Not Found", 5)) },
      want: { nodeTags: false, nodeApprovedRoutes: true, policyCheck: false },
    },
    {
      name: "0.25 node shape",
      inputs: { nodes: { ok: true, value: [node025] } },
      want: { nodeTags: false, nodeApprovedRoutes: false },
    },
    {
      name: "check answered 400: the endpoint exists",
      inputs: { policyCheck: fail(httpError(400, "parsing policy: x", 3)) },
      want: { policyCheck: true },
    },
    {
      name: "everything failed: all unknown",
      inputs: { nodes: fail(transport), policy: fail(transport), policyCheck: fail(transport) },
      want: { nodeTags: null, nodeApprovedRoutes: null, policyCheck: null, policyMode: null },
    },
    {
      name: "server errors are not guesses",
      inputs: { policy: fail(httpError(503, "unavailable")), policyCheck: fail(httpError(503, "unavailable")) },
      want: { policyCheck: null, policyMode: null },
    },
    {
      name: "nothing observed",
      inputs: {},
      want: { nodeTags: null, nodeApprovedRoutes: null, policyCheck: null, policyMode: null },
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const got = detectCapabilities(row.inputs);
      for (const [key, value] of Object.entries(row.want)) assert.equal(got[key as keyof Capabilities], value, key);
    });
  }

  test("isEmptyDatabasePolicy only matches Headscale's empty-table error", () => {
    assert.equal(isEmptyDatabasePolicy(httpError(500, "loading ACL from database: acl policy not found")), true);
    assert.equal(isEmptyDatabasePolicy(httpError(404, "Not Found")), false);
    // every database error of GetPolicy carries the same prefix (hscontrol/grpcv1.go)
    const locked = "loading ACL from database: database is locked (5) (SQLITE_BUSY)";
    assert.equal(isEmptyDatabasePolicy(httpError(500, locked)), false);
    assert.equal(detectCapabilities({ policy: fail(httpError(500, locked, 2)) }).policyMode, null);
    assert.equal(isEmptyDatabasePolicy(new Error("acl policy not found")), false);
  });

  test("outcomeOf never rejects", async () => {
    const bad = await outcomeOf(Promise.reject(new Error("boom")));
    assert.equal(bad.ok, false);
    const good = await outcomeOf(Promise.resolve(3));
    assert.deepEqual(good, { ok: true, value: 3 });
  });
});

describe("probeCapabilities against the fake", () => {
  async function probe(t: { after: (fn: () => Promise<void> | void) => void }, opts: FakeHeadscaleOptions) {
    const fake = await useFakeHeadscale(t, opts);
    fake.addNode({ name: "n", tags: ["tag:a"] });
    const client = createHeadscaleClient({ url: fake.url, apiKey: fake.apiKey, timeoutMs: 10_000 });
    t.after(() => client.close());
    const caps = await probeCapabilities(client);
    return { caps, fake };
  }

  test("0.29 database mode", async (t) => {
    const { caps, fake } = await probe(t, { policy: '{"tagOwners": {"tag:a": []}}' });
    assert.deepEqual(caps, { nodeTags: true, nodeApprovedRoutes: true, policyCheck: true, policyMode: "database" });
    assert.equal(fake.writes().length, 0, "the probe writes nothing");
  });

  test("0.29 database mode with no stored policy", async (t) => {
    const { caps } = await probe(t, {});
    assert.equal(caps.policyMode, "database");
    assert.equal(caps.policyCheck, true);
  });

  test("0.29 file mode", async (t) => {
    const { caps } = await probe(t, { policyMode: "file" });
    assert.deepEqual(caps, { nodeTags: true, nodeApprovedRoutes: true, policyCheck: true, policyMode: "file" });
  });

  test("0.28: no policy/check", async (t) => {
    const { caps } = await probe(t, { version: "0.28", policy: "{}" });
    assert.deepEqual(caps, { nodeTags: true, nodeApprovedRoutes: true, policyCheck: false, policyMode: "database" });
  });
});
