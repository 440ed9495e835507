import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MockAgent } from "undici";
import { createHeadscaleClient, type HeadscaleClient } from "../../src/headscale/client.js";
import { HeadscaleError } from "../../src/headscale/errors.js";
import { createTestPki } from "../fakes/agent/pki.js";
import { type FakeHeadscale, useFakeHeadscale } from "../fakes/headscale/index.js";
import { type After, clientOnFake, rejection } from "./helpers.js";

const setup = (t: After, timeoutMs = 10_000) => clientOnFake(t, { timeoutMs });

const nodeCalls = (fake: FakeHeadscale) => fake.count("GET", /^\/api\/v1\/node$/);

describe("transport failures", () => {
  test("refused: kind transport, classification refused, code 0; works again once the listener is back", async (t) => {
    const { fake, client, metrics } = await setup(t);
    await fake.fault({ kind: "refused" });
    const error = await rejection(client.nodes.list());
    assert.equal(error.kind, "transport");
    assert.equal(error.classification, "refused");
    assert.equal(error.message, "Headscale GET /api/v1/node: connection refused");
    assert.equal(error.status, undefined);
    assert.deepEqual(
      metrics.map((m) => [m.path, m.code]),
      [
        ["/api/v1/node", 0],
        ["/api/v1/node", 0],
        ["/api/v1/node", 0],
      ],
      "one metric per attempt, 1 + 2 retries",
    );
    await fake.clearFaults();
    assert.deepEqual(await client.nodes.list(), []);
  });

  test("reset: classification reset, retried for GET only", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "reset" });
    const get = await rejection(client.nodes.list());
    assert.equal(get.classification, "reset");
    assert.equal(get.message, "Headscale GET /api/v1/node: connection reset");
    assert.equal(nodeCalls(fake), 3);

    const post = await rejection(client.policy.check("{}"));
    assert.equal(post.classification, "reset");
    assert.equal(fake.count("POST", /^\/api\/v1\/policy\/check$/), 1, "writes are never retried");
  });

  test("timeout: no answer within timeoutMs is classification timeout", async (t) => {
    const { fake, client, metrics } = await setup(t, 150);
    await fake.fault({ kind: "timeout", path: /^\/api\/v1\/policy$/ });
    const error = await rejection(client.policy.put("{}"));
    assert.equal(error.kind, "transport");
    assert.equal(error.classification, "timeout");
    assert.equal(error.message, "Headscale PUT /api/v1/policy: timed out after 150ms");
    assert.deepEqual(
      metrics.map((m) => m.code),
      [0],
    );
  });

  test("malformed JSON with 200 is a decode error and is not retried", async (t) => {
    const { fake, client, metrics } = await setup(t);
    await fake.fault({ kind: "malformed", times: 1 });
    const error = await rejection(client.nodes.list());
    assert.equal(error.kind, "decode");
    assert.equal(error.message, "Headscale GET /api/v1/node: invalid JSON in response");
    assert.equal(nodeCalls(fake), 1);
    assert.equal(metrics[0].code, 200);
  });

  test("a 200 with the wrong shape is a decode error naming the problem", async (t) => {
    const mock = new MockAgent();
    mock.disableNetConnect();
    t.after(() => mock.close());
    mock.get("http://hs.test").intercept({ path: "/api/v1/node" }).reply(200, { nodes: "nope" });
    const client = createHeadscaleClient({ url: "http://hs.test", apiKey: "k", timeoutMs: 5000, dispatcher: mock });
    const error = await rejection(client.nodes.list());
    assert.equal(error.kind, "decode");
    assert.equal(error.detail, 'unexpected response: expected "nodes" to be an array');
  });
});

describe("retries", () => {
  test("GET is retried on 503 and succeeds when the server recovers", async (t) => {
    const { fake, client, metrics } = await setup(t);
    await fake.fault({ kind: "status", status: 503, times: 2 });
    assert.deepEqual(await client.nodes.list(), []);
    assert.equal(nodeCalls(fake), 3);
    assert.deepEqual(
      metrics.map((m) => m.code),
      [503, 503, 200],
    );
  });

  test("GET is retried on 502 and 504 but not on 500", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "status", status: 502, times: 1 });
    await fake.fault({ kind: "status", status: 504, times: 1 });
    await client.users.list();
    assert.equal(fake.count("GET", /^\/api\/v1\/user$/), 3);

    await fake.fault({ kind: "status", status: 500, times: 1 });
    const error = await rejection(client.users.list());
    assert.equal(error.status, 500);
    assert.equal(fake.count("GET", /^\/api\/v1\/user$/), 4);
  });

  test("POST/PUT/DELETE are never retried", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "status", status: 503 });
    await rejection(client.policy.put("{}"));
    await rejection(client.nodes.delete("1"));
    await rejection(
      client.preAuthKeys.create({ aclTags: ["tag:a"], reusable: false, ephemeral: false, expiration: new Date() }),
    );
    assert.equal(fake.writes().length, 3);
  });

  test("retries: 0 makes exactly one attempt", async (t) => {
    const fake = await useFakeHeadscale(t);
    const client: HeadscaleClient = createHeadscaleClient({
      url: fake.url,
      apiKey: fake.apiKey,
      timeoutMs: 10_000,
      retries: 0,
    });
    t.after(() => client.close());
    await fake.fault({ kind: "status", status: 503 });
    await rejection(client.nodes.list());
    assert.equal(nodeCalls(fake), 1);
  });

  test("slow answers within the timeout succeed", async (t) => {
    const { fake, client } = await setup(t);
    await fake.fault({ kind: "slow", delayMs: 30, times: 1 });
    assert.deepEqual(await client.apiHealth(), { databaseConnectivity: true });
  });

  test("a closed client fails fast without a request", async (t) => {
    const { fake, client } = await setup(t);
    await client.close();
    const error = await rejection(client.nodes.list());
    assert.equal(error.detail, "client closed");
    assert.equal(fake.requests.length, 0);
  });
});

describe("HTTPS with a custom CA (Tailnet caSecretRef)", () => {
  test("trusts the given CA and refuses the same server without it", async (t) => {
    const pki = await createTestPki();
    t.after(() => pki.cleanup());
    const leaf = await pki.issue({ names: ["localhost"] });
    const hs = await useFakeHeadscale(t, { tls: { cert: leaf.certPem, key: leaf.keyPem } });
    assert.match(hs.url, /^https:/);
    const url = hs.url.replace("127.0.0.1", "localhost"); // the name the certificate carries
    const trusted = createHeadscaleClient({
      url,
      apiKey: hs.apiKey,
      ca: pki.caPem,
      timeoutMs: 5000,
      retries: 0,
    });
    t.after(() => trusted.close());
    assert.deepEqual(await trusted.apiHealth(), { databaseConnectivity: true });
    const untrusted = createHeadscaleClient({ url, apiKey: hs.apiKey, timeoutMs: 5000, retries: 0 });
    t.after(() => untrusted.close());
    await assert.rejects(untrusted.apiHealth(), (e: unknown) => e instanceof HeadscaleError && e.kind === "transport");
  });
});
