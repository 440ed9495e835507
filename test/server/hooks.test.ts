import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { customizeRequest, parentObject, syncRequest } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";

const egress = (spec: Record<string, unknown> = {}) =>
  parentObject(
    "TailnetEgress",
    "db",
    { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432 }] }], ...spec },
    { namespace: "shop" },
  );

/** Envelopes the hook refuses, each with its code and the start of its one-line error. */
const badEnvelopes: {
  name: string;
  path?: string;
  body: string | object;
  contentType?: string;
  code: number;
  error: RegExp;
}[] = [
  { name: "malformed JSON", body: '{"parent": ', code: 400, error: /^body: invalid JSON$/ },
  { name: "empty body", body: "", code: 400, error: /^body: empty/ },
  { name: "not an object", body: "[1,2]", code: 400, error: /^body: must be a JSON object$/ },
  { name: "missing parent", body: { children: {}, related: {} }, code: 400, error: /^parent: required$/ },
  { name: "parent not an object", body: { parent: "x" }, code: 400, error: /^parent: must be an object$/ },
  {
    name: "wrong kind for the path",
    path: "/hooks/ingress/sync",
    body: syncRequest({ parent: egress() }),
    code: 400,
    error: /^parent\.kind: this path serves TailnetIngress, got "TailnetEgress"/,
  },
  {
    name: "wrong apiVersion",
    body: { ...syncRequest({ parent: egress() }), parent: { ...egress(), apiVersion: "v1" } },
    code: 400,
    error: /^parent\.apiVersion: must be tailnet\.internal\/v1alpha1/,
  },
  {
    name: "namespaced parent without namespace",
    body: { parent: { ...egress(), metadata: { name: "db" } } },
    code: 400,
    error: /^parent\.metadata\.namespace: required/,
  },
  {
    name: "children of the wrong type",
    body: { ...syncRequest({ parent: egress() }), children: [] },
    code: 400,
    error: /^children: must be an object keyed by Kind\.group\/version$/,
  },
  {
    name: "bad type key",
    body: { ...syncRequest({ parent: egress() }), related: { "not a key": {} } },
    code: 400,
    error: /^related: key "not a key" is not Kind\.group\/version$/,
  },
  {
    name: "child without name",
    body: { ...syncRequest({ parent: egress() }), children: { "Service.v1": { "shop/x": { metadata: {} } } } },
    code: 400,
    error: /^children\["Service\.v1"\]\["shop\/x"\]\.metadata\.name: required string$/,
  },
  {
    name: "finalizing not boolean",
    body: { ...syncRequest({ parent: egress() }), finalizing: "yes" },
    code: 400,
    error: /^finalizing: must be a boolean$/,
  },
  { name: "unknown kind", path: "/hooks/widget/sync", body: {}, code: 404, error: /^unknown kind "widget"/ },
  { name: "unknown hook", path: "/hooks/egress/mutate", body: {}, code: 404, error: /^unknown hook "mutate"/ },
  {
    name: "not JSON content type",
    body: "parent=x",
    contentType: "application/x-www-form-urlencoded",
    code: 415,
    error: /^body: Content-Type must be application\/json$/,
  },
];

describe("hook routing and envelope", () => {
  for (const c of badEnvelopes) {
    it(`${c.name} → ${c.code}`, async (t) => {
      const { app } = await build(t);
      const res = await app.inject({
        method: "POST",
        url: c.path ?? "/hooks/egress/sync",
        headers: { "content-type": c.contentType ?? "application/json" },
        payload: typeof c.body === "string" ? c.body : JSON.stringify(c.body),
      });
      assert.equal(res.statusCode, c.code, res.body);
      const body = res.json() as { error: string };
      assert.match(body.error, c.error);
      assert.deepEqual(Object.keys(body), ["error"]);
    });
  }

  it("over the body limit → 413 naming the limit", async (t) => {
    const { app } = await build(t, { config: { hooks: { bodyLimitBytes: 65536 } } });
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ parent: egress(), pad: "x".repeat(70000) }),
    });
    assert.equal(res.statusCode, 413);
    assert.deepEqual(res.json(), { error: "body: larger than the limit of 65536 bytes for hooks of this kind" });
  });

  it("the Tailnet's hooks have their own limit", async (t) => {
    const { app } = await build(t, { config: { hooks: { bodyLimitBytes: 65536, tailnetBodyLimitBytes: 131072 } } });
    const parent = parentObject("Tailnet", "home", {
      headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "k" } },
      policy: { mode: "DryRun" },
    });
    const body = (pad: number) => JSON.stringify({ ...syncRequest({ parent }), pad: "x".repeat(pad) });
    const post = (payload: string) =>
      app.inject({
        method: "POST",
        url: "/hooks/tailnet/sync",
        headers: { "content-type": "application/json" },
        payload,
      });
    assert.equal((await post(body(100_000))).statusCode, 200);
    const res = await post(body(140_000));
    assert.equal(res.statusCode, 413);
    assert.deepEqual(res.json(), { error: "body: larger than the limit of 131072 bytes for Tailnet hooks" });
  });

  it("the default limits take a Tailnet sync of 3,000 workloads as Metacontroller sends them (managedFields, last-applied)", async (t) => {
    const { tailnetScaleBody } = await import("../../bench/tailnet-scale.js");
    const { startFakeHeadscale } = await import("../fakes/headscale/index.js");
    const hs = await startFakeHeadscale();
    t.after(() => hs.close());
    const { app } = await build(t);
    const payload = tailnetScaleBody(3000, hs);
    // over the 8 MiB that used to apply to every kind (the Tailnet answered 413 from ~2,500 workloads)
    assert.ok(Buffer.byteLength(payload) > 8 * 1024 * 1024, `${Buffer.byteLength(payload)} bytes`);
    const res = await app.inject({
      method: "POST",
      url: "/hooks/tailnet/sync",
      headers: { "content-type": "application/json" },
      payload,
    });
    assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    const status = (res.json() as { status: { conditions: { type: string; status: string }[] } }).status;
    assert.equal(status.conditions.find((c) => c.type === "PolicyRendered")?.status, "True");
  });

  it("the default limit takes a sync with 64 targets and their children", async (t) => {
    const { app } = await build(t);
    const targets = Array.from({ length: 64 }, (_, i) => ({
      name: `t${i}`,
      host: `node-${i}`,
      ports: [{ port: 5432 }],
    }));
    const children = targets.map((tg) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: tg.name, namespace: "shop", annotations: { big: "y".repeat(8000) } },
      spec: { ports: [{ port: 5432 }] },
    }));
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      payload: syncRequest({ parent: egress({ targets }), children }),
    });
    assert.equal(res.statusCode, 200, res.body);
  });
});

describe("what the body parser drops for the Tailnet", () => {
  const EGRESS = "TailnetEgress.tailnet.internal/v1alpha1";
  const READ: Record<string, string[]> = {
    [EGRESS]: ["tag", "preAuthKeyIds"],
    "TailnetIngress.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds"],
    "TailnetGateway.tailnet.internal/v1alpha1": ["tag", "preAuthKeyIds", "dnsServiceIP"],
    "TailnetSite.tailnet.internal/v1alpha1": [],
  };
  type Served = { spec: Record<string, unknown>; status?: Record<string, unknown> };
  it("parses of workload statuses only what it reads, and answers byte for byte as with them whole", async (t) => {
    const { tailnetScaleBody } = await import("../../bench/tailnet-scale.js");
    const { startFakeHeadscale } = await import("../fakes/headscale/index.js");
    const { kindModules } = await import("../../src/kinds/composite/index.js");
    const hs = await startFakeHeadscale();
    t.after(() => hs.close());
    for (let i = 0; i < 300; i++) hs.addNode({ name: `node-${i}`, tags: [`tag:k8s-ns-${i % 50}-obj-${i}`] });
    // An explicit, granted tag another node carries: the egress's own only through status.preAuthKeyIds
    // (tenancy.ts tagTakenFromTailnet), else TagInUse and nothing rendered for it.
    const minted = await fetch(`${hs.url}/api/v1/preauthkey`, {
      method: "POST",
      headers: { authorization: `Bearer ${hs.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        aclTags: ["tag:db"],
        reusable: true,
        ephemeral: true,
        expiration: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    const keyId = ((await minted.json()) as { preAuthKey: { id: string } }).preAuthKey.id;
    hs.addNode({ name: "db-agent", tags: ["tag:db"], preAuthKeyId: keyId });
    const base = kindModules.get("tailnet");
    assert.ok(base);
    const now = () => new Date("2026-11-30T12:00:00Z");
    const seen: Record<string, Record<string, string[]>> = {};
    const spy = (name: string, reads: Record<string, string[]> | undefined) => {
      const kinds = new Map(kindModules);
      kinds.set("tailnet", {
        ...base,
        relatedStatusReads: reads,
        sync: (req, deps) => {
          const keys: Record<string, Set<string>> = {};
          for (const group of Object.keys(READ)) {
            keys[group] = new Set();
            for (const o of Object.values(req.related[group] ?? {})) {
              for (const k of Object.keys((o as { status?: object }).status ?? {})) keys[group].add(`status.${k}`);
            }
          }
          seen[name] = Object.fromEntries(Object.entries(keys).map(([g, k]) => [g, [...k].sort()]));
          return base.sync(req, deps);
        },
      });
      return build(t, { server: { kinds, deps: { now } } });
    };
    const dropping = await spy("dropping", base.relatedStatusReads as Record<string, string[]>);
    const keeping = await spy("keeping", undefined);
    const blind = await spy("blind", { ...READ, [EGRESS]: ["tag"] });
    const post = async (app: typeof dropping.app, payload: string) => {
      const res = await app.inject({
        method: "POST",
        url: "/hooks/tailnet/sync",
        headers: { "content-type": "application/json" },
        payload,
      });
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
      return res.body;
    };
    const withDb = (text: string) => {
      const body = JSON.parse(text) as {
        parent: Served;
        related: Record<string, Record<string, Served | K8sObject>>;
      };
      body.parent.spec.tenancy = { tags: [{ namespaceSelector: {}, tags: ["tag:db"] }] };
      body.related["Namespace.v1"] = { "ns-0": { apiVersion: "v1", kind: "Namespace", metadata: { name: "ns-0" } } };
      const db = body.related[EGRESS]["ns-0/obj-0"] as Served;
      db.spec.tag = "tag:db";
      db.status = { ...db.status, tag: "tag:db", preAuthKeyIds: [keyId] };
      return JSON.stringify(body);
    };
    const first = await post(dropping.app, withDb(tailnetScaleBody(300, hs)));
    const body = withDb(tailnetScaleBody(300, hs, (JSON.parse(first) as { status: Record<string, unknown> }).status));
    const a = await post(dropping.app, body);
    const b = await post(keeping.app, body);
    const c = await post(blind.app, body);
    assert.deepEqual(
      seen.dropping,
      {
        [EGRESS]: ["status.preAuthKeyIds", "status.tag"],
        "TailnetIngress.tailnet.internal/v1alpha1": ["status.tag"],
        "TailnetGateway.tailnet.internal/v1alpha1": ["status.dnsServiceIP"],
        "TailnetSite.tailnet.internal/v1alpha1": [],
      },
      "conditions, node and observedGeneration are never parsed; sites keep no status",
    );
    assert.ok(seen.keeping[EGRESS].includes("status.conditions"), "the body did carry them");
    assert.equal(a, b);
    assert.ok(b.includes("tag:db"), "the db egress renders with its own key recorded");
    assert.notEqual(c, b, "without status.preAuthKeyIds the db egress would be TagInUse: the case tests the field");
  });
});

describe("invalid specs become InvalidSpec, not 4xx", () => {
  const cases: { name: string; spec: Record<string, unknown>; message: string }[] = [
    {
      name: "bad tag",
      spec: { tag: "tag:Bad_Tag" },
      message: 'spec.tag: must match pattern "^tag:[a-z][a-z0-9-]{0,62}$"',
    },
    {
      name: "duplicate target names",
      spec: {
        targets: [
          { name: "pg", host: "a", ports: [{ port: 1 }] },
          { name: "pg", host: "b", ports: [{ port: 2 }] },
        ],
      },
      message: 'spec.targets[1].name: duplicate name "pg"',
    },
    { name: "missing tailnetRef", spec: { tailnetRef: undefined }, message: "spec.tailnetRef: required" },
  ];
  for (const c of cases) {
    it(`${c.name}: 200, Ready=False/InvalidSpec naming the field, children kept`, async (t) => {
      const { app } = await build(t);
      const parent = egress(c.spec);
      const svc = {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "pg", namespace: "shop", uid: "u", resourceVersion: "9" },
        spec: { ports: [{ port: 1 }] },
        status: { loadBalancer: {} },
      };
      const res = await app.inject({
        method: "POST",
        url: "/hooks/egress/sync",
        payload: syncRequest({ parent, children: [svc] }),
      });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as {
        status: { conditions: { type: string; status: string; reason: string; message: string }[] };
        children: unknown[];
      };
      const ready = body.status.conditions.find((x) => x.type === "Ready");
      assert.deepEqual(
        { status: ready?.status, reason: ready?.reason, message: ready?.message },
        { status: "False", reason: "InvalidSpec", message: c.message },
      );
      assert.deepEqual(body.children, [
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "pg", namespace: "shop" },
          spec: { ports: [{ port: 1 }] },
        },
      ]);
    });
  }

  it("a Tailnet with a bad CIDR gets PolicyRendered=False/InvalidSpec", async (t) => {
    const { app } = await build(t);
    const parent = parentObject("Tailnet", "home", {
      headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "k" } },
      reservedNetworks: ["10.96.0.1/12"],
    });
    const res = await app.inject({ method: "POST", url: "/hooks/tailnet/sync", payload: syncRequest({ parent }) });
    assert.equal(res.statusCode, 200, res.body);
    const conds = (res.json() as { status: { conditions: { type: string; reason: string; message: string }[] } }).status
      .conditions;
    const rendered = conds.find((c) => c.type === "PolicyRendered");
    assert.equal(rendered?.reason, "InvalidSpec");
    assert.match(rendered?.message ?? "", /^spec\.reservedNetworks\[0\]: /);
  });
});

/** A kind answering keys outside each hook's closed schema: dropped before the answer is sent. */
async function strictKeysDropped(t: TestContext) {
  const { kindModules } = await import("../../src/kinds/composite/index.js");
  const base = kindModules.get("site");
  assert.ok(base);
  const kinds = new Map(kindModules);
  const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: "b" }, extra: 1 };
  kinds.set("site", {
    ...base,
    customize: () =>
      [
        { apiVersion: "v1", resource: "pods", labelSelector: { matchLabels: { a: "b" }, bogus: 1 }, note: "x" },
      ] as never,
    sync: async () => ({ status: { phase: "x" }, children: [child], resyncAfterSeconds: 5, debug: true }) as never,
    finalize: async () => ({ status: {}, children: [], finalized: true, events: [] }) as never,
  });
  const { app } = await build(t, { server: { kinds } });
  const parent = parentObject(
    "TailnetSite",
    "lan",
    { tailnetRef: { name: "home" }, prefixes: ["10.0.0.0/8"], advertiserTags: ["tag:r"] },
    { namespace: "n" },
  );
  const call = async (hook: string, payload: unknown) => {
    const res = await app.inject({ method: "POST", url: `/hooks/site/${hook}`, payload: payload as object });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers["content-type"]), /^application\/json/);
    return res.json() as unknown;
  };
  assert.deepEqual(await call("customize", customizeRequest(parent)), {
    relatedResources: [{ apiVersion: "v1", resource: "pods", labelSelector: { matchLabels: { a: "b" } } }],
  });
  // children stay open: Metacontroller decodes them as Unstructured, so nothing inside is dropped
  assert.deepEqual(await call("sync", syncRequest({ parent })), {
    status: { phase: "x" },
    children: [child],
    resyncAfterSeconds: 5,
  });
  assert.deepEqual(await call("finalize", syncRequest({ parent, finalizing: true })), {
    status: {},
    children: [],
    finalized: true,
  });
}

describe("responses", () => {
  it("customize answers only relatedResources", async (t) => {
    const { app } = await build(t);
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/customize",
      payload: customizeRequest(egress()),
    });
    assert.equal(res.statusCode, 200);
    const body = res.json() as { relatedResources: { resource: string; names?: string[] }[] };
    assert.deepEqual(Object.keys(body), ["relatedResources"]);
    assert.deepEqual(
      body.relatedResources.map((r) => r.resource),
      [
        "tailnets",
        "secrets",
        "namespaces",
        "pods",
        "services",
        "tailnetingresses",
        "tailnetegresses",
        "tailnetgateways",
      ],
    );
    assert.deepEqual(body.relatedResources[1].names, ["tailnet-home-credentials"]);
  });

  it("customize answers 200 for a spec the CRD would refuse (found by fuzzing: targets as a string)", async (t) => {
    const { app } = await build(t);
    for (const [path, parent] of [
      ["/hooks/egress/customize", egress({ targets: "x" })],
      [
        "/hooks/ingress/customize",
        parentObject("TailnetIngress", "w", { tailnetRef: { name: "home" }, exposes: "x" }, { namespace: "m" }),
      ],
    ] as const) {
      const res = await app.inject({ method: "POST", url: path, payload: customizeRequest(parent) });
      assert.equal(res.statusCode, 200, res.body);
    }
  });

  it("sync answers only status, children (and resyncAfterSeconds); status is byte-identical on repeat", async (t) => {
    const { app } = await build(t);
    const parent = egress();
    const first = await app.inject({ method: "POST", url: "/hooks/egress/sync", payload: syncRequest({ parent }) });
    assert.equal(first.statusCode, 200);
    const body = first.json() as { status: Record<string, unknown>; children: unknown[] };
    for (const k of Object.keys(body)) assert.ok(["status", "children", "resyncAfterSeconds"].includes(k), k);
    const again = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      payload: syncRequest({ parent: { ...parent, status: body.status } }),
    });
    assert.equal(JSON.stringify((again.json() as { status: unknown }).status), JSON.stringify(body.status));
  });

  it("keys Metacontroller's strict v2 decoder refuses are dropped, never sent and never a 500", strictKeysDropped);

  it("finalize answers finalized", async (t) => {
    const { app } = await build(t);
    const res = await app.inject({
      method: "POST",
      url: "/hooks/site/finalize",
      payload: syncRequest({
        parent: parentObject(
          "TailnetSite",
          "lan",
          { tailnetRef: { name: "home" }, prefixes: ["192.168.1.0/24"], advertiserTags: ["tag:r"] },
          { namespace: "net" },
        ),
        finalizing: true,
      }),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((res.json() as { finalized: boolean }).finalized, true);
  });
});

/** The one slot taken: the next hook is refused with 429 and Retry-After; the first still answers 200. */
async function overMaxInFlight(t: TestContext) {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const { kindModules } = await import("../../src/kinds/composite/index.js");
  const slow = new Map(kindModules);
  const base = kindModules.get("egress");
  assert.ok(base);
  slow.set("egress", {
    ...base,
    sync: async (req, deps) => {
      await gate;
      return base.sync(req, deps);
    },
  });
  const { app } = await build(t, {
    config: { hooks: { maxInFlight: 1, retryAfterSeconds: 3 } },
    server: { kinds: slow },
  });
  const first = app.inject({ method: "POST", url: "/hooks/egress/sync", payload: syncRequest({ parent: egress() }) });
  await new Promise((r) => setTimeout(r, 20));
  const second = await app.inject({
    method: "POST",
    url: "/hooks/egress/sync",
    payload: syncRequest({ parent: egress() }),
  });
  assert.equal(second.statusCode, 429);
  assert.equal(second.headers["retry-after"], "3");
  release();
  assert.equal((await first).statusCode, 200);
}

describe("auth, limits, probes", () => {
  const token = "s3cret-hook-token-0123456789";
  it("a wrong or missing bearer token is 401 and leaks nothing; probes stay open", async (t) => {
    const { app, logs } = await build(t, { env: { HOOK_TOKEN: token } });
    for (const headers of [{}, { authorization: "Bearer nope" }, { authorization: token }]) {
      const res = await app.inject({
        method: "POST",
        url: "/hooks/egress/sync",
        headers,
        payload: syncRequest({ parent: egress() }),
      });
      assert.equal(res.statusCode, 401);
      assert.deepEqual(res.json(), { error: "unauthorized: a valid bearer token is required" });
    }
    const ok = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      headers: { authorization: `Bearer ${token}` },
      payload: syncRequest({ parent: egress() }),
    });
    assert.equal(ok.statusCode, 200);
    for (const url of ["/healthz", "/readyz", "/metrics"]) {
      assert.equal((await app.inject({ method: "GET", url })).statusCode, 200, url);
    }
    assert.ok(!logs.join("").includes(token), "token must not reach the log");
  });

  it("the token is compared as Metacontroller sends it: trimmed, scheme in any case", async (t) => {
    // pkg/hooks/auth.go sends TrimSpace(type) + " " + TrimSpace(secret): a Secret value ending in a
    // newline reaches the operator as HOOK_TOKEN with the newline, and the header without it.
    const { app } = await build(t, { env: { HOOK_TOKEN: `${token}\n` } });
    for (const authorization of [`Bearer ${token}`, `bearer ${token}`, `BEARER ${token}`, `Bearer  ${token} `]) {
      const res = await app.inject({
        method: "POST",
        url: "/hooks/egress/sync",
        headers: { authorization },
        payload: syncRequest({ parent: egress() }),
      });
      assert.equal(res.statusCode, 200, `${JSON.stringify(authorization)}: ${res.body}`);
    }
    for (const authorization of [`Basic ${token}`, "Bearer", "Bearer ", `Bearer ${token}x`, `Bearer${token}`]) {
      const res = await app.inject({
        method: "POST",
        url: "/hooks/egress/sync",
        headers: { authorization },
        payload: syncRequest({ parent: egress() }),
      });
      assert.equal(res.statusCode, 401, JSON.stringify(authorization));
    }
  });

  it("over maxInFlight → 429 with Retry-After", overMaxInFlight);

  it("an internal failure is a one-line 500 without stack", async (t) => {
    const { kindModules } = await import("../../src/kinds/composite/index.js");
    const broken = new Map(kindModules);
    const base = kindModules.get("egress");
    assert.ok(base);
    broken.set("egress", {
      ...base,
      sync: async () => {
        throw new Error("boom\n    at somewhere");
      },
    });
    const { app } = await build(t, { server: { kinds: broken } });
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      payload: syncRequest({ parent: egress() }),
    });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { error: "sync TailnetEgress shop/db failed: boom" });
  });

  it("hook metrics count by kind, hook and code with bounded labels", async (t) => {
    const { app } = await build(t);
    await app.inject({ method: "POST", url: "/hooks/egress/sync", payload: syncRequest({ parent: egress() }) });
    await app.inject({ method: "POST", url: "/hooks/whatever/sync", payload: {} });
    const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
    assert.match(text, /tailnet_hook_requests_total\{kind="egress",hook="sync",code="200"\} 1/);
    assert.match(text, /tailnet_hook_requests_total\{kind="unknown",hook="sync",code="404"\} 1/);
  });
});
