import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { registrationFact, tagFact } from "../../../src/kinds/shared/agent-conditions.js";
import { failed, hsNode, ok, policy } from "./fixtures.js";

describe("tagFact", () => {
  const tag = "tag:k8s-shop-db";
  const rows = [
    {
      name: "tag in tagOwners",
      policy: ok(policy({ [tag]: [] })),
      want: ["known", "tag:k8s-shop-db is in the live policy's tagOwners"],
    },
    {
      name: "tag missing from tagOwners",
      policy: ok(policy({ "tag:other": [] })),
      want: [
        "pending",
        "tag:k8s-shop-db is not in the live policy's tagOwners yet (the Tailnet adds it when it applies the policy; in DryRun it is never written)",
      ],
    },
    {
      name: "no policy stored yet",
      policy: ok(null),
      want: ["pending", "no policy is stored in Headscale yet, so tag:k8s-shop-db is not in tagOwners"],
    },
    {
      name: "policy unreadable",
      policy: failed<null>("GET /api/v1/policy", "fault injected: 500", { status: 500 }),
      want: ["unreadable", "the live policy could not be read: Headscale GET /api/v1/policy: 500 fault injected: 500"],
    },
    {
      name: "policy not HuJSON",
      policy: ok({ policy: "{ nope", updatedAt: null }),
      want: ["unreadable", "the live policy could not be parsed: line 1:3: invalid symbol"],
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const f = tagFact(r.policy, tag);
      assert.deepEqual([f.state, f.message], r.want);
    });
  }
  it("follows the live policy as its text changes (the parse is remembered per text)", () => {
    const texts = [
      policy({ [tag]: [] }),
      policy({ "tag:other": [] }),
      { policy: "{ nope", updatedAt: null },
      policy({ "tag:z": [], [tag]: ["group:x"] }),
      policy({ [tag]: [] }),
    ];
    const states = [...texts, ...texts].map((p) => tagFact(ok(p), tag).state);
    assert.deepEqual(
      states,
      [..."kpukk", ..."kpukk"].map((c) => ({ k: "known", p: "pending", u: "unreadable" })[c]),
    );
    // a key named like Object.prototype's members is not a tag the policy owns
    assert.equal(tagFact(ok(policy({ "tag:a": [] })), "constructor").state, "pending");
    assert.equal(
      tagFact(ok({ policy: '{"tagOwners":{"__proto__":[]}}', updatedAt: null }), "__proto__").state,
      "known",
    );
  });
});

describe("registrationFact", () => {
  const tag = "tag:k8s-shop-db";
  it("one node", () => {
    const c = registrationFact(ok([hsNode({ id: "4", name: "shop-db", tags: [tag] })]), tag);
    assert.deepEqual([c.state, c.message], ["registered", "1 node carries tag:k8s-shop-db: shop-db"]);
  });
  it("two nodes, sorted", () => {
    const c = registrationFact(
      ok([hsNode({ id: "5", name: "shop-db-1", tags: [tag] }), hsNode({ id: "4", name: "shop-db", tags: [tag] })]),
      tag,
    );
    assert.equal(c.message, "2 nodes carry tag:k8s-shop-db: shop-db, shop-db-1");
  });
  it("none, with the key note", () => {
    const c = registrationFact(
      ok([hsNode({ id: "4", name: "x", tags: ["tag:other"] })]),
      tag,
      "no pre-auth key yet: boom",
    );
    assert.deepEqual(
      [c.state, c.message],
      ["absent", "no Headscale node carries tag:k8s-shop-db yet; no pre-auth key yet: boom"],
    );
  });
  it("nodes unreadable", () => {
    const c = registrationFact(failed("GET /api/v1/node", "ECONNREFUSED", { classification: "refused" }), tag);
    assert.deepEqual(
      [c.state, c.message],
      ["unreadable", "Headscale nodes could not be listed: Headscale GET /api/v1/node: ECONNREFUSED"],
    );
  });
});
