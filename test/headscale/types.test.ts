import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  DecodeProblem,
  decodeCreatedPreAuthKey,
  decodeNode,
  decodeNodeList,
  decodePolicy,
  decodePreAuthKey,
  decodeUser,
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

test("a node list holds what repeats once: the tagged-devices user, empty route lists, shape flags (issue 36)", () => {
  const user = { id: "2147455555", name: "tagged-devices", displayName: "Tagged Devices", email: "" };
  const node = (id: number) => ({
    id: String(id),
    machineKey: `mkey:${id}`,
    nodeKey: `nodekey:${id}`,
    discoKey: `discokey:${id}`,
    user: { ...user },
    registerMethod: "REGISTER_METHOD_AUTH_KEY",
    approvedRoutes: [],
    availableRoutes: id === 2 ? ["10.0.0.0/24"] : [],
    tags: [`tag:n${id}`],
  });
  const [a, b, c] = decodeNodeList({ nodes: [node(1), node(2), node(3)] });
  assert.equal(a.user, b.user, "one user object for the list");
  assert.deepEqual(a.user, { ...decodeUser(user) });
  assert.equal(a.approvedRoutes, c.approvedRoutes, "one empty list");
  assert.throws(() => a.approvedRoutes.push("10.1.0.0/16"), TypeError, "the shared empty list cannot be changed");
  assert.deepEqual(b.availableRoutes, ["10.0.0.0/24"]);
  assert.equal(a.shape, c.shape);
  assert.deepEqual(a.shape, { hasTags: true, hasApprovedRoutes: true });
  assert.equal("discoKey" in a, false, "the disco key is read by nothing and not kept");
  assert.deepEqual(
    [a, b, c].map((n) => [n.id, n.nodeKey, n.tags[0], n.registerMethod]),
    [
      ["1", "nodekey:1", "tag:n1", "REGISTER_METHOD_AUTH_KEY"],
      ["2", "nodekey:2", "tag:n2", "REGISTER_METHOD_AUTH_KEY"],
      ["3", "nodekey:3", "tag:n3", "REGISTER_METHOD_AUTH_KEY"],
    ],
  );
  const [other] = decodeNodeList({ nodes: [{ ...node(4), user: { ...user, name: "alice", id: "7" } }] });
  assert.notEqual(other.user, a.user);
  assert.equal(other.user?.name, "alice", "users differ by content, not shared across lists by accident");
});
