/**
 * The upgrade of a TailnetGateway made before per-replica identity (issue 32, design §2.8 step 4): it starts from
 * what the previous version left — a gateway Deployment, a single-use key in `<name>-authkey-<id>`, its node in
 * status.node — and moves once: the new replica registers its own node while the legacy pod keeps serving (its
 * node is the migration's, not a rogue one), the routes are approved on the new node before the legacy Deployment
 * and key Secret go, the legacy key is expired, and the legacy node is deleted once offline. Nodes == replicas.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { gatewayLabels, gatewaySelector } from "../../../../src/kinds/composite/gateway/children.js";
import { authKeySecret } from "../../../../src/kinds/shared/authkey.js";
import { stampTemplate } from "../../../../src/kinds/shared/template-hash.js";
import {
  API,
  applyGateway,
  type Ctx,
  child,
  cond,
  gw,
  KEY_SECRET,
  keySecrets,
  ROUTE,
  registerReplica,
  statusOf,
  syncAgain,
  T0,
  TAG,
  world,
  writesTo,
} from "./world.js";

const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** What the previous version left in the cluster and in Headscale for infra/gw. */
async function legacyGateway(t: Ctx) {
  const w = await world(t);
  const parent = applyGateway(w.mc) as unknown as K8sObject;
  const id = w.fake.state.nextKeyId();
  const secretKey = `hskey-auth-legacy-${"s".repeat(40)}`;
  w.fake.state.preAuthKeys.set(id, {
    id,
    prefix: "legacy",
    key: secretKey,
    userId: null,
    reusable: false,
    ephemeral: false,
    used: false,
    expiration: later(1800),
    createdAt: later(-1800),
    aclTags: [TAG],
  });
  const legacy = w.fake.registerWithKey(id, { name: "cluster-gw", availableRoutes: [ROUTE] });
  legacy.approvedRoutes = [ROUTE];
  legacy.createdAt = later(-1700);
  const owner = [
    { apiVersion: API, kind: "TailnetGateway", name: "gw", uid: parent.metadata.uid ?? "", controller: true },
  ];
  const labels = { ...gatewayLabels(parent), ...gatewaySelector(parent) };
  const keySecret = authKeySecret(
    parent,
    { id, key: secretKey, createdAt: later(-1800), expiresAt: later(1800) },
    gatewayLabels(parent),
  );
  w.mc.apply({ ...keySecret, metadata: { ...keySecret.metadata, ownerReferences: owner } });
  w.mc.apply({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "gw-gateway", namespace: "infra", labels, ownerReferences: owner },
    spec: {
      replicas: 1,
      selector: { matchLabels: gatewaySelector(parent) },
      template: stampTemplate({
        // its own copy: structuredClone keeps a shared object shared, and the object's labels get controller-uid
        metadata: { labels: { ...labels }, annotations: {} as Record<string, string> },
        spec: { containers: [{ name: "tailscale", image: "tailscale/tailscale:v1.102.5" }] },
      }),
    },
  } as K8sObject);
  const status = {
    tag: TAG,
    node: { id: legacy.id, name: "cluster-gw", nodeKey: legacy.nodeKey, preAuthKeyId: id },
  };
  w.mc.apply({ ...(gw(w.mc) as K8sObject), status } as never);
  return { ...w, legacy, legacyKeyId: id, parent };
}

describe("TailnetGateway upgrade to per-replica identity", () => {
  it("moves once: the legacy Deployment runs until replica 0 is bound and approved, then it, its key and its node go", async (t) => {
    const w = await legacyGateway(t);
    w.mc.apply({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "coredns", namespace: "kube-system" },
      data: { Corefile: ".:53 {\n    forward . /etc/resolv.conf\n}\n" },
    });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    // step 1: the new children next to the legacy ones, kept exactly as they were (nothing rolls)
    assert.ok(child(w.mc, "Deployment", "gw-gateway"), "the legacy Deployment still runs");
    assert.ok(child(w.mc, "Secret", `gw-authkey-${w.legacyKeyId}`));
    assert.ok(child(w.mc, "StatefulSet", "gw-gateway-0"));
    assert.deepEqual(
      keySecrets(w.mc)
        .map((s) => s.metadata.name)
        .sort(),
      [KEY_SECRET, `gw-authkey-${w.legacyKeyId}`].sort(),
    );
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Migrating");
    assert.equal(cond(w.mc, "Registered")?.reason, "Provisioning", "the legacy node is not a rogue one");
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);

    // step 2: replica 0 registers its own node (Headscale bumps the name while the legacy node holds it)
    const fresh = registerReplica(w, 0);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(w.fake.state.nodes.get(fresh.id)?.approvedRoutes, [ROUTE], "approved before the legacy pod goes");
    // step 3: the legacy Deployment and key Secret go; the legacy key is expired, its node stays ours
    assert.equal(child(w.mc, "Deployment", "gw-gateway"), undefined);
    assert.deepEqual(
      keySecrets(w.mc).map((s) => s.metadata.name),
      [KEY_SECRET],
    );
    assert.ok(
      writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey\/expire$/).some(
        (r) => (r.body as { id?: string }).id === w.legacyKeyId,
      ),
    );
    assert.ok(statusOf(w.mc).preAuthKeyIds?.includes(w.legacyKeyId), "the legacy node stays ours");
    assert.equal(statusOf(w.mc).node?.id, fresh.id);
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady", cond(w.mc, "Registered")?.message);

    // the legacy pod is gone: its node goes offline and is deleted after 60 s
    w.legacy.online = false;
    w.clock.now = later(120);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(
      writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//).map((r) => r.path),
      [`/api/v1/node/${w.legacy.id}`],
    );
    assert.deepEqual([...w.fake.state.nodes.keys()], [fresh.id], "nodes == replicas");
    // the legacy node held <host>: once it is gone the new node gets the name back (no -1 left)
    assert.equal(fresh.givenName, "cluster-gw");
    assert.deepEqual(
      writesTo(w.fake, "POST", /\/rename\//).map((r) => r.path),
      [`/api/v1/node/${fresh.id}/rename/cluster-gw`],
    );
    assert.equal(statusOf(w.mc).node?.name, "cluster-gw");
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Stable");
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady", cond(w.mc, "Registered")?.message);
    assert.deepEqual(w.mc.errors, []);
  });

  it("while migrating, a node wearing the tag with a key the gateway never minted is still refused", async (t) => {
    const w = await legacyGateway(t);
    const id = w.fake.state.nextKeyId();
    w.fake.state.preAuthKeys.set(id, {
      id,
      prefix: "other",
      key: "hskey-auth-other-x",
      userId: null,
      reusable: true,
      ephemeral: false,
      used: false,
      expiration: later(3600),
      createdAt: T0,
      aclTags: [TAG],
    });
    const rogue = w.fake.registerWithKey(id, { name: "rogue" });
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshBlocked");
    assert.match(
      cond(w.mc, "Registered")?.message ?? "",
      new RegExp(`node identity: node ${rogue.id} "rogue" carries ${TAG} but was registered with pre-auth key ${id}`),
    );
    assert.ok(child(w.mc, "Deployment", "gw-gateway"), "nothing is dropped while blocked");
  });
});
