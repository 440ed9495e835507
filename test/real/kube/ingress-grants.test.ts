/**
 * A TailnetIngress naming Services of other namespaces, on a real kube-apiserver with the pinned Gateway API CRDs
 * (ingress/permitted.ts). The ingress CompositeController with the gateway-api component's patch (ReferenceGrants as
 * a child type) passes Metacontroller's CRD; our CRD stores a backend's `namespace` and `route`; the customize answer
 * asks only for types the server serves, and its rules — evaluated against the server as Metacontroller's customize
 * manager selects (pkg/controller/common/customize/manager.go: namespace and/or names) — select exactly the
 * ReferenceGrants and routes the rule reads: the grants of each namespace a backend is in and the named routes, never
 * a grant elsewhere or a route not named. The sync decided from them serves what a grant or a route gives and refuses
 * the rest; a deleted grant is refused again. The editor of the ingress's namespace cannot write the grant.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { compositeController } from "../../../src/emulator/metacontroller/controllers.js";
import type { ObjectMaps } from "../../../src/k8s/objects.js";
import { type K8sObject, typeKey } from "../../../src/k8s/objects.js";
import { REFERENCE_GRANT_CHILD_KEY } from "../../../src/kinds/composite/ingress/permitted.js";
import type { RelatedRule } from "../../../src/pipeline/types.js";
import type { K8sObject as Manifest } from "../../chart/helm.js";
import { suiteHooks } from "../../helpers/server.js";
import { applyClean, ensureNamespace } from "./apply.js";
import type { Cluster } from "./cluster.js";
import { startGatewayApiCluster } from "./gateway-api.js";

const NS = "monitoring";
const GW = "gateway.networking.k8s.io";
const KINDS: Record<string, string> = {
  referencegrants: "ReferenceGrant",
  httproutes: "HTTPRoute",
  grpcroutes: "GRPCRoute",
};

const grant = (namespace: string, name: string, from: Record<string, string>, to: Record<string, string>) => ({
  apiVersion: `${GW}/v1beta1`,
  kind: "ReferenceGrant",
  metadata: { namespace, name },
  spec: { from: [from], to: [to] },
});
const fromIngresses = (namespace: string) => ({ group: "tailnet.internal", kind: "TailnetIngress", namespace });
const httpRoute = (namespace: string, name: string, backend: Record<string, unknown>) => ({
  apiVersion: `${GW}/v1`,
  kind: "HTTPRoute",
  metadata: { namespace, name },
  spec: { parentRefs: [{ name: "web", namespace: NS }], rules: [{ backendRefs: [backend] }] },
});
const svc = (name: string, namespace: string, port: number) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace },
  spec: { ports: [{ port }] },
});

describe("TailnetIngress backends in other namespaces on a real API server", {
  timeout: 600_000,
  concurrency: false,
}, () => {
  let cluster: Cluster;
  let post: (path: string, payload: unknown) => Promise<Record<string, unknown>>;
  let close: () => Promise<void> | void = () => undefined;
  let controller: K8sObject;
  let ingress: K8sObject;
  const getJson = (args: string[]) => JSON.parse(cluster.kubectl([...args, "-o", "json"])) as K8sObject;

  /** What Metacontroller's customize manager selects for a rule (namespace and/or names; labels unused here). */
  function select(rule: RelatedRule): K8sObject[] {
    assert.equal(rule.labelSelector, undefined, "the rule's gateway rules select by namespace and names only");
    const group = rule.apiVersion.split("/")[0];
    const items = (
      JSON.parse(cluster.kubectl(["get", `${rule.resource}.${group}`, "-n", rule.namespace ?? "", "-o", "json"])) as {
        items: K8sObject[];
      }
    ).items;
    const kind = KINDS[rule.resource];
    return items
      .filter((o) => !rule.names?.length || rule.names.includes(o.metadata.name))
      .map((o) => ({ ...o, apiVersion: rule.apiVersion, kind }));
  }

  async function customize(): Promise<RelatedRule[]> {
    const r = await post("/hooks/ingress/customize", { controller, parent: ingress });
    return (r.relatedResources as RelatedRule[]).filter((x) => x.apiVersion.startsWith(`${GW}/`));
  }

  async function syncedBackends(): Promise<{ status: string; reason: string; message: string }> {
    const related: ObjectMaps = {};
    for (const rule of await customize()) {
      const key = typeKey(rule.apiVersion, KINDS[rule.resource]);
      related[key] ??= {};
      for (const o of select(rule)) {
        (related[key] as Record<string, K8sObject>)[`${o.metadata.namespace}/${o.metadata.name}`] = o;
      }
    }
    const answer = await post("/hooks/ingress/sync", {
      controller,
      parent: ingress,
      children: { [REFERENCE_GRANT_CHILD_KEY]: {} },
      related,
      finalizing: false,
    });
    const conditions = (
      answer.status as { conditions: { type: string; status: string; reason: string; message: string }[] }
    ).conditions;
    const c = conditions.find((x) => x.type === "BackendsReachable");
    assert.ok(c);
    return c;
  }

  before(async () => {
    cluster = await startGatewayApiCluster();
    for (const ns of [NS, "other", "third", "team"]) ensureNamespace(cluster, ns);
    applyClean(cluster, [
      svc("search", "other", 80),
      svc("api", "other", 80),
      svc("db", "third", 5432),
    ] as unknown as Manifest[]);
    ({ post, close } = await suiteHooks());
  });
  after(async () => {
    await close();
    await cluster?.stop();
  });

  it("the ingress CompositeController with the gateway-api component's patch passes Metacontroller's CRD (strict)", () => {
    applyClean(cluster, [compositeController("ingress", ["gateway-api"]) as unknown as Manifest]);
    controller = getJson(["get", "compositecontroller", "tailnet-operator-ingress"]);
    const children = (controller.spec as { childResources: { apiVersion: string; resource: string }[] }).childResources;
    assert.ok(children.some((c) => c.apiVersion === `${GW}/v1beta1` && c.resource === "referencegrants"));
  });

  it("our CRD stores a backend's namespace and route; the customize rules ask only for served types, and select exactly the grants and routes the rule reads", async () => {
    applyClean(cluster, [
      {
        apiVersion: `${GW}/v1`,
        kind: "GatewayClass",
        metadata: { name: "tailnet" },
        spec: { controllerName: "tailnet.internal/gateway-controller" },
      },
      {
        apiVersion: `${GW}/v1`,
        kind: "Gateway",
        metadata: { name: "web", namespace: NS },
        spec: {
          gatewayClassName: "tailnet",
          listeners: [{ name: "https", protocol: "HTTPS", port: 443, tls: { certificateRefs: [{ name: "t" }] } }],
        },
      },
      grant("other", "allow-monitoring", fromIngresses(NS), { group: "", kind: "Service", name: "search" }),
      grant(
        "other",
        "routes-from-team",
        { group: GW, kind: "HTTPRoute", namespace: "team" },
        { group: "", kind: "Service", name: "api" },
      ),
      // near misses: a grant to another namespace's ingresses, and one in the ingress's own namespace
      grant("third", "allow-team", fromIngresses("team"), { group: "", kind: "Service" }),
      grant(NS, "decoy", fromIngresses(NS), { group: "", kind: "Service" }),
      httpRoute("team", "r", { name: "api", namespace: "other", port: 80 }),
      httpRoute("team", "unnamed", { name: "api", namespace: "other", port: 80 }),
    ] as unknown as Manifest[]);
    const gateway = getJson(["-n", NS, "get", "gateway", "web"]);
    const tls = { secretName: "shop-tls" };
    applyClean(cluster, [
      {
        apiVersion: "tailnet.internal/v1alpha1",
        kind: "TailnetIngress",
        metadata: {
          name: "shop",
          namespace: NS,
          ownerReferences: [
            { apiVersion: `${GW}/v1`, kind: "Gateway", name: "web", uid: gateway.metadata.uid, controller: true },
          ],
        },
        spec: {
          tailnetRef: { name: "home" },
          hostname: "shop",
          mode: "http",
          exposes: [
            { name: "granted", host: "a", backend: { service: "search", namespace: "other", port: 80 }, tls },
            { name: "refused", host: "b", backend: { service: "db", namespace: "third", port: 5432 }, tls },
            {
              name: "routed",
              host: "c",
              backend: {
                service: "api",
                namespace: "other",
                port: 80,
                route: { kind: "HTTPRoute", namespace: "team", name: "r" },
              },
              tls,
            },
          ],
        },
      },
    ] as unknown as Manifest[]);
    ingress = getJson(["-n", NS, "get", "tailnetingress", "shop"]);
    const stored = (ingress.spec as { exposes: { backend: Record<string, unknown> }[] }).exposes[2].backend;
    assert.deepEqual(stored.route, { kind: "HTTPRoute", namespace: "team", name: "r" });

    const rules = await customize();
    const served = new Set(
      cluster
        .kubectl(["api-resources", `--api-group=${GW}`, "-o", "name"])
        .trim()
        .split("\n"),
    );
    for (const r of rules) assert.ok(served.has(`${r.resource}.${GW}`), `${r.resource} is served`);
    const selected = rules.flatMap((r) => select(r).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`));
    assert.deepEqual(selected.sort(), [
      "HTTPRoute team/r",
      "ReferenceGrant other/allow-monitoring",
      "ReferenceGrant other/routes-from-team",
      "ReferenceGrant third/allow-team",
    ]);
  });

  it("the sync decided from them serves the granted and the routed backend and refuses the other; a deleted grant is refused again", async () => {
    const first = await syncedBackends();
    assert.equal(first.reason, "BackendNotPermitted");
    assert.match(first.message, /^expose refused: spec\.exposes\[1\]\.backend names Service third\/db/);
    assert.doesNotMatch(first.message, /expose (granted|routed)/);

    cluster.kubectl(["-n", "other", "delete", "referencegrant", "allow-monitoring"]);
    const second = await syncedBackends();
    assert.match(second.message, /expose granted: spec\.exposes\[0\]\.backend names Service other\/search/);
    assert.doesNotMatch(second.message, /expose routed/);
  });

  it("attack: the editor of the ingress's namespace cannot write the grant in the Service's namespace", () => {
    cluster.grantEdit(NS);
    const can = (ns: string) =>
      cluster.tryKubectl(["auth", "can-i", "create", `referencegrants.${GW}`, "-n", ns, "--as=jane"]).stdout.trim();
    assert.equal(can("other"), "no");
  });
});
