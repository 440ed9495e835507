// Issue 23 for TailnetIngress through the Metacontroller emulator and the fake Headscale: an ungranted or taken
// tag is refused before anything is minted, and deleting an ingress removes only the nodes and keys it minted.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API_VERSION } from "../../../../src/api/schemas.js";
import type { FakeHeadscale } from "../../../fakes/headscale/index.js";
import { NS, TAG, tcpIngress } from "./fixtures.js";
import { policyText, world } from "./world.js";

const ADMIN_TAG = "tag:db";
const keyPosts = (hs: FakeHeadscale) =>
  hs.writes().filter((r) => r.method === "POST" && r.path === "/api/v1/preauthkey");
/** Settles until the ingress is gone (a cold first Headscale call may outlast the world's 400 ms timeout). */
async function settleGone(w: Awaited<ReturnType<typeof world>>, name: string): Promise<void> {
  for (let i = 0; i < 3 && w.ingress(name); i++) await w.mc.settle();
}
const names = (hs: FakeHeadscale) => [...hs.state.nodes.values()].map((n) => n.name).sort();

describe("TailnetIngress tenancy (issue 23)", () => {
  it("an ungranted spec.tag: TagNotGranted, nothing minted; deleting it leaves the admin's tag:db node", async (t) => {
    const w = await world(t, { tags: [TAG, ADMIN_TAG] });
    w.hs.addNode({ name: "db-srv", tags: [ADMIN_TAG] });
    w.mc.apply(tcpIngress("pg", { tag: ADMIN_TAG }));
    await w.mc.settle();
    assert.equal(w.condition("Ready", "pg").reason, "TagNotGranted");
    assert.deepEqual(keyPosts(w.hs), []);
    w.mc.delete(API_VERSION, "TailnetIngress", "pg", NS);
    await settleGone(w, "pg");
    assert.equal(w.ingress("pg"), undefined);
    assert.deepEqual(names(w.hs), ["db-srv"]);
    assert.deepEqual(w.hs.writes(), []);
    assert.deepEqual(w.mc.errors, []);
  });

  it("a granted tag an admin's node carries: TagInUse, nothing minted", async (t) => {
    const w = await world(t, {
      tags: [TAG, ADMIN_TAG],
      tailnetSpec: { tenancy: { tags: [{ namespaceSelector: {}, tags: [ADMIN_TAG] }] } },
    });
    w.mc.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS, labels: {} } });
    w.hs.addNode({ name: "db-srv", tags: [ADMIN_TAG] });
    w.mc.apply(tcpIngress("pg", { tag: ADMIN_TAG }));
    await w.mc.settle();
    assert.equal(w.condition("Ready", "pg").reason, "TagInUse");
    assert.match(
      w.condition("Ready", "pg").message,
      /tag:db is carried by db-srv, which this ingress did not register/,
    );
    assert.deepEqual(keyPosts(w.hs), []);
    assert.deepEqual(w.mc.errors, []);
  });

  it("deleting an ingress removes its own node and key, never an admin's node with its tag", async (t) => {
    const w = await world(t);
    w.hs.setPolicy(policyText([TAG, "tag:k8s-monitoring-pg"]));
    w.mc.apply(tcpIngress("pg"));
    await w.mc.settle();
    w.register("pg");
    await w.mc.settle();
    assert.equal(w.condition("Registered", "pg").reason, "Registered");
    // an administrator's box carrying the ingress's tag (registered through the CLI)
    w.hs.addNode({ name: "admin-box", tags: ["tag:k8s-monitoring-pg"] });
    w.mc.delete(API_VERSION, "TailnetIngress", "pg", NS);
    await settleGone(w, "pg");
    assert.equal(w.ingress("pg"), undefined);
    assert.deepEqual(names(w.hs), ["admin-box"]);
    assert.deepEqual(w.mc.errors, []);
  });
});
