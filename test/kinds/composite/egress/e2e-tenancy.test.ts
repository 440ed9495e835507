// Issue 23 through the Metacontroller emulator and the fake Headscale: what a namespace editor can do with a
// TailnetEgress. Tags they are not granted, tags someone else's node carries, namespaces the Tailnet does not
// select: refused, nothing minted or written. Deletes touch only what the egress minted. Objects from before
// status.preAuthKeyIds keep working and are cleaned up.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { KEY_ID_ANNOTATION } from "../../../../src/kinds/shared/authkey.js";
import type { FakeHeadscale } from "../../../fakes/headscale/index.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { API, adminKey, policyText, READY, reasons, TAG, toReady, type World, world } from "./world.js";

const ADMIN_TAG = "tag:db";

/** The admins' database servers: db-srv registered through the CLI, db-2 with the admins' own tagged key. */
function adminServers(fake: FakeHeadscale): { keyId: string } {
  fake.setPolicy(policyText([TAG, "tag:router", ADMIN_TAG, "tag:shop-db"]));
  fake.addNode({ name: "db-srv", tags: [ADMIN_TAG] });
  const id = adminKey(fake, ADMIN_TAG);
  fake.registerWithKey(id, { name: "db-2" });
  return { keyId: id };
}

const nodeNames = (fake: FakeHeadscale) => [...fake.state.nodes.values()].map((n) => n.name).sort();
const keyWrites = (fake: FakeHeadscale) =>
  fake
    .writes()
    .filter((r) => r.path.startsWith("/api/v1/preauthkey"))
    .map((r) => [r.path, r.body]);
const keySecrets = (w: World) =>
  w.mc.list("Secret").filter((s) => s.metadata.labels?.["tailnet.internal/authkey"] === "true");

/** Settles until the egress is gone (under load a first Headscale call may outlast the world's 300 ms timeout). */
async function settleGone(w: World, name: string, ns: string): Promise<void> {
  for (let i = 0; i < 3 && w.mc.get(API, "TailnetEgress", name, ns); i++) await w.settle();
}

function namespace(name: string, labels: Record<string, string> = {}): K8sObject {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } };
}

function tailnet(w: World, tenancy?: Record<string, unknown>): K8sObject {
  return parentObject("Tailnet", "home", {
    headscale: { url: w.fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
    dns: { baseDomain: "ts.example.com" },
    ...(tenancy ? { tenancy } : {}),
  });
}

function egress(w: World, name: string, ns: string, extra: Record<string, unknown> = {}): K8sObject {
  return parentObject("TailnetEgress", name, { ...w.spec, ...extra }, { namespace: ns });
}

describe("TailnetEgress tenancy (issue 23)", () => {
  it("an ungranted spec.tag is refused: TagNotGranted, no key, no write; its deletion leaves the admins' nodes and key", async (t) => {
    const w = await world(t, { applyEgress: false });
    const admin = adminServers(w.fake);
    const before = nodeNames(w.fake);
    w.mc.apply(egress(w, "db", "shop", { tag: ADMIN_TAG }));
    await w.settle();
    assert.equal(reasons(w).Ready, "TagNotGranted");
    assert.match(
      w.cond("Ready")?.message ?? "",
      /tag:db is not granted to namespace shop \(the Tailnet's spec\.tenancy\.tags\)/,
    );
    assert.deepEqual(keyWrites(w.fake), [], "no pre-auth key minted with the admins' tag");
    assert.deepEqual(keySecrets(w), []);

    w.mc.delete(API, "TailnetEgress", "db", "shop");
    await settleGone(w, "db", "shop");
    assert.equal(w.mc.get(API, "TailnetEgress", "db", "shop"), undefined);
    assert.deepEqual(nodeNames(w.fake), before, "db-srv and db-2 survive the tenant's deletion");
    assert.deepEqual(w.fake.writes(), [], "no node deleted, no key expired");
    assert.equal(w.fake.state.preAuthKeys.get(admin.keyId)?.expiration.toISOString(), "2026-12-29T10:00:00.000Z");
    assert.deepEqual(w.mc.errors, []);
  });

  it("a granted tag that an admin's node carries is refused (TagInUse); a granted free tag works, and its deletion removes only its own node", async (t) => {
    const w = await world(t, { applyEgress: false });
    adminServers(w.fake);
    w.mc.apply(
      tailnet(w, {
        tags: [{ namespaceSelector: { matchLabels: { team: "db" } }, tags: [ADMIN_TAG, "tag:shop-db"] }],
      }),
    );
    w.mc.apply(namespace("shop", { team: "db" }));
    w.mc.apply(egress(w, "db", "shop", { tag: ADMIN_TAG }));
    await w.settle();
    assert.equal(reasons(w).Ready, "TagInUse");
    assert.match(
      w.cond("Ready")?.message ?? "",
      /tag:db is carried by db-srv, db-2, which this egress did not register/,
    );
    assert.deepEqual(keyWrites(w.fake), []);

    // the neighbour: a granted tag nobody else carries is the egress's own
    w.mc.apply(egress(w, "db", "shop", { tag: "tag:shop-db" }));
    await w.settle();
    assert.deepEqual(keyWrites(w.fake), [
      [
        "/api/v1/preauthkey",
        { reusable: true, ephemeral: false, expiration: "2026-11-30T10:00:00Z", aclTags: ["tag:shop-db"] },
      ],
    ]);
    w.register();
    await w.settle();
    assert.equal(reasons(w).Registered, "Registered");
    // an admin's node that carries the same granted tag later is never the egress's to delete
    w.fake.addNode({ name: "shop-db-admin", tags: ["tag:shop-db"], online: false });
    w.mc.delete(API, "TailnetEgress", "db", "shop");
    await settleGone(w, "db", "shop");
    assert.equal(w.mc.get(API, "TailnetEgress", "db", "shop"), undefined);
    assert.deepEqual(nodeNames(w.fake), ["db-1", "db-2", "db-srv", "router", "shop-db-admin"]);
    assert.deepEqual(w.mc.errors, []);
  });

  it("derived tags do not collide: team/a-db and team-a/db each get their own; deleting one leaves the other's node and key", async (t) => {
    const w = await world(t, { applyEgress: false });
    w.mc.apply(egress(w, "a-db", "team"));
    w.mc.apply(egress(w, "db", "team-a"));
    await w.settle();
    const tags = keyWrites(w.fake).map(([, body]) => (body as { aclTags: string[] }).aclTags[0]);
    assert.equal(new Set(tags).size, 2, `two tags, got ${tags.join(", ")}`);
    const other = keySecrets(w).find((s) => s.metadata.namespace === "team-a");
    const otherKey = other?.metadata.annotations?.[KEY_ID_ANNOTATION];
    assert.ok(otherKey);
    const node = w.fake.registerWithKey(otherKey, { name: "team-a-db" });
    const writes = w.fake.writes().length;

    w.mc.delete(API, "TailnetEgress", "a-db", "team");
    await settleGone(w, "a-db", "team");
    assert.equal(w.mc.get(API, "TailnetEgress", "a-db", "team"), undefined);
    assert.ok(w.fake.state.nodes.has(node.id), "team-a/db's node survives");
    const after = w.fake.writes().slice(writes);
    assert.ok(
      after.every((r) => JSON.stringify(r.body ?? {}) !== JSON.stringify({ id: otherKey })),
      "team-a/db's key is not expired",
    );
    assert.deepEqual(w.mc.errors, []);
  });

  it("spec.tenancy.namespaceSelector: an unselected namespace gets NamespaceNotAllowed and nothing; labelled, it works", async (t) => {
    const w = await world(t, { applyEgress: false });
    w.mc.apply(tailnet(w, { namespaceSelector: { matchLabels: { "tailnet.internal/tenant": "true" } } }));
    w.mc.apply(namespace("shop"));
    w.mc.apply(egress(w, "db", "shop"));
    await w.settle();
    assert.equal(reasons(w).Ready, "NamespaceNotAllowed");
    assert.deepEqual(w.fake.writes(), []);
    assert.deepEqual(w.mc.childrenOf(w.egress()), []);

    w.mc.apply(namespace("shop", { "tailnet.internal/tenant": "true" }));
    await toReady(w);
    assert.deepEqual(reasons(w), READY);
    assert.equal(keyWrites(w.fake).length, 1);
    assert.deepEqual(w.mc.errors, []);
  });

  it("upgrade: an egress from before status.preAuthKeyIds keeps working, adopts its own older key, and its deletion removes its nodes only", async (t) => {
    const w = await world(t);
    await toReady(w);
    // an older rotation's node still running (its key Secret long gone), and an admin's node with the same tag
    const older = w.fake.state.nextKeyId();
    w.fake.state.preAuthKeys.set(older, {
      ...[...w.fake.state.preAuthKeys.values()][0],
      id: older,
      prefix: `old${older}`,
      ephemeral: true, // an earlier version minted ephemeral agent keys
      key: `hskey-auth-old${older}-${"b".repeat(64)}`,
    });
    const oldNode = w.fake.registerWithKey(older, { name: "shop-db-old" });
    w.fake.addNode({ name: "admin-box", tags: [TAG] });
    // the status as an earlier version wrote it: no preAuthKeyIds
    const stored = w.egress() as K8sObject & { status: Record<string, unknown> };
    delete stored.status.preAuthKeyIds;
    await w.settle();
    assert.deepEqual(reasons(w), READY);
    assert.deepEqual(w.egress().status?.preAuthKeyIds, ["1", older]);

    w.mc.delete(API, "TailnetEgress", "db", "shop");
    await settleGone(w, "db", "shop");
    assert.equal(w.mc.get(API, "TailnetEgress", "db", "shop"), undefined);
    assert.ok(!w.fake.state.nodes.has(oldNode.id), "the older rotation's node is removed");
    assert.deepEqual(nodeNames(w.fake), ["admin-box", "db-1", "router"]);
    assert.deepEqual(w.mc.errors, []);
  });

  it("upgrade: an egress in a dashed namespace keeps the tag an earlier version derived (status.tag); a new one gets the injective tag", async (t) => {
    const w = await world(t, { applyEgress: false });
    w.mc.apply({ ...egress(w, "db", "team-a"), status: { tag: "tag:k8s-team-a-db" } });
    w.mc.apply(egress(w, "web", "team-b"));
    await w.settle();
    const tags = keyWrites(w.fake)
      .map(([, body]) => (body as { aclTags: string[] }).aclTags[0])
      .sort();
    assert.deepEqual(tags, ["tag:k8s-team--b-web", "tag:k8s-team-a-db"]);
    assert.equal(w.mc.get(API, "TailnetEgress", "db", "team-a")?.status?.tag, "tag:k8s-team-a-db");
    assert.deepEqual(w.mc.errors, []);
  });
});
