import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keyExpired } from "../../../../src/kinds/composite/egress/keys.js";
import { planCleanup } from "../../../../src/kinds/composite/egress/plan.js";
import { AT, hsNode, preAuthKey } from "../../shared/fixtures.js";

const TAG = "tag:k8s-shop-db";
const future = "2026-11-30T10:00:00Z";
const past = "2026-11-29T09:00:00Z";

describe("planCleanup", () => {
  const minted = (id: string) => preAuthKey({ id, aclTags: [TAG], expiration: future });
  const nodes = [
    { ...hsNode({ id: "12", name: "shop-db-1", tags: [TAG] }), preAuthKey: minted("3") },
    { ...hsNode({ id: "9", name: "shop-db", tags: [TAG] }), preAuthKey: minted("20") },
    hsNode({ id: "10", name: "shared", tags: [TAG, "tag:other"] }),
    hsNode({ id: "11", name: "laptop" }),
    // an admin's server carrying exactly the tag (registered through the CLI, or with the admin's own key)
    hsNode({ id: "13", name: "db-1", tags: [TAG] }),
    { ...hsNode({ id: "14", name: "db-2", tags: [TAG] }), preAuthKey: minted("21") },
  ];
  const keys = [
    preAuthKey({ id: "3", aclTags: [TAG], expiration: future }),
    preAuthKey({ id: "4", aclTags: [TAG], expiration: past }),
    preAuthKey({ id: "5", aclTags: ["tag:other"], expiration: future }),
    preAuthKey({ id: "6", aclTags: [TAG, "tag:other"], expiration: future }),
    preAuthKey({ id: "20", aclTags: ["tag:renamed"], expiration: future }),
    preAuthKey({ id: "21", aclTags: [TAG], expiration: null }),
    preAuthKey({ id: "22", aclTags: [TAG], expiration: "0001-01-01T00:00:00Z" }),
  ];

  it("only the nodes registered with keys it minted, and only those keys that are live, sorted by id", () => {
    assert.deepEqual(planCleanup(nodes, keys, new Set(["3", "4", "20", "404"]), AT), {
      expireKeys: ["3", "20"],
      deleteNodes: [
        { id: "9", name: "shop-db" },
        { id: "12", name: "shop-db-1" },
      ],
    });
  });

  it("nothing left once keys are expired and nodes gone", () => {
    const expired = keys.map((k) => ({ ...k, expiration: past }));
    assert.deepEqual(planCleanup(nodes.slice(2), expired, new Set(["20"]), AT), { expireKeys: [], deleteNodes: [] });
  });
});

describe("keyExpired", () => {
  const rows: [string, string | null, boolean][] = [
    ["in the future", future, false],
    ["in the past", past, true],
    ["exactly now (Headscale's expire sets now)", AT.toISOString(), true],
    ["year 0001 (created without expiration)", "0001-01-01T00:00:00Z", true],
    ["no expiration: never expires", null, false],
  ];
  for (const [name, expiration, want] of rows) {
    it(name, () => assert.equal(keyExpired(preAuthKey({ id: "1", aclTags: [TAG], expiration }), AT), want));
  }
});
