// TailnetUser end to end (and a TailnetAuthKey for a user): created if missing, adopted if present, an OIDC
// user or an ambiguous name only reported, deleted on deletion only when it created the user and says Delete.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parentObject } from "../../../fixtures/hooks.js";
import { API, type IdentityWorld, identityWorld, secretText } from "../../shared/world.js";

function applyUser(w: IdentityWorld, spec: Record<string, unknown>, name = "alice") {
  return w.mc.apply(parentObject("TailnetUser", name, { tailnetRef: { name: "home" }, ...spec }));
}

const userWrites = (w: IdentityWorld) =>
  w.fake
    .writes()
    .filter((r) => r.path.startsWith("/api/v1/user"))
    .map((r) => [r.method, r.path, r.body]);

describe("TailnetUser end to end", () => {
  it("creates a missing user with display name and e-mail, records the proof, and is stable", async (t) => {
    const w = await identityWorld(t);
    applyUser(w, { name: "alice", displayName: "Alice", email: "alice@example.com", deletionPolicy: "Delete" });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual(userWrites(w), [
      ["POST", "/api/v1/user", { name: "alice", displayName: "Alice", email: "alice@example.com" }],
    ]);
    assert.deepEqual(w.reasons("TailnetUser", "alice"), {
      UserPresent: "Created",
      ProfileMatches: "Matches",
      Ready: "Ready",
    });
    const status = w.get("TailnetUser", "alice")?.status ?? {};
    assert.equal(status.id, "1");
    assert.equal(status.createdUserId, "1");
    assert.equal(status.nodeCount, 0);
    const before = JSON.stringify(status);
    await w.mc.settle();
    assert.equal(JSON.stringify(w.get("TailnetUser", "alice")?.status), before);
    assert.equal(userWrites(w).length, 1);
    // Delete, and the operator created it: deleting the object deletes the user
    w.mc.delete(API, "TailnetUser", "alice");
    await w.mc.settle();
    assert.equal(w.get("TailnetUser", "alice"), undefined);
    assert.deepEqual(userWrites(w).at(-1), ["DELETE", "/api/v1/user/1", undefined]);
    assert.equal(w.fake.state.users.size, 0);
  });

  it("adopts an existing user as it is: no write, a different profile reported, never deleted", async (t) => {
    const w = await identityWorld(t);
    w.fake.addUser({ name: "bob", displayName: "Robert" });
    w.fake.addNode({ name: "bob-laptop", user: "bob" });
    applyUser(w, { name: "bob", displayName: "Bob", deletionPolicy: "Delete" }, "bob");
    await w.mc.settle();
    assert.deepEqual(userWrites(w), []);
    assert.deepEqual(w.reasons("TailnetUser", "bob"), {
      UserPresent: "Adopted",
      ProfileMatches: "Differs",
      Ready: "Ready",
    });
    const status = w.get("TailnetUser", "bob")?.status ?? {};
    assert.equal(status.nodeCount, 1);
    assert.equal(status.createdUserId, undefined);
    w.mc.delete(API, "TailnetUser", "bob");
    await w.mc.settle();
    assert.deepEqual(userWrites(w), []);
    assert.equal(w.fake.state.users.size, 1);
  });

  it("an OIDC user is reported, not touched; a name two users hold is Ambiguous and nothing is written", async (t) => {
    const w = await identityWorld(t);
    w.fake.addUser({ name: "carol", provider: "oidc", email: "carol@idp.example.com" });
    w.fake.addUser({ name: "dave", provider: "oidc" });
    w.fake.addUser({ name: "dave" });
    applyUser(w, { name: "carol", deletionPolicy: "Delete" }, "carol");
    applyUser(w, { name: "dave" }, "dave");
    await w.mc.settle();
    assert.deepEqual(w.reasons("TailnetUser", "carol").UserPresent, "ProviderManaged");
    assert.equal(w.get("TailnetUser", "carol")?.status?.provider, "oidc");
    assert.deepEqual(w.reasons("TailnetUser", "dave"), {
      UserPresent: "Ambiguous",
      ProfileMatches: "NotObserved",
      Ready: "Ambiguous",
    });
    assert.match(w.mc.condition("TailnetUser", "dave", "UserPresent")?.message ?? "", /held by users 2, 3/);
    w.mc.delete(API, "TailnetUser", "carol");
    await w.mc.settle();
    assert.deepEqual(userWrites(w), []);
  });

  it("a created user that still owns nodes is not deleted: finalize waits until the nodes are gone", async (t) => {
    const w = await identityWorld(t);
    applyUser(w, { name: "frank", deletionPolicy: "Delete" }, "frank");
    await w.mc.settle();
    const node = w.fake.addNode({ name: "frank-pc", user: "frank" });
    w.mc.delete(API, "TailnetUser", "frank");
    await w.mc.settle();
    assert.ok(w.get("TailnetUser", "frank"), "finalized while Headscale refused the delete");
    w.fake.state.nodes.delete(node.id);
    await w.mc.settle();
    assert.equal(w.get("TailnetUser", "frank"), undefined);
    assert.equal(w.fake.state.users.size, 0);
  });

  it("a TailnetAuthKey for a user: refused unless the TailnetUser lists the namespace; then the machine joins as the user", async (t) => {
    const w = await identityWorld(t);
    applyUser(w, { name: "alice" });
    w.mc.apply(
      parentObject(
        "TailnetAuthKey",
        "laptops",
        { tailnetRef: { name: "home" }, user: { name: "alice" }, secretName: "alice-join" },
        { namespace: "ci", creationTimestamp: w.clock.now.toISOString() },
      ),
    );
    await w.mc.settle();
    assert.equal(w.reasons("TailnetAuthKey", "laptops", "ci").Admitted, "UserNotAllowed");
    assert.equal(w.fake.count("POST", /^\/api\/v1\/preauthkey$/), 0);
    const user = w.get("TailnetUser", "alice");
    assert.ok(user);
    w.mc.apply({ ...user, spec: { ...(user.spec as Record<string, unknown>), authKeyNamespaces: ["ci"] } });
    await w.mc.settle();
    assert.equal(w.reasons("TailnetAuthKey", "laptops", "ci").Ready, "Ready");
    const posts = w.fake.writes().filter((r) => r.path === "/api/v1/preauthkey");
    assert.deepEqual(
      posts.map((r) => (r.body as { user?: string }).user),
      ["1"],
    );
    const node = w.fake.registerWithKey(secretText(w.secret("alice-join"), "authkey") ?? "", { name: "alice-laptop" });
    assert.equal(node.userId, "1");
    assert.deepEqual(node.tags, []);
  });
});
