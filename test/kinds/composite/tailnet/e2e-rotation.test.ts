/**
 * API keys that renew themselves (spec.headscale.apiKeyRotation), end to end: the hook server, the
 * Metacontroller loop and the fake Headscale, whose create/expire behave as 0.29.2's. Each test renews
 * through the loop and checks that a working key is left whatever fails, and that no key ever reaches a
 * log line, the status, an Event or the metrics.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { secretValue } from "../../../../src/kinds/shared/secrets.js";
import type { FakeHeadscale } from "../../../fakes/headscale/index.js";
import { apiKeySecret, baseConfigMap } from "./fixtures.js";
import { API, type Harness, harness, settleStable } from "./harness.js";

const DAY = 24 * 3600;
const rotation = (renewBeforeDays: number, expirationDays = 200) => ({
  headscale: {
    url: "http://set-by-harness",
    apiKeySecretRef: { namespace: "tailnet-system", name: "headscale-api-key" },
    apiKeyRotation: {
      enabled: true,
      expirationSeconds: expirationDays * DAY,
      renewBeforeSeconds: renewBeforeDays * DAY,
    },
  },
});
/** The fake's key expires 90 days after NOW: a 100-day window makes it due at once. */
const DUE = rotation(100);
const NOT_DUE = rotation(10);

const keyIn = (h: Harness, name: string) => secretValue(h.child("Secret", name), "apiKey");
const authenticates = async (fake: FakeHeadscale, key: string) =>
  (await fetch(`${fake.url}/api/v1/apikey`, { headers: { authorization: `Bearer ${key}` } })).status;
/** The Events of the ApiKeyRotation condition's changes, as `type reason`. */
const rotationEvents = (h: Harness) =>
  h.events.events.filter((e) => e.condition === "ApiKeyRotation").map((e) => `${e.type} ${e.reason}`);
const tailnetObject = (h: Harness) => h.mc.get(API, "Tailnet", "home") as K8sObject;

/** No key (nor its secret part) in logs, status, Events or metrics. */
async function assertNoKeyShown(h: Harness, keys: string[]) {
  const shown = [
    h.logs.join("\n"),
    JSON.stringify(h.status()),
    JSON.stringify(h.events.events),
    await h.metricsText(),
    JSON.stringify(h.mc.calls.map((c) => (c.response as { status?: unknown }).status)),
  ].join("\n");
  for (const key of keys) {
    assert.ok(!shown.includes(key), "a key was shown");
    assert.ok(!shown.includes(key.slice(-40)), "a key's secret part was shown");
  }
}

describe("Tailnet e2e: API key rotation", () => {
  it("renews the key: create, verify, publish; a later sync expires the old one; the old key is refused", async (t) => {
    const h = await harness(t, { spec: DUE });
    const oldKey = h.fake.apiKey;
    await settleStable(h);
    const newKey = keyIn(h, "tailnet-home-api-key") ?? "";
    assert.match(newKey, /^hskey-api-[A-Za-z0-9_-]{12}-[A-Za-z0-9_-]{64}$/);
    assert.notEqual(newKey, oldKey);
    assert.equal(keyIn(h, "tailnet-home-credentials"), newKey, "the workload kinds read the renewed key");
    const steps = h.syncReasons("ApiKeyRotation");
    assert.deepEqual(steps.slice(0, 2), ["Renewed", "OldKeyExpired"]);
    assert.equal(h.reason("ApiKeyRotation"), "NotDue");
    assert.equal(h.reason("ApiKeyValid"), "Valid");
    // Headscale: the old key expired by the operator, the new one valid for 200 days.
    assert.equal(await authenticates(h.fake, oldKey), 401);
    assert.equal(await authenticates(h.fake, newKey), 200);
    const [oldRecord, newRecord] = [...h.fake.state.apiKeys.values()];
    assert.ok(oldRecord.expiration.getTime() <= h.now().getTime());
    assert.equal(newRecord.expiration.getTime(), h.now().getTime() + 200 * DAY * 1000);
    assert.equal(h.fake.count("POST", /^\/api\/v1\/apikey$/), 1, "one key created");
    assert.equal(h.fake.count("POST", /^\/api\/v1\/apikey\/expire$/), 1, "one key expired");
    const prefix = `hskey-api-${newKey.slice(10, 22)}-***`;
    assert.deepEqual(h.status().apiKeyRotation, {
      keyPrefix: prefix,
      expiresAt: new Date(h.now().getTime() + 200 * DAY * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
      renewAt: new Date(h.now().getTime() + 100 * DAY * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
      rotatedAt: h
        .now()
        .toISOString()
        .replace(/\.\d{3}Z$/, "Z"),
    });
    // Each step's Event is the ApiKeyRotation condition's change (src/pipeline/condition-events.ts).
    assert.deepEqual(rotationEvents(h), ["Normal Renewed", "Normal OldKeyExpired", "Normal NotDue"]);
    const metrics = await h.metricsText();
    for (const step of ["create", "verify", "expire"]) {
      assert.match(
        metrics,
        new RegExp(`tailnet_api_key_rotation_steps_total\\{tailnet="home",step="${step}",result="ok"\\} 1`),
      );
    }
    await assertNoKeyShown(h, [oldKey, newKey]);
    // The user's Secret is never written; the Tailnet keeps working with the renewed key.
    assert.equal(secretValue(h.mc.get("v1", "Secret", "headscale-api-key", "tailnet-system"), "apiKey"), oldKey);
  });

  it("an outage at each step leaves a working key: create fails, expire fails, then it completes", async (t) => {
    const h = await harness(t, { spec: DUE });
    const oldKey = h.fake.apiKey;
    await h.fake.fault({ kind: "status", status: 503, method: "POST", path: /^\/api\/v1\/apikey$/, times: 1 });
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "CreateFailed");
    assert.match(h.condition("ApiKeyRotation").message, /stays in use and the next sync tries again$/);
    assert.equal(keyIn(h, "tailnet-home-credentials"), oldKey);
    assert.equal(h.child("Secret", "tailnet-home-api-key"), undefined, "nothing published");
    assert.equal(await authenticates(h.fake, oldKey), 200);

    await h.fake.fault({ kind: "status", status: 503, path: /^\/api\/v1\/apikey\/expire$/, times: 1 });
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "Renewed");
    const newKey = keyIn(h, "tailnet-home-api-key") ?? "";
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "ExpireFailed");
    assert.equal(await authenticates(h.fake, oldKey), 200, "both keys work while the expire fails");
    assert.equal(await authenticates(h.fake, newKey), 200);
    assert.equal(
      h.child("Secret", "tailnet-home-api-key")?.metadata.annotations?.["tailnet.internal/api-key-replaces"],
      `hskey-api-${oldKey.slice(10, 22)}-***`,
    );

    await settleStable(h);
    assert.equal(h.reason("ApiKeyRotation"), "NotDue");
    assert.equal(await authenticates(h.fake, oldKey), 401);
    assert.equal(await authenticates(h.fake, newKey), 200);
    assert.match(
      await h.metricsText(),
      /tailnet_api_key_rotation_steps_total\{tailnet="home",step="create",result="failed"\} 1/,
    );
    assert.match(
      await h.metricsText(),
      /tailnet_api_key_rotation_steps_total\{tailnet="home",step="expire",result="failed"\} 1/,
    );
    assert.deepEqual(rotationEvents(h), [
      "Warning CreateFailed",
      "Normal Renewed",
      "Warning ExpireFailed",
      "Normal OldKeyExpired",
      "Normal NotDue",
    ]);
    await assertNoKeyShown(h, [oldKey, newKey]);
  });

  it("Headscale down after publishing: both keys kept, nothing expired, children kept; recovery completes it", async (t) => {
    const h = await harness(t, { spec: DUE });
    const oldKey = h.fake.apiKey;
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "Renewed");
    const newKey = keyIn(h, "tailnet-home-api-key") ?? "";
    const children = h.children();
    await h.fake.fault({ kind: "refused" });
    h.advance(60_000);
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "CannotVerify");
    assert.equal(h.reason("ApiReachable"), "Unreachable");
    assert.deepEqual(h.children(), children, "no child dropped");
    assert.equal(keyIn(h, "tailnet-home-api-key"), newKey);
    await h.fake.clearFaults();
    h.advance(60_000);
    await settleStable(h);
    assert.equal(h.reason("ApiKeyRotation"), "NotDue");
    assert.equal(await authenticates(h.fake, oldKey), 401);
    assert.equal(await authenticates(h.fake, newKey), 200);
  });

  it("a new key that does not work is never published and is expired again", async (t) => {
    const h = await harness(t, { spec: NOT_DUE });
    await settleStable(h);
    assert.equal(h.reason("ApiKeyRotation"), "NotDue");
    // The key list is cached from the last sync: the next GET /api/v1/apikey is the new key's verification.
    await h.fake.fault({ kind: "status", status: 503, method: "GET", path: /^\/api\/v1\/apikey$/, times: 1 });
    h.respec(DUE);
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "VerifyFailed");
    assert.match(h.condition("ApiKeyRotation").message, /so it was not published and it was expired again/);
    assert.equal(h.child("Secret", "tailnet-home-api-key"), undefined);
    assert.equal(keyIn(h, "tailnet-home-credentials"), h.fake.apiKey);
    const created = [...h.fake.state.apiKeys.values()][1];
    assert.ok(created.expiration.getTime() <= h.now().getTime(), "the unverified key was expired again");
    await settleStable(h);
    assert.equal(h.reason("ApiKeyRotation"), "NotDue", "the next sync renews");
  });

  it("a renewed key Headscale refuses falls back to the spec's key, which still works", async (t) => {
    const h = await harness(t, { spec: DUE });
    const oldKey = h.fake.apiKey;
    await h.mc.syncParent(tailnetObject(h));
    const newKey = keyIn(h, "tailnet-home-api-key") ?? "";
    // Headscale loses the renewed key (a database restored from before the renewal).
    for (const k of h.fake.state.apiKeys.values()) if (k.key === newKey) h.fake.state.apiKeys.delete(k.id);
    h.advance(60_000);
    await h.mc.syncParent(tailnetObject(h));
    assert.equal(h.reason("ApiKeyRotation"), "NewKeyRejected");
    assert.equal(h.reason("ApiKeyValid"), "Valid");
    assert.equal(h.child("Secret", "tailnet-home-api-key"), undefined, "the refused key is dropped");
    assert.equal(keyIn(h, "tailnet-home-credentials"), oldKey);
    await settleStable(h);
    assert.equal(h.reason("ApiKeyRotation"), "NotDue", "renewed again from the spec's key");
    assert.notEqual(keyIn(h, "tailnet-home-api-key"), newKey);
    await assertNoKeyShown(h, [oldKey, newKey, keyIn(h, "tailnet-home-api-key") ?? ""]);
  });

  it("rotation off: no ApiKeyRotation condition, no key created, the Tailnet as before", async (t) => {
    const h = await harness(t, {
      objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap()],
    });
    await settleStable(h);
    assert.equal(h.mc.condition("Tailnet", "home", "ApiKeyRotation"), undefined);
    assert.equal(h.status().apiKeyRotation, undefined);
    assert.equal(h.fake.count("POST", /^\/api\/v1\/apikey/), 0);
  });
});
