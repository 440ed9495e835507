/**
 * Plants the API key and a freshly created pre-auth key, drives every failure path of the client and the view,
 * and greps everything a caller could log or put into status (messages, details, stacks, inspected errors,
 * metric labels) for them.
 */

import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";
import { MockAgent } from "undici";
import { createHeadscaleClient } from "../../src/headscale/client.js";
import type { RequestMetric } from "../../src/headscale/http.js";
import { HeadscaleViews } from "../../src/headscale/view.js";
import { useFakeHeadscale } from "../fakes/headscale/index.js";

test("neither the API key nor a pre-auth key ever appears in errors or metric labels", async (t) => {
  const fake = await useFakeHeadscale(t, { policy: '{"tagOwners": {"tag:k8s": []}}' });
  const captured: string[] = [];
  const metrics: RequestMetric[] = [];
  const capture = (error: unknown) => {
    assert.ok(error instanceof Error);
    captured.push(String(error), error.message, error.stack ?? "", inspect(error, { depth: 5 }), JSON.stringify(error));
  };
  const attempt = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (error) {
      capture(error);
    }
  };
  const client = createHeadscaleClient({
    url: fake.url,
    apiKey: fake.apiKey,
    timeoutMs: 150,
    retries: 1,
    onRequest: (m) => metrics.push(m),
  });
  t.after(() => client.close());

  // Created through a patient client: under a loaded test runner the first request can outlast 150ms.
  const setupClient = createHeadscaleClient({ url: fake.url, apiKey: fake.apiKey, timeoutMs: 10_000 });
  t.after(() => setupClient.close());
  const created = await setupClient.preAuthKeys.create({
    aclTags: ["tag:k8s"],
    reusable: false,
    ephemeral: false,
    expiration: new Date("2031-01-01T00:00:00Z"),
  });
  // base64url prefixes are 12 characters and may hold "-" and "_": the secret is what follows prefix and dash.
  const secretPart = (key: string) => key.replace(/^hskey-(api|auth)-[A-Za-z0-9_-]{12}-/, "");
  // A pre-auth key whose prefix holds "_" and "-" (Headscale mints one about every third time).
  const planted = `hskey-auth-ab_cd-ef_gh1-${"Pl4nted_s3cret-".repeat(4)}abcd`;
  const secrets = [
    fake.apiKey,
    secretPart(fake.apiKey),
    created.key,
    secretPart(created.key),
    planted,
    secretPart(planted),
  ];
  assert.ok(secrets.every((s) => s.length >= 32));

  // HTTP errors of both kinds of body, on every resource.
  await attempt(client.nodes.delete("404"));
  await attempt(client.nodes.setTags("404", ["tag:k8s"]));
  await attempt(client.nodes.approveRoutes("404", ["10.0.0.0/8"]));
  await attempt(client.policy.check('{"bogus": 1}'));
  await attempt(client.policy.put("{ not json"));
  await attempt(client.preAuthKeys.create({ aclTags: [], reusable: false, ephemeral: false, expiration: new Date() }));
  // Faults: every transport class, the 401, malformed bodies.
  for (const kind of ["status", "malformed", "unauthorized", "reset", "timeout"] as const) {
    await fake.fault({ kind, status: 503 });
    await attempt(client.nodes.list());
    await attempt(client.preAuthKeys.expire(created.id));
    await fake.clearFaults();
  }
  await fake.fault({ kind: "refused" });
  await attempt(client.apiHealth());
  await fake.clearFaults();

  // A wrong key planted in a second client must not leak either.
  const wrongKey = `hskey-api-wrongprefix0-${"w".repeat(64)}`;
  const wrong = createHeadscaleClient({
    url: fake.url,
    apiKey: wrongKey,
    timeoutMs: 5000,
    onRequest: (m) => metrics.push(m),
  });
  t.after(() => wrong.close());
  await attempt(wrong.users.list());
  secrets.push(wrongKey);

  // A hostile or buggy server echoing both secrets back in its error message gets redacted.
  const mock = new MockAgent();
  mock.disableNetConnect();
  t.after(() => mock.close());
  const echo = `token ${fake.apiKey} rejected, also ${created.key} and ${planted}`;
  mock
    .get("http://echo.test")
    .intercept({ path: "/api/v1/node", method: "GET" })
    .reply(500, { code: 2, message: echo });
  mock.get("http://echo.test").intercept({ path: "/api/v1/policy", method: "PUT" }).reply(400, echo);
  const echoing = createHeadscaleClient({
    url: "http://echo.test",
    apiKey: fake.apiKey,
    timeoutMs: 5000,
    dispatcher: mock,
  });
  await attempt(echoing.nodes.list());
  await attempt(echoing.policy.put("{}"));

  // The view wraps the same errors into observations.
  const views = new HeadscaleViews({ timeoutMs: 150, cacheTTLSeconds: 1, retries: 0 });
  t.after(() => views.close());
  await fake.fault({ kind: "status", status: 500 });
  const view = views.view({ url: fake.url, apiKey: fake.apiKey });
  const observations = await Promise.all([view.nodes(), view.policy(), view.apiHealth(), view.capabilities()]);
  captured.push(inspect(observations, { depth: 8 }), JSON.stringify(observations));
  captured.push(inspect(view, { depth: 2 }), inspect(views, { depth: 2 }));
  await fake.clearFaults();

  assert.ok(captured.length > 50, "enough failures were captured");
  const labels = metrics.map((m) => `${m.method} ${m.path} ${m.code}`);
  assert.ok(labels.length > 20);
  const haystack = [...captured, ...labels].join("\n");
  for (const secret of secrets) {
    assert.equal(haystack.includes(secret), false, "a secret leaked into an error or metric label");
  }
  assert.match(haystack, /\[redacted\]/, "the echoed API key was redacted");
  assert.match(haystack, /hskey-auth-[A-Za-z0-9_-]{12}-\*\*\*/, "the echoed pre-auth key was masked");
  assert.ok(haystack.includes("hskey-auth-ab_cd-ef_gh1-***"), "the planted key is masked after its prefix");
  assert.ok(
    labels.every((l) => /^(GET|POST|PUT|DELETE) \/[a-z0-9/_{}]+ \d+$/i.test(l)),
    "labels are bounded templates",
  );
});
