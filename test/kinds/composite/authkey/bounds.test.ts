// TailnetAuthKey bounds (issue 31 item 6): a key lives no longer than the Tailnet's spec.maxAuthKeyLifetime, a
// withdrawn grant expires the keys the object minted on the next sync, a Secret the object does not own is never
// written nor minted for, and a key whose Secret never landed is expired before the next one is minted.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type IdentityWorld, identityWorld, secretText } from "../../shared/world.js";
import { applyKey, GRANT, SPEC } from "./world.js";

const valid = (w: IdentityWorld, id: string) =>
  (w.fake.state.preAuthKeys.get(id)?.expiration.getTime() ?? 0) > w.clock.now.getTime();
const mints = (w: IdentityWorld) => w.fake.count("POST", /^\/api\/v1\/preauthkey$/);
const condition = (w: IdentityWorld, type: string) => w.mc.condition("TailnetAuthKey", "runners", type, "ci");

async function adminKey(w: IdentityWorld): Promise<void> {
  const r = await fetch(`${w.fake.url}/api/v1/preauthkey`, {
    method: "POST",
    headers: { authorization: `Bearer ${w.fake.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ reusable: true, expiration: "2027-01-01T00:00:00Z", aclTags: ["tag:ci-runner"] }),
  });
  assert.equal(r.status, 200);
}

describe("TailnetAuthKey bounds (issue 31)", () => {
  it("an expiry past the Tailnet's maxAuthKeyLifetime (default 720h) is refused: ExpiryTooLong, nothing minted", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w, { ...SPEC, expiry: "876000h", renewBefore: "1h" });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual(w.reasons("TailnetAuthKey", "runners", "ci"), {
      Admitted: "ExpiryTooLong",
      Issued: "NotAdmitted",
      RenewalDue: "NotAdmitted",
      Expired: "NotAdmitted",
      Ready: "ExpiryTooLong",
    });
    assert.equal(
      condition(w, "Admitted")?.message,
      "spec.expiry 876000h is longer than the Tailnet's spec.maxAuthKeyLifetime 720h; nothing is minted",
    );
    assert.deepEqual(w.fake.writes(), []);
    assert.equal(w.secret("runner-join"), undefined);
  });

  it("the admin's bound is the Tailnet's to set: 720h passes by default, 2h refuses a 3h expiry", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w, { ...SPEC, expiry: "720h", renewBefore: "1h" });
    await w.mc.settle();
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").Ready, "Ready");
    const w2 = await identityWorld(t, {
      tenancy: GRANT,
      namespaceLabels: { team: "ci" },
      tailnetSpec: { maxAuthKeyLifetime: "2h" },
    });
    applyKey(w2, { ...SPEC, expiry: "3h" });
    await w2.mc.settle();
    assert.equal(w2.reasons("TailnetAuthKey", "runners", "ci").Ready, "ExpiryTooLong");
    assert.equal(
      condition(w2, "Ready")?.message,
      "spec.expiry 3h is longer than the Tailnet's spec.maxAuthKeyLifetime 2h; nothing is minted",
    );
    assert.equal(mints(w2), 0);
  });

  it("withdrawing the namespace's tag grant expires the keys the object minted on the next sync, and no other", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    await adminKey(w); // key 1: an administrator's, same tag
    w.tick(60);
    applyKey(w);
    await w.mc.settle();
    assert.equal(w.get("TailnetAuthKey", "runners", "ci")?.status?.keyId, "2");
    assert.ok(valid(w, "2"));
    // the administrators take the grant away (the namespace no longer matches the grant's selector)
    const ns = w.mc.get("v1", "Namespace", "ci");
    assert.ok(ns?.metadata.labels);
    ns.metadata.labels.team = "other";
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.ok(!valid(w, "2"), "the key minted under the withdrawn grant is still valid");
    assert.ok(valid(w, "1"), "the administrator's key with the same tag was expired");
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").Ready, "TagNotGranted");
    assert.equal(
      condition(w, "Admitted")?.message,
      "tag:ci-runner is not granted to namespace ci (the Tailnet's spec.tenancy.tags); nothing is minted for it; the keys it minted are expired",
    );
    // after the administrator's key (the first write): one mint, then the expiry of that key alone
    assert.deepEqual(
      w.fake
        .writes()
        .slice(1)
        .map((r) => [r.path, r.body]),
      [
        [
          "/api/v1/preauthkey",
          { reusable: true, ephemeral: false, expiration: "2026-11-29T11:01:00Z", aclTags: ["tag:ci-runner"] },
        ],
        ["/api/v1/preauthkey/expire", { id: "2" }],
      ],
    );
    // later syncs write nothing more
    w.tick(120);
    await w.mc.settle();
    assert.equal(w.fake.writes().length, 3);
  });

  it("two TailnetAuthKeys naming one Secret: the second is SecretNotOwned and mints nothing; the first keeps its key", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w);
    await w.mc.settle();
    applyKey(w, SPEC, "copycat");
    for (let minute = 0; minute < 3; minute++) {
      await w.mc.settle();
      w.tick(61);
    }
    assert.equal(w.reasons("TailnetAuthKey", "copycat", "ci").Ready, "SecretNotOwned");
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").Ready, "Ready");
    assert.equal(mints(w), 1, "the second object minted keys for a Secret it cannot write");
    assert.equal(w.secret("runner-join")?.metadata.annotations?.["tailnet.internal/key-id"], "1");
    assert.ok(valid(w, "1"));
  });

  it("in a namespace being deleted nothing is minted or created, and the key it minted is expired", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    applyKey(w);
    await w.mc.settle();
    assert.ok(valid(w, "1"));
    const ns = w.mc.get("v1", "Namespace", "ci");
    assert.ok(ns);
    ns.metadata.deletionTimestamp = w.clock.now.toISOString();
    ns.status = { phase: "Terminating" };
    // the Secret is gone already (the namespace controller deletes it), the object waits on its finalizer
    w.mc.delete("v1", "Secret", "runner-join", "ci");
    for (let minute = 0; minute < 3; minute++) {
      await w.mc.settle();
      w.tick(61);
    }
    assert.equal(mints(w), 1, "a key was minted in a namespace being deleted");
    assert.ok(!valid(w, "1"), "the key it minted is still valid");
    assert.equal(w.secret("runner-join"), undefined, "a Secret was created in a namespace being deleted");
    assert.equal(
      condition(w, "Ready")?.message,
      "namespace ci is being deleted; nothing is minted or created in it; the keys it minted are expired",
    );
    assert.equal(w.reasons("TailnetAuthKey", "runners", "ci").Ready, "NamespaceNotAllowed");
  });

  it("a secretName naming a Secret the object does not own is refused (SecretNotOwned): nothing minted, the Secret untouched", async (t) => {
    const w = await identityWorld(t, { tenancy: GRANT, namespaceLabels: { team: "ci" } });
    const theirs = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "runner-join", namespace: "ci", labels: { app: "theirs" } },
      type: "Opaque",
      data: { password: Buffer.from("hunter2").toString("base64") },
    };
    w.mc.apply(structuredClone(theirs));
    applyKey(w);
    for (let minute = 0; minute < 3; minute++) {
      await w.mc.settle();
      w.tick(61);
    }
    assert.equal(mints(w), 0, "keys were minted for a Secret the object cannot write");
    assert.deepEqual(w.reasons("TailnetAuthKey", "runners", "ci"), {
      Admitted: "SecretNotOwned",
      Issued: "NotAdmitted",
      RenewalDue: "NotAdmitted",
      Expired: "NotAdmitted",
      Ready: "SecretNotOwned",
    });
    assert.equal(
      condition(w, "Ready")?.message,
      "Secret ci/runner-join exists and is not this TailnetAuthKey's (no controller reference to it); nothing is minted — name another spec.secretName or delete that Secret",
    );
    const after = w.secret("runner-join");
    assert.deepEqual(after?.data, theirs.data);
    assert.equal(secretText(after, "authkey"), undefined);
  });
});
