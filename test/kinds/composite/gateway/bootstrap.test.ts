/**
 * The gateway's bootstrap key (planBootstrapKey, issue 32): the shared rule only — no early rotation on an identity
 * change, a rollout, a suspend, a recovery or a replica count (each replica keeps its node, so none needs a fresh
 * key) — and the older keys expired only once the observed Secret proves it holds the new one.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type KeyPlanInput, planBootstrapKey } from "../../../../src/kinds/composite/gateway/bootstrap.js";
import { gateway, hsKey, keySecret } from "./fixtures.js";

const T0 = new Date("2026-11-29T09:40:00Z"); // key 7: created 09:30, half-life 10:00, expires 10:30

function input(over: Partial<KeyPlanInput> = {}): KeyPlanInput {
  return {
    secrets: [keySecret(gateway())],
    now: T0,
    keys: { ok: true, value: [hsKey()] },
    owned: new Set(["7"]),
    ...over,
  };
}

describe("planBootstrapKey", () => {
  it("no key: create; expired: create; past half-life: rotate; else reuse until the half-life", () => {
    assert.deepEqual(planBootstrapKey(input({ secrets: [] })), {
      plan: { action: "create", why: "missing" },
      expire: [],
    });
    const expired = planBootstrapKey(input({ now: new Date("2026-11-29T10:31:00Z") }));
    assert.equal(expired.plan.action === "create" && expired.plan.why, "expired");
    const half = planBootstrapKey(input({ now: new Date("2026-11-29T10:00:00Z") }));
    assert.equal(half.plan.action === "create" && half.plan.why, "halfLife");
    const reuse = planBootstrapKey(input());
    assert.equal(reuse.plan.action, "reuse");
    assert.equal(reuse.recheckSeconds, 20 * 60);
  });

  it("a used key is reused as long as it is valid: a new pod of a replica with state needs no key", () => {
    const plan = planBootstrapKey(input({ keys: { ok: true, value: [hsKey({ used: true })] } }));
    assert.equal(plan.plan.action, "reuse");
  });

  it("older keys of ours expire only once the observed Secret proves the newer key; never a key not ours", () => {
    const keys = [
      hsKey({
        id: "5",
        key: "hskey-auth-old-***",
        createdAt: "2026-11-29T08:30:00Z",
        expiration: "2026-11-29T10:00:00Z",
      }),
      hsKey({
        id: "6",
        key: "hskey-auth-oth-***",
        createdAt: "2026-11-29T08:40:00Z",
        expiration: "2026-11-29T10:00:00Z",
      }),
      hsKey(),
    ];
    const owned = new Set(["5", "7"]);
    assert.deepEqual(planBootstrapKey(input({ keys: { ok: true, value: keys }, owned })).expire, ["5"]);
    // the Secret's value does not match the listing of key 7: nothing is proven, nothing expires
    const forged = keySecret(gateway());
    (forged.data as Record<string, string>).authkey = Buffer.from("hskey-auth-zzz-secret").toString("base64");
    assert.deepEqual(planBootstrapKey(input({ secrets: [forged], keys: { ok: true, value: keys }, owned })).expire, []);
    // the key list was not read: nothing expires
    assert.deepEqual(planBootstrapKey(input({ keys: { ok: false, error: "down" }, owned })).expire, []);
  });
});
