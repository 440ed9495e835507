// Issue 31 item 9: a finalize never creates a child, and nothing is created in a namespace being deleted (the API
// server refuses it: "forbidden: unable to create new content in namespace … because it is being terminated").
// One table over every CompositeController kind, through the hook server: whatever the kind answers, the children
// are among those observed (src/pipeline/status.ts observedOnly, applied by src/server/hooks.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API_VERSION, type HookKind } from "../../src/api/schemas.js";
import { cond } from "../../src/conditions/condition.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { kindModules } from "../../src/kinds/composite/index.js";
import { decoratorModules } from "../../src/kinds/decorators/index.js";
import type { DecoratorModule } from "../../src/kinds/decorators/module.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { assembleStatus } from "../../src/pipeline/status.js";
import type { HookDeps, KindModule } from "../../src/pipeline/types.js";
import { answerDecoratorHook } from "../../src/server/decorator.js";
import { childTypes, parentObject, syncRequest, v2Key } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";

const DELETING = "2026-11-29T10:00:00Z";
const tailnetRef = { name: "home" };
/** One parent of every CompositeController kind, being deleted, with a spec its finalize can read. */
const PARENTS: [HookKind, K8sObject][] = [
  [
    "tailnet",
    parentObject("Tailnet", "home", {
      headscale: { url: "http://127.0.0.1:9", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
    }),
  ],
  [
    "egress",
    parentObject(
      "TailnetEgress",
      "db",
      { tailnetRef, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
      { namespace: "shop" },
    ),
  ],
  [
    "ingress",
    parentObject(
      "TailnetIngress",
      "web",
      { tailnetRef, hostname: "web", exposes: [{ name: "web", port: 443, backend: { service: "web", port: 80 } }] },
      { namespace: "shop" },
    ),
  ],
  [
    "site",
    parentObject(
      "TailnetSite",
      "lan",
      { tailnetRef, prefixes: ["192.168.10.0/24"], advertiserTags: ["tag:router"] },
      { namespace: "shop" },
    ),
  ],
  [
    "gateway",
    parentObject(
      "TailnetGateway",
      "gw",
      { tailnetRef, hostname: "gw", routes: ["10.96.0.0/12"] },
      { namespace: "shop" },
    ),
  ],
  ["user", parentObject("TailnetUser", "alice", { tailnetRef, name: "alice" })],
  [
    "authkey",
    parentObject(
      "TailnetAuthKey",
      "runners",
      { tailnetRef, tags: ["tag:ci"], secretName: "join" },
      { namespace: "shop" },
    ),
  ],
];

const deleting = (p: K8sObject): K8sObject => ({ ...p, metadata: { ...p.metadata, deletionTimestamp: DELETING } });
const terminating: K8sObject = {
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name: "shop", deletionTimestamp: DELETING },
  status: { phase: "Terminating" },
};
/** The Tailnet and its credentials at a port nothing listens on: every Headscale call fails, so finalize waits. */
const RELATED: K8sObject[] = [
  PARENTS[0][1],
  {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
    data: { url: b64("http://127.0.0.1:9"), apiKey: b64("hskey-api-abcdefghijkl-xyz") },
  },
  terminating,
];

/** One observed child of each type the kind declares (a Secret named like an agent key Secret). */
function observedChildren(kind: HookKind, parent: K8sObject): K8sObject[] {
  return childTypes(kind).map((type) => {
    const [k, ...rest] = type.split(".");
    const apiVersion = rest.join(".");
    const ns = parent.metadata.namespace ?? "tailnet-system";
    return {
      apiVersion,
      kind: k,
      metadata: {
        name: `${parent.metadata.name}-authkey-7`,
        namespace: ns,
        annotations: {
          "tailnet.internal/key-id": "7",
          "tailnet.internal/created-at": DELETING,
          "tailnet.internal/expires-at": "2026-11-30T10:00:00Z",
        },
        labels: { "tailnet.internal/authkey": "true" },
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: parent.kind,
            name: parent.metadata.name,
            uid: parent.metadata.uid ?? "",
            controller: true,
          },
        ],
      },
      ...(k === "Secret" ? { data: { authkey: b64("hskey-auth-x-y") } } : {}),
    } as K8sObject;
  });
}

/** A kind that answers a child nobody observed, in sync and in finalize. */
function creating(base: KindModule): KindModule {
  const fresh = (ns: string | undefined): K8sObject => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "brand-new", ...(ns ? { namespace: ns } : {}) },
  });
  return {
    ...base,
    sync: async (req, deps) => ({
      status: assembleStatus(req, deps, [cond("Ready", "True", "Ready", "stub")]),
      children: [fresh(req.parent.metadata.namespace)],
    }),
    finalize: async (req, deps) => ({
      status: assembleStatus(req, deps, []),
      children: [...Object.values(req.children["Secret.v1"] ?? {}), fresh(req.parent.metadata.namespace)],
      finalized: false,
    }),
  };
}

const names = (children: K8sObject[]) => children.map((c) => `${c.kind} ${v2Key(c)}`).sort();

describe("no child is created by a finalize, nor in a terminating namespace (issue 31)", () => {
  for (const [kind, parent] of PARENTS) {
    it(`${kind}: finalize answers only observed children (Headscale unreachable, and without a Tailnet)`, async (t) => {
      const { app } = await build(t, { config: { headscale: { timeoutSeconds: 1 } } });
      const observed = observedChildren(kind, parent);
      for (const related of [RELATED, []]) {
        const body = syncRequest({ parent: deleting(parent), children: observed, related, finalizing: true });
        const res = await app.inject({ method: "POST", url: `/hooks/${kind}/finalize`, payload: body });
        assert.equal(res.statusCode, 200, res.body);
        const answered = (res.json() as { children: K8sObject[] }).children;
        const extra = names(answered).filter((n) => !names(observed).includes(n));
        assert.deepEqual(extra, [], `${kind} finalize created ${extra.join(", ")}`);
      }
    });
  }

  it("egress and ingress finalize (Headscale unreachable) keep a replica's state Secret as metadata only (issue 32)", async (t) => {
    const { app } = await build(t, { config: { headscale: { timeoutSeconds: 1 } } });
    const marker = "PLANTED-FINALIZE-MACHINE-KEY";
    for (const [kind, parent] of [PARENTS[1], PARENTS[2]]) {
      // observed without Metacontroller's last-applied (the worst case: nothing but the object to rebuild from)
      const state: K8sObject = {
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: `${parent.metadata.name}-agent-0-state`,
          namespace: "shop",
          labels: { "tailnet.internal/state": "true", "tailnet.internal/replica": "0" },
          ownerReferences: [
            { apiVersion: API_VERSION, kind: parent.kind, name: parent.metadata.name, uid: parent.metadata.uid ?? "" },
          ],
        },
        type: "Opaque",
        data: { _machinekey: b64(marker), device_id: b64("17") },
      };
      const related = RELATED.filter((o) => o.kind !== "Namespace");
      const body = syncRequest({ parent: deleting(parent), children: [state], related, finalizing: true });
      const res = await app.inject({ method: "POST", url: `/hooks/${kind}/finalize`, payload: body });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.body.includes(b64(marker)), false, `${kind}: no state data in the answer`);
      assert.equal(res.body.includes(marker), false);
    }
  });

  it("a kind whose finalize answers a new child: the answer drops it, keeps the observed one", async (t) => {
    const kinds = new Map(kindModules);
    const base = kinds.get("gateway");
    assert.ok(base);
    kinds.set("gateway", creating(base));
    const { app } = await build(t, { server: { kinds } });
    const parent = deleting(PARENTS[4][1]);
    const observed = observedChildren("gateway", parent).filter((c) => c.kind === "Secret");
    const body = syncRequest({ parent, children: observed, related: RELATED, finalizing: true });
    const res = await app.inject({ method: "POST", url: "/hooks/gateway/finalize", payload: body });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(names((res.json() as { children: K8sObject[] }).children), ["Secret shop/gw-authkey-7"]);
  });

  it("a DecoratorController kind's finalize: a new attachment is dropped, the observed one kept", async () => {
    const base = decoratorModules.get("service-expose");
    assert.ok(base);
    const attachment = (name: string): K8sObject => ({
      apiVersion: API_VERSION,
      kind: "TailnetIngress",
      metadata: { name, namespace: "shop" },
    });
    const stub: DecoratorModule = {
      ...base,
      finalize: async () => ({
        labels: {},
        annotations: {},
        attachments: [attachment("web"), attachment("brand-new")],
        finalized: false,
      }),
    };
    const service: K8sObject = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "shop", uid: "svc-1", deletionTimestamp: DELETING },
      spec: { ports: [{ port: 80 }] },
    };
    const body = {
      controller: {},
      object: service,
      attachments: { [`TailnetIngress.${API_VERSION}`]: { "shop/web": attachment("web") } },
      related: {},
      finalizing: true,
    };
    const r = await answerDecoratorHook("finalize", stub, body, {} as HookDeps);
    assert.deepEqual(names(r.attachments as K8sObject[]), ["TailnetIngress shop/web"]);
  });

  it("a sync in a terminating namespace answers only observed children; elsewhere a new child passes", async (t) => {
    const kinds = new Map(kindModules);
    const base = kinds.get("egress");
    assert.ok(base);
    kinds.set("egress", creating(base));
    const { app } = await build(t, { server: { kinds } });
    const parent = PARENTS[1][1];
    const sync = async (related: K8sObject[]) => {
      const body = syncRequest({ parent, related });
      const res = await app.inject({ method: "POST", url: "/hooks/egress/sync", payload: body });
      assert.equal(res.statusCode, 200, res.body);
      return names((res.json() as { children: K8sObject[] }).children);
    };
    assert.deepEqual(await sync(RELATED), []);
    const live = { ...terminating, metadata: { name: "shop" }, status: { phase: "Active" } };
    assert.deepEqual(await sync([...RELATED.slice(0, 2), live]), ["Secret shop/brand-new"]);
  });
});
