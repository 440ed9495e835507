import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  DecodeProblem,
  decodeCreatedPreAuthKey,
  decodeNode,
  decodeNodeList,
  decodePolicy,
  decodePreAuthKey,
  decodeUserList,
} from "../../src/headscale/types.js";

describe("defensive decoding", () => {
  test("a sparse node: ids stringified, missing arrays [], unknown fields ignored, shape recorded", () => {
    const node = decodeNode({ id: 12, name: "n", forcedTags: ["tag:old"], somethingNew: { x: 1 } });
    assert.equal(node.id, "12");
    assert.deepEqual(node.ipAddresses, []);
    assert.deepEqual(node.tags, []);
    assert.deepEqual(node.approvedRoutes, []);
    assert.equal(node.user, null);
    assert.equal(node.preAuthKey, null);
    assert.equal(node.registerMethod, "REGISTER_METHOD_UNSPECIFIED");
    assert.deepEqual(node.shape, { hasTags: false, hasApprovedRoutes: false });
    assert.equal("somethingNew" in node, false);
  });

  test("expiry: null and year 0001 mean never; a real date is kept", () => {
    assert.equal(decodeNode({ expiry: null }).expiry, null);
    assert.equal(decodeNode({ expiry: "0001-01-01T00:00:00Z" }).expiry, null);
    assert.equal(decodeNode({ expiry: "2026-08-01T00:00:00Z" }).expiry, "2026-08-01T00:00:00Z");
  });

  test("a pre-auth key's year-0001 expiration is kept: it means already expired", () => {
    assert.equal(decodePreAuthKey({ expiration: "0001-01-01T00:00:00Z" }).expiration, "0001-01-01T00:00:00Z");
  });

  test("a ≤0.25 pre-auth key user given as a name becomes a user with that name", () => {
    assert.equal(decodePreAuthKey({ user: "alice" }).user?.name, "alice");
    assert.equal(decodePreAuthKey({ user: "" }).user, null);
  });

  test("lists: missing or null arrays are empty, a wrong type is a DecodeProblem", () => {
    assert.deepEqual(decodeNodeList({}), []);
    assert.deepEqual(decodeUserList({ users: null }), []);
    assert.throws(() => decodeNodeList({ nodes: {} }), DecodeProblem);
    assert.throws(() => decodeNodeList([]), DecodeProblem);
  });

  test("the policy text is never defaulted", () => {
    assert.deepEqual(decodePolicy({ policy: "", updatedAt: null }), { policy: "", updatedAt: null });
    assert.throws(() => decodePolicy({ updatedAt: null }), /policy/);
  });

  test("a created pre-auth key must carry its secret", () => {
    assert.throws(() => decodeCreatedPreAuthKey({ preAuthKey: { id: "1", key: "" } }), DecodeProblem);
    assert.throws(() => decodeCreatedPreAuthKey({ preAuthKey: { id: "1", key: "hskey-auth-abc-***" } }), DecodeProblem);
    assert.equal(
      decodeCreatedPreAuthKey({ preAuthKey: { id: "1", key: "hskey-auth-abc-def" } }).key,
      "hskey-auth-abc-def",
    );
  });
});
