/**
 * The Metacontroller loop against a real kube-apiserver (test/real/kube/loop.ts): a Tailnet and a
 * TailnetEgress synced by the real hook server with the fake Headscale, their children applied the
 * way Metacontroller's dynamic-apply applies them, status written through /status and read back as
 * the server stored it, a second sync that writes nothing, the real controller-manager's StatefulSet
 * controller running the agent replica's Pod `db-agent-0-0` (issue 32: one StatefulSet per replica), and
 * the real garbage collector removing the children once the finalize hook has released the deleted parent.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { b64 } from "../../../src/kinds/shared/secrets.js";
import { type FakeHeadscale, useFakeHeadscale } from "../../fakes/headscale/index.js";
import { parentObject } from "../../fixtures/hooks.js";
import { build } from "../../helpers/server.js";
import { applyClean, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";
import { collectionPath, finalizersOf, KubeLoop } from "./loop.js";

const API = "tailnet.internal/v1alpha1";
const RBAC = "rbac.authorization.k8s.io/v1";
type Listed = { items: (K8sObject & { status?: Record<string, unknown> })[] };

let cluster: Cluster;
let fake: FakeHeadscale;
let loop: KubeLoop;
const cleanups: (() => Promise<void> | void)[] = [];

/** A parent as the server has it now. */
async function read(apiVersion: string, resource: string, name: string, namespace?: string) {
  const r = await loop.kube.send("GET", `${collectionPath(apiVersion, resource, namespace)}/${name}`);
  return { code: r.code, object: r.json as K8sObject & { status?: Record<string, unknown> } };
}

async function list(apiVersion: string, resource: string, namespace: string): Promise<Listed["items"]> {
  const r = await loop.kube.send("GET", collectionPath(apiVersion, resource, namespace));
  assert.equal(r.code, 200, `list ${resource}`);
  return (r.json as unknown as Listed).items;
}

async function until(what: string, check: () => Promise<boolean>, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

/** The status the last sync answered for a parent, with the observedGeneration Metacontroller sets. */
function answered(kind: string, parent: string, generation: number): Record<string, unknown> {
  const call = loop.calls.filter((c) => c.hook === "sync" && c.kind === kind && c.parent === parent).at(-1);
  assert.ok(call, `a sync of ${kind} ${parent}`);
  return { ...(call.response as { status: Record<string, unknown> }).status, observedGeneration: generation };
}

describe("the Metacontroller loop with its objects in a real API server", { timeout: 600_000 }, () => {
  before(async () => {
    const tt = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) };
    cluster = await startCluster();
    applyClean(cluster, cluster.kubectl(["kustomize", "manifests/crds"]));
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    ensureNamespace(cluster, "tailnet-system", { "pod-security.kubernetes.io/enforce": "restricted" });
    ensureNamespace(cluster, "shop", { "pod-security.kubernetes.io/enforce": "restricted" });
    fake = await useFakeHeadscale(tt);
    const { app } = await build(tt);
    loop = new KubeLoop(cluster, { app });
    const tailnet = parentObject("Tailnet", "home", {
      headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      dns: { baseDomain: "ts.example.com" },
    });
    const egress = parentObject(
      "TailnetEgress",
      "db",
      { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432 }] }] },
      { namespace: "shop" },
    );
    // as a user writes them: no uid, generation or timestamps of our own
    const bare = (o: K8sObject) => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      metadata: { name: o.metadata.name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) },
      spec: o.spec,
    });
    applyClean(cluster, [
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "hs", namespace: "tailnet-system" },
        data: { apiKey: b64(fake.apiKey) },
      },
      bare(tailnet),
      bare(egress),
    ] as never);
    fake.addNode({ name: "db-1" });
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
    await cluster?.stop();
  });

  it("syncs the Tailnet and the TailnetEgress: children in the server under a controller owner reference", async () => {
    const rounds = await loop.settle();
    assert.deepEqual(loop.errors, []);
    assert.ok(rounds >= 2, `settled in ${rounds} rounds`);
    const egress = (await read(API, "tailnetegresses", "db", "shop")).object;
    const owned = async (resource: string, apiVersion = "v1") =>
      (await list(apiVersion, resource, "shop"))
        .filter((o) => o.metadata.ownerReferences?.some((r) => r.uid === egress.metadata.uid))
        .map((o) => {
          const ref = o.metadata.ownerReferences?.find((r) => r.uid === egress.metadata.uid);
          assert.equal(ref?.controller, true, `${resource}/${o.metadata.name}: controller reference`);
          assert.equal(
            (ref as { blockOwnerDeletion?: boolean } | undefined)?.blockOwnerDeletion,
            true,
            `${resource}/${o.metadata.name}: blockOwnerDeletion`,
          );
          assert.ok(o.metadata.annotations?.["metacontroller.k8s.io/last-applied-configuration"], "last-applied");
          return `${resource}/${o.metadata.name}`;
        });
    const children = [
      ...(await owned("statefulsets", "apps/v1")),
      ...(await owned("secrets")),
      ...(await owned("serviceaccounts")),
      ...(await owned("roles", RBAC)),
      ...(await owned("rolebindings", RBAC)),
    ];
    for (const want of [
      "statefulsets/db-agent-0",
      "secrets/db-agent-0-state",
      "secrets/db-authkey",
      "serviceaccounts/db-agent-0",
      "roles/db-agent-0",
      "rolebindings/db-agent-0",
    ])
      assert.ok(children.includes(want), `${want} in ${children.join(", ")}`);
    assert.ok(
      children.some((c) => c.startsWith("secrets/")),
      children.join(", "),
    );
    assert.ok(
      finalizersOf(egress).includes("metacontroller.io/compositecontroller-tailnet-operator-egress"),
      `Metacontroller's finalizer: ${finalizersOf(egress)}`,
    );
  });

  it("the status read back from the server is what the hook answered: nothing pruned", async () => {
    const egress = (await read(API, "tailnetegresses", "db", "shop")).object;
    assert.deepEqual(egress.status, answered("TailnetEgress", "shop/db", egress.metadata.generation ?? 0));
    const tailnet = (await read(API, "tailnets", "home")).object;
    assert.deepEqual(tailnet.status, answered("Tailnet", "home", tailnet.metadata.generation ?? 0));
  });

  it("a second sync writes nothing: no update, the same resourceVersions", async () => {
    const versions = async () =>
      JSON.stringify(
        [
          ...(await list("apps/v1", "statefulsets", "shop")),
          ...(await list(RBAC, "roles", "shop")),
          ...(await list(RBAC, "rolebindings", "shop")),
          ...(await list("v1", "secrets", "shop")),
          ...(await list("v1", "secrets", "tailnet-system")),
          ...(await list("v1", "services", "shop")),
          ...(await list("v1", "serviceaccounts", "shop")),
          (await read(API, "tailnetegresses", "db", "shop")).object,
          (await read(API, "tailnets", "home")).object,
        ].map((o) => `${o.kind ?? ""}/${o.metadata.namespace ?? ""}/${o.metadata.name}@${o.metadata.resourceVersion}`),
      );
    // the controller-manager's StatefulSet status write lands between syncs; wait for it to be quiet
    await until("the agent StatefulSet observed", async () => {
      const d = (await list("apps/v1", "statefulsets", "shop")).find((o) => o.metadata.name === "db-agent-0");
      return (d?.status as { observedGeneration?: number } | undefined)?.observedGeneration === d?.metadata.generation;
    });
    await loop.settle();
    const before = await versions();
    const writes = loop.writes.length;
    assert.equal(await loop.settle(), 1);
    assert.deepEqual(loop.writes.slice(writes), []);
    assert.equal(await versions(), before);
    assert.deepEqual(loop.errors, []);
  });

  it("the real controller-manager makes the replica's Pod db-agent-0-0 for its StatefulSet", async () => {
    const sts = (await list("apps/v1", "statefulsets", "shop")).find((o) => o.metadata.name === "db-agent-0");
    assert.ok(sts);
    await until("the replica's Pod", async () => {
      const pods = (await list("v1", "pods", "shop")).filter((p) =>
        p.metadata.ownerReferences?.some((r) => r.uid === sts.metadata.uid),
      );
      return pods.length === 1 && pods[0].metadata.name === "db-agent-0-0";
    });
  });

  it("deleting the TailnetEgress: finalize releases it and the real garbage collector removes its children", async () => {
    const left = async () =>
      [
        ...(await list("apps/v1", "statefulsets", "shop")),
        ...(await list(RBAC, "roles", "shop")),
        ...(await list(RBAC, "rolebindings", "shop")),
        ...(await list("v1", "pods", "shop")),
        ...(await list("v1", "secrets", "shop")),
        ...(await list("v1", "serviceaccounts", "shop")),
        ...(await list("v1", "configmaps", "shop")),
      ]
        .filter((o) => o.metadata.ownerReferences?.length)
        .map((o) => o.metadata.name);
    const owned = await left();
    assert.ok(owned.length >= 8, `owned before the delete: ${owned.join(", ")}`);
    cluster.kubectl(["-n", "shop", "delete", "tailnetegresses.tailnet.internal", "db", "--wait=false"]);
    await loop.settle();
    assert.ok(loop.calls.some((c) => c.hook === "finalize" && c.parent === "shop/db"));
    assert.equal((await read(API, "tailnetegresses", "db", "shop")).code, 404, "the parent is gone");
    await until("the garbage collector", async () => (await left()).length === 0);
    // the Tailnet and its credentials Secret are untouched
    assert.equal((await read(API, "tailnets", "home")).code, 200);
    assert.ok((await list("v1", "secrets", "tailnet-system")).some((s) => s.metadata.ownerReferences?.length));
  });

  it("a TailnetGateway's children stay updatable on the real server: replicas 1 → 2 adds replica 1's StatefulSet", async () => {
    ensureNamespace(cluster, "infra", { "pod-security.kubernetes.io/enforce": "restricted" });
    const gateway = (n: number) => ({
      apiVersion: API,
      kind: "TailnetGateway",
      metadata: { name: "gw", namespace: "infra" },
      spec: { tailnetRef: { name: "home" }, hostname: "cluster-gw", routes: ["10.96.0.0/12"], replicas: n },
    });
    // one StatefulSet of one Pod per replica (issue 32): the replica count is the gateway's StatefulSets
    const replicas = async () =>
      (await list("apps/v1", "statefulsets", "infra"))
        .map((o) => o.metadata.name)
        .filter((n) => /^gw-gateway-\d+$/.test(n))
        .sort();
    applyClean(cluster, [gateway(1)] as never);
    await loop.settle();
    assert.deepEqual(loop.errors, []);
    assert.deepEqual(await replicas(), ["gw-gateway-0"]);
    applyClean(cluster, [gateway(2)] as never);
    const writes = loop.writes.length;
    await loop.settle();
    assert.deepEqual(loop.errors, []);
    // replica 1's identity children first, then its StatefulSet, each created once
    const created = loop.writes.slice(writes).filter((w) => w.verb === "POST");
    const sts1 = "/apis/apps/v1/namespaces/infra/statefulsets";
    assert.equal(created.filter((w) => w.path === sts1 && w.code === 201).length, 1, JSON.stringify(created));
    assert.deepEqual(await replicas(), ["gw-gateway-0", "gw-gateway-1"]);
    const gw = (await read(API, "tailnetgateways", "gw", "infra")).object;
    assert.deepEqual(gw.status, answered("TailnetGateway", "infra/gw", gw.metadata.generation ?? 0));
    assert.equal(gw.metadata.generation, 2);
    // and then quiet: no write, as for the egress
    const quiet = loop.writes.length;
    assert.equal(await loop.settle(), 1);
    assert.deepEqual(loop.writes.slice(quiet), []);
  });
});
