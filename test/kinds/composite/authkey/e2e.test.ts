// TailnetAuthKey end to end: the Metacontroller emulator calls the real hook server, which talks to the fake
// Headscale. Issue, tag admission, renewal (publish first, expire the old key only once the Secret is observed
// holding the new one), ownership at deletion, and no key anywhere but the Secret.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API, type IdentityWorld, identityWorld, secretText } from "../../shared/world.js";
import { applyKey, GRANT } from "./world.js";

const keyOf = (w: IdentityWorld, id: string) => w.fake.state.preAuthKeys.get(id);
const valid = (w: IdentityWorld, id: string) => (keyOf(w, id)?.expiration.getTime() ?? 0) > w.clock.now.getTime();
const annotation = (w: IdentityWorld, key: string) => w.secret("runner-join")?.metadata.annotations?.[key];

describe("TailnetAuthKey end to end", () => {
  it("issues a tagged key into the named Secret with the server URL and CA; a machine joins tagged", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual(w.reasons("TailnetAuthKey", "runners", "ci"), {
      Admitted: "Granted",
      Issued: "Issued",
      RenewalDue: "NotDue",
      Expired: "Valid",
      Ready: "Ready",
    });
    const secret = w.secret("runner-join");
    const key = secretText(secret, "authkey") ?? "";
    assert.match(key, /^hskey-auth-/);
    // the Tailnet's spec.headscale.url (what machines log in to), not the operator's API URL
    assert.equal(secretText(secret, "login-server"), "https://headscale.example.com");
    assert.equal(secretText(secret, "ca.crt"), "-----BEGIN CERTIFICATE-----\nfake\n");
    const writes = w.fake.writes().map((r) => [r.method, r.path, r.body]);
    assert.deepEqual(writes, [
      [
        "POST",
        "/api/v1/preauthkey",
        { reusable: true, ephemeral: false, expiration: "2026-11-29T11:00:00Z", aclTags: ["tag:ci-runner"] },
      ],
    ]);
    const status = w.get("TailnetAuthKey", "runners", "ci")?.status ?? {};
    assert.equal(status.keyId, "1");
    assert.equal(status.expiresAt, "2026-11-29T11:00:00Z");
    assert.equal(status.renewAt, "2026-11-29T10:40:00Z");
    assert.deepEqual(status.preAuthKeyIds, ["1"]);
    // a machine outside the cluster joins with the Secret's key alone and is tagged
    const node = w.fake.registerWithKey(key, { name: "runner-a" });
    assert.deepEqual(node.tags, ["tag:ci-runner"]);
    // the key is nowhere but the Secret: not in status, Events, logs or metrics
    const metrics = await w.metrics.registry.metrics();
    // the last 64 characters (hskey-auth-<12>-<64>): the URL-safe secret may itself hold a "-", so splitting at the
    // last one could leave a few characters that any log line might contain by chance
    assert.match(key, /^hskey-auth-[A-Za-z0-9_-]{12}-[A-Za-z0-9_-]{64}$/);
    const secretPart = key.slice(-64);
    for (const [where, text] of [
      ["status", JSON.stringify(status)],
      ["events", JSON.stringify(w.events.events)],
      ["logs", w.logs.join("")],
      ["metrics", metrics],
    ] as const) {
      assert.ok(!text.includes(secretPart), `the key's secret part is in the ${where}`);
      assert.ok(!text.includes(key.slice(0, 24)), `the key's prefix is in the ${where}`);
    }
    assert.match(
      metrics,
      /tailnet_auth_key_expiry_timestamp_seconds\{kind="TailnetAuthKey",namespace="ci",name="runners"\} 1795950000/,
    );
  });

  it("a tag not granted to the namespace is refused: nothing minted, no Secret", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "other" } });
    applyKey(w);
    await w.mc.settle();
    assert.deepEqual(w.reasons("TailnetAuthKey", "runners", "ci"), {
      Admitted: "TagNotGranted",
      Issued: "NotAdmitted",
      RenewalDue: "NotAdmitted",
      Expired: "NotAdmitted",
      Ready: "TagNotGranted",
    });
    assert.deepEqual(w.fake.writes(), []);
    assert.equal(w.secret("runner-join"), undefined);
  });

  it("renews before expiry: the new key is published first, the old one expired only once the Secret holds the new", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w);
    await w.mc.settle();
    const oldKey = secretText(w.secret("runner-join"), "authkey") ?? "";
    w.fake.registerWithKey(oldKey, { name: "runner-a" });
    w.tick(41 * 60); // past renewAt (10:40), before expiry (11:00)
    const parent = () => w.get("TailnetAuthKey", "runners", "ci");
    const p = parent();
    assert.ok(p);
    // one sync: the new key is minted and published; the old one is still valid
    await w.mc.syncParent(p);
    assert.equal(annotation(w, "tailnet.internal/key-id"), "2");
    assert.ok(valid(w, "1"), "the old key was expired in the sync that minted the new one");
    assert.ok(valid(w, "2"));
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").RenewalDue, "Renewing");
    assert.deepEqual(parent()?.status?.preAuthKeyIds, ["1", "2"]);
    // the next sync observes the Secret holding key 2: key 1 is expired now
    const p2 = parent();
    assert.ok(p2);
    await w.mc.syncParent(p2);
    assert.ok(!valid(w, "1"), "the old key is still valid after the Secret was observed with the new one");
    assert.ok(valid(w, "2"));
    await w.mc.settle();
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").RenewalDue, "NotDue");
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").Ready, "Ready");
    // the machine re-joins with the new key
    const newKey = secretText(w.secret("runner-join"), "authkey") ?? "";
    assert.notEqual(newKey, oldKey);
    assert.deepEqual(w.fake.registerWithKey(newKey, { name: "runner-b" }).tags, ["tag:ci-runner"]);
    // exactly two mints and one expiry in all
    assert.deepEqual(
      w.fake.writes().map((r) => r.path),
      ["/api/v1/preauthkey", "/api/v1/preauthkey", "/api/v1/preauthkey/expire"],
    );
  });

  it("with an informer cache lagging behind status, renewal still expires only the older key, once", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" }, parentCacheLag: true });
    applyKey(w);
    await w.mc.settle();
    w.tick(41 * 60);
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.equal(annotation(w, "tailnet.internal/key-id"), "2");
    assert.ok(!valid(w, "1"));
    assert.ok(valid(w, "2"));
    assert.equal(w.fake.count("POST", /^\/api\/v1\/preauthkey$/), 2);
  });

  it("a renewal Headscale refuses is RenewalFailed while the key is valid, Expired once it is not", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w);
    await w.mc.settle();
    w.tick(41 * 60);
    await w.fake.fault({ kind: "status", method: "POST", path: /^\/api\/v1\/preauthkey$/, status: 500 });
    await w.mc.settle();
    const r = w.reasons("TailnetAuthKey", "runners", "ci");
    assert.equal(r.RenewalDue, "RenewalFailed");
    assert.equal(r.Ready, "Ready");
    assert.equal(annotation(w, "tailnet.internal/key-id"), "1");
    assert.match(
      await w.metrics.registry.metrics(),
      /tailnet_resource_condition\{kind="TailnetAuthKey",namespace="ci",name="runners",type="RenewalDue",reason="RenewalFailed"\} 1/,
    );
    w.tick(20 * 60);
    await w.mc.settle();
    const after = w.reasons("TailnetAuthKey", "runners", "ci");
    assert.equal(after.Expired, "Expired");
    assert.equal(after.Ready, "Expired");
    // the expired key's Secret is kept (never drop a child because Headscale refuses)
    assert.ok(w.secret("runner-join"));
  });

  it("deletion expires only the keys it minted; an admin's key with the same tag and a forged Secret annotation are left", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    // an administrator's key with the same tag, minted before the object
    const admin = await fetch(`${w.fake.url}/api/v1/preauthkey`, {
      method: "POST",
      headers: { authorization: `Bearer ${w.fake.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ reusable: true, expiration: "2027-01-01T00:00:00Z", aclTags: ["tag:ci-runner"] }),
    });
    assert.equal(admin.status, 200);
    w.tick(60);
    applyKey(w);
    await w.mc.settle();
    assert.equal(annotation(w, "tailnet.internal/key-id"), "2");
    // a namespace editor points the Secret's annotation at the admin's key
    const secret = w.secret("runner-join");
    assert.ok(secret?.metadata.annotations);
    secret.metadata.annotations["tailnet.internal/key-id"] = "1";
    await w.mc.settle();
    assert.ok(valid(w, "1"), "the admin's key was expired because the Secret named it");
    w.mc.delete(API, "TailnetAuthKey", "runners", "ci");
    await w.mc.settle();
    assert.equal(w.get("TailnetAuthKey", "runners", "ci"), undefined);
    assert.ok(valid(w, "1"), "deletion expired the admin's key");
    for (const k of w.fake.state.preAuthKeys.values()) {
      if (k.id !== "1") assert.ok(!valid(w, k.id), `key ${k.id} minted by the object is still valid`);
    }
  });
});
