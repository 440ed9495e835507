/**
 * Registration in the fake as 0.29.3 does it (juanfont/headscale v0.29.3 hscontrol/state/state.go
 * HandleNodeFromPreAuthKey and findExistingNodeForPAK, hscontrol/auth.go handleRegister, hscontrol/state/
 * node_store.go resolveGivenName, hscontrol/app.go ephemeralGC): by machine key, in place, keys validated only
 * where Headscale validates them.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type FakeHeadscale, useFakeHeadscale } from "./index.js";
import { EPHEMERAL_INACTIVITY_MS } from "./register.js";

type After = { after: (fn: () => Promise<void> | void) => void };

const POLICY = JSON.stringify({ tagOwners: { "tag:a": [], "tag:b": [] } });
const M1 = "mkey:1111";
const M2 = "mkey:2222";

async function world(t: After) {
  let ms = Date.parse("2026-12-01T10:00:00Z");
  const fake = await useFakeHeadscale(t, { policy: POLICY, now: () => new Date(ms) });
  return {
    fake,
    advance: (delta: number) => {
      ms += delta;
    },
  };
}

/** A key minted through the API, as the operator mints it; returns its id and full secret. */
async function mint(
  fake: FakeHeadscale,
  opts: { tags?: string[]; user?: string; reusable?: boolean; ephemeral?: boolean } = {},
) {
  const res = await fetch(`${fake.url}/api/v1/preauthkey`, {
    method: "POST",
    headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      aclTags: opts.tags ?? (opts.user ? [] : ["tag:a"]),
      ...(opts.user ? { user: opts.user } : {}),
      reusable: opts.reusable ?? true,
      ephemeral: opts.ephemeral ?? false,
      expiration: "2026-12-02T10:00:00Z",
    }),
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { preAuthKey: { id: string; key: string } }).preAuthKey;
}

async function expireKey(fake: FakeHeadscale, id: string) {
  const res = await fetch(`${fake.url}/api/v1/preauthkey/expire`, {
    method: "POST",
    headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ id }),
  });
  assert.equal(res.status, 200);
}

describe("registration by machine key (HandleNodeFromPreAuthKey)", () => {
  test("the same machine with a tagged key: the node is updated in place, same id and addresses, new node key", async (t) => {
    const { fake } = await world(t);
    const key = await mint(fake);
    const first = fake.register(key.key, { name: "shop-db", machineKey: M1, nodeKey: "nodekey:k1" });
    assert.equal(first.created, true);
    const { id, ipv4, ipv6, givenName } = first.node;
    const again = fake.register(key.key, { name: "shop-db", machineKey: M1, nodeKey: "nodekey:k2" });
    assert.equal(again.created, false);
    assert.equal(again.node, first.node);
    assert.deepEqual(
      [again.node.id, again.node.ipv4, again.node.ipv6, again.node.givenName, again.node.nodeKey],
      [id, ipv4, ipv6, givenName, "nodekey:k2"],
    );
    assert.equal(fake.state.nodes.size, 1);
    assert.equal(givenName, "shop-db", "no -1: it is the same node");
  });

  test("a reusable key is never marked used; a single-use key on its first registration only (#2830)", async (t) => {
    const { fake } = await world(t);
    const reusable = await mint(fake);
    fake.register(reusable.key, { name: "r", machineKey: M1, nodeKey: "nodekey:r1" });
    fake.register(reusable.key, { name: "r2", machineKey: M2 });
    assert.equal(fake.state.preAuthKeys.get(reusable.id)?.used, false);

    const once = await mint(fake, { reusable: false });
    const node = fake.register(once.key, { name: "o", machineKey: "mkey:o", nodeKey: "nodekey:o1" }).node;
    assert.equal(fake.state.preAuthKeys.get(once.id)?.used, true);
    // the same node key again (a container restart that runs `tailscale up --authkey`): skips validation
    const same = fake.register(once.key, { name: "o", machineKey: "mkey:o", nodeKey: "nodekey:o1" });
    assert.equal(same.node.id, node.id);
    // a node-key rotation must present a valid key, and this one is spent
    assert.throws(
      () => fake.register(once.key, { name: "o", machineKey: "mkey:o", nodeKey: "nodekey:o2" }),
      /^Error: fake headscale: authkey already used$/,
    );
    assert.throws(() => fake.register(once.key, { name: "p", machineKey: "mkey:p" }), /authkey already used/);
    assert.equal(fake.state.nodes.size, 3);
  });

  test("an expired key: refused for a new machine and a node-key rotation, accepted for the same node key", async (t) => {
    const { fake, advance } = await world(t);
    const key = await mint(fake);
    const node = fake.register(key.key, { name: "gw", machineKey: M1, nodeKey: "nodekey:g1" }).node;
    advance(1000);
    await expireKey(fake, key.id);
    advance(1000);
    assert.throws(
      () => fake.register(key.key, { name: "gw2", machineKey: M2 }),
      /^Error: fake headscale: authkey expired$/,
    );
    assert.throws(
      () => fake.register(key.key, { name: "gw", machineKey: M1, nodeKey: "nodekey:g2" }),
      /^Error: fake headscale: authkey expired$/,
    );
    assert.equal(node.nodeKey, "nodekey:g1", "the refused rotation changed nothing");
    const same = fake.register(key.key, { name: "gw", machineKey: M1, nodeKey: "nodekey:g1" });
    assert.equal(same.node.id, node.id);
    assert.equal(same.created, false);
  });

  test("a different tagged key re-tags the node in place and must itself be valid (isRetag)", async (t) => {
    const { fake, advance } = await world(t);
    const a = await mint(fake, { tags: ["tag:a"] });
    const b = await mint(fake, { tags: ["tag:b"] });
    const node = fake.register(a.key, { name: "n", machineKey: M1, nodeKey: "nodekey:n1" }).node;
    const retagged = fake.register(b.key, { name: "n", machineKey: M1, nodeKey: "nodekey:n1" }).node;
    assert.equal(retagged.id, node.id);
    assert.deepEqual([retagged.tags, retagged.preAuthKeyId], [["tag:b"], b.id]);
    advance(1000);
    await expireKey(fake, a.id);
    advance(1000);
    assert.throws(
      () => fake.register(a.key, { name: "n", machineKey: M1, nodeKey: "nodekey:n1" }),
      /^Error: fake headscale: authkey expired$/,
      "a spent key cannot re-tag, even with the same node key",
    );
    assert.deepEqual(node.tags, ["tag:b"]);
  });

  test("a user's key for a machine whose node is tagged finds that tagged node and keeps it tagged (#3312)", async (t) => {
    const { fake } = await world(t);
    const alice = fake.addUser({ name: "alice" });
    const tagged = await mint(fake, { tags: ["tag:a"] });
    const users = await mint(fake, { user: alice.id });
    const node = fake.register(tagged.key, { name: "n", machineKey: M1, nodeKey: "nodekey:u1" }).node;
    const again = fake.register(users.key, { name: "n", machineKey: M1, nodeKey: "nodekey:u2" });
    assert.deepEqual(
      [again.node.id, again.created, again.node.tags, again.node.userId],
      [node.id, false, ["tag:a"], null],
    );
  });

  test("a tagged node's stale past expiry is cleared on re-registration (#3371)", async (t) => {
    const { fake } = await world(t);
    const key = await mint(fake);
    const node = fake.register(key.key, { name: "n", machineKey: M1, nodeKey: "nodekey:e1" }).node;
    node.expiry = new Date("2026-01-01T00:00:00Z");
    fake.register(key.key, { name: "n", machineKey: M1, nodeKey: "nodekey:e1" });
    assert.equal(node.expiry, null);
  });

  test("an unknown machine key (lost state) is a new node: new id, new addresses, givenName bumped -1, -2", async (t) => {
    const { fake } = await world(t);
    const key = await mint(fake);
    const nodes = [M1, M2, "mkey:3333"].map((m) => fake.register(key.key, { name: "shop-db", machineKey: m }));
    assert.deepEqual(
      nodes.map((r) => [r.created, r.node.givenName]),
      [
        [true, "shop-db"],
        [true, "shop-db-1"],
        [true, "shop-db-2"],
      ],
    );
    assert.equal(new Set(nodes.map((r) => r.node.id)).size, 3);
    assert.equal(new Set(nodes.map((r) => r.node.ipv4)).size, 3);
    // resolveGivenName takes the first free name: with the first gone, a newcomer gets the bare name
    fake.state.nodes.delete(nodes[0].node.id);
    assert.equal(fake.register(key.key, { name: "shop-db", machineKey: "mkey:4444" }).node.givenName, "shop-db");
  });

  test("a node key bound to another machine cannot be claimed (ErrNodeKeyInUse)", async (t) => {
    const { fake } = await world(t);
    const key = await mint(fake);
    fake.register(key.key, { name: "victim", machineKey: M1, nodeKey: "nodekey:v" });
    const other = fake.register(key.key, { name: "other", machineKey: M2, nodeKey: "nodekey:o" }).node;
    assert.throws(
      () => fake.register(key.key, { name: "other", machineKey: M2, nodeKey: "nodekey:v" }),
      /^Error: fake headscale: node key already in use by another machine$/,
    );
    assert.equal(other.nodeKey, "nodekey:o");
  });
});

describe("reconnect, disconnect and the ephemeral sweep", () => {
  test("a restart with state (Auth nil) is the same node, online again, with no key involved (auth.go)", async (t) => {
    const { fake, advance } = await world(t);
    const key = await mint(fake, { reusable: false });
    const node = fake.register(key.key, { name: "n", machineKey: M1, nodeKey: "nodekey:s1" }).node;
    fake.disconnect(node.id);
    assert.equal(node.online, false);
    advance(1000);
    await expireKey(fake, key.id);
    advance(60_000);
    const back = fake.reconnect({ machineKey: M1, nodeKey: "nodekey:s1" });
    assert.equal(back, node);
    assert.equal(back.online, true);
    assert.deepEqual(back.lastSeen, new Date("2026-12-01T10:01:01Z"));
    assert.equal(fake.state.nodes.size, 1);
  });

  test("reconnect refuses another machine's session and sends an unknown node key to log in", async (t) => {
    const { fake } = await world(t);
    const key = await mint(fake);
    fake.register(key.key, { name: "n", machineKey: M1, nodeKey: "nodekey:s1" });
    assert.throws(
      () => fake.reconnect({ machineKey: M2, nodeKey: "nodekey:s1" }),
      /^Error: fake headscale: node exists with a different machine key$/,
    );
    assert.throws(
      () => fake.reconnect({ machineKey: M1, nodeKey: "nodekey:unknown" }),
      /^Error: fake headscale: node key not registered, the client needs to log in$/,
    );
  });

  test("non-ephemeral nodes stay; an ephemeral one goes once offline for the inactivity timeout (120 s)", async (t) => {
    const { fake, advance } = await world(t);
    const durable = fake.register((await mint(fake)).key, { name: "d", machineKey: M1 }).node;
    const eph = fake.register((await mint(fake, { ephemeral: true })).key, { name: "e", machineKey: M2 }).node;
    const online = fake.register((await mint(fake, { ephemeral: true })).key, { name: "o", machineKey: "mkey:o" }).node;
    fake.disconnect(durable.id);
    fake.disconnect(eph.id);
    advance(EPHEMERAL_INACTIVITY_MS - 1);
    assert.deepEqual(fake.sweepEphemeral(), []);
    advance(1);
    assert.deepEqual(fake.sweepEphemeral(), [eph.id]);
    assert.deepEqual([...fake.state.nodes.keys()], [durable.id, online.id]);
    assert.equal(EPHEMERAL_INACTIVITY_MS, 120_000);
    // config-example.yaml's 30m
    fake.disconnect(online.id);
    assert.deepEqual(fake.sweepEphemeral(30 * 60_000), []);
    advance(30 * 60_000);
    assert.deepEqual(fake.sweepEphemeral(30 * 60_000), [online.id]);
  });
});
