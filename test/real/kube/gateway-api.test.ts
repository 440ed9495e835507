/**
 * The Gateway API class tailnet on a real kube-apiserver: the Gateway API CRDs of the standard channel (the
 * pinned sigs.k8s.io/gateway-api module) accept our GatewayClass, a Gateway, an HTTPRoute, a GRPCRoute and a
 * ReferenceGrant; the hooks' answers — decided from the objects as the server stored them (defaults filled in)
 * — are written as Metacontroller writes them (UpdateStatus: a PUT of the whole object to <resource>/status,
 * pkg/controller/decorator/controller.go) by a ServiceAccount holding nothing but
 * `tailnet-operator-metacontroller-gateway-api`, and the server accepts them: the class Accepted, the Gateway
 * Accepted and Programmed with its listeners and addresses (conformance: every listener carries Accepted,
 * Programmed and ResolvedRefs; attachedRoutes counts the routes), each route's parent entry Accepted and
 * ResolvedRefs beside another controller's entry, which is kept. A write from a stale copy is refused with a
 * conflict (what makes the shared status.parents safe), and the TailnetIngress the Gateway gets passes our
 * CRD's schema and CEL rules. A second sync answers the stored status: no write on every resync.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject, ObjectMaps } from "../../../src/k8s/objects.js";
import { typeKey } from "../../../src/k8s/objects.js";
import { CONTROLLER_NAME } from "../../../src/kinds/shared/gateway-api-objects.js";
import type { K8sObject as Manifest } from "../../chart/helm.js";
import { suiteHooks } from "../../helpers/server.js";
import { applyClean, ensureNamespace } from "./apply.js";
import type { Cluster } from "./cluster.js";
import { gatewayApiPin, shopObjects, startGatewayApiCluster } from "./gateway-api.js";

const NS = "shop";
const OTHER = "other";
const MC = "system:serviceaccount:metacontroller:restricted";
const GW = "gateway.networking.k8s.io";
const TI = "TailnetIngress.tailnet.internal/v1alpha1";
const BASE = "ts.example.com";

type Cond = { type: string; status: string; reason: string; observedGeneration?: number; lastTransitionTime?: string };
type Parent = { parentRef: Record<string, unknown>; controllerName: string; conditions: Cond[] };
const typed = (o: K8sObject, apiVersion: string, kind: string): K8sObject => ({ ...o, apiVersion, kind });
const summary = (cs: readonly Cond[] = []) => cs.map((c) => `${c.type}=${c.status}/${c.reason}`);

const tailnet: K8sObject = {
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "Tailnet",
  metadata: { name: "home", uid: "uid-home", creationTimestamp: "2026-10-01T00:00:00Z" },
  spec: { dns: { baseDomain: BASE } },
};

describe("Gateway API class tailnet on a real API server", { timeout: 600_000, concurrency: false }, () => {
  let cluster: Cluster;
  let post: (path: string, payload: unknown) => Promise<Record<string, unknown>>;
  let close: () => Promise<void> | void = () => undefined;
  const get = (resource: string, name: string, ns?: string) =>
    JSON.parse(cluster.kubectl([...(ns ? ["-n", ns] : []), "get", resource, name, "-o", "json"])) as K8sObject;
  const list = (resource: string) =>
    (JSON.parse(cluster.kubectl(["get", resource, "-A", "-o", "json"])) as { items: K8sObject[] }).items;
  /** The related objects Metacontroller would send: everything the customize hook asks for, as stored. */
  const related = (): ObjectMaps => {
    const maps: ObjectMaps = {};
    const add = (objects: K8sObject[]) => {
      for (const o of objects) {
        const key = typeKey(o.apiVersion, o.kind);
        maps[key] ??= {};
        (maps[key] as Record<string, K8sObject>)[
          o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name
        ] = o;
      }
    };
    for (const r of [
      "gatewayclasses",
      "gateways",
      "httproutes",
      "grpcroutes",
      "referencegrants",
      "namespaces",
      "services",
      "tailnetingresses",
    ]) {
      const items = list(r);
      // a list's items carry no apiVersion/kind: the server's List kind names them
      const kinds: Record<string, [string, string]> = {
        gatewayclasses: [`${GW}/v1`, "GatewayClass"],
        gateways: [`${GW}/v1`, "Gateway"],
        httproutes: [`${GW}/v1`, "HTTPRoute"],
        grpcroutes: [`${GW}/v1`, "GRPCRoute"],
        referencegrants: [`${GW}/v1beta1`, "ReferenceGrant"],
        namespaces: ["v1", "Namespace"],
        services: ["v1", "Service"],
        tailnetingresses: ["tailnet.internal/v1alpha1", "TailnetIngress"],
      };
      const [apiVersion, kind] = kinds[r];
      add(items.map((o) => ({ ...o, apiVersion, kind })));
    }
    add([tailnet]);
    return maps;
  };
  const sync = (hook: string, object: K8sObject, attachments: ObjectMaps = {}) =>
    post(`/hooks/${hook}/sync`, {
      controller: { metadata: { name: `tailnet-operator-${hook}` } },
      object,
      attachments,
      related: related(),
      finalizing: false,
    });
  /** Metacontroller's UpdateStatus, as the restricted ServiceAccount: the object as the hook saw it, resourceVersion included. */
  const writeStatus = (object: K8sObject, status: unknown) =>
    cluster.tryKubectl(["replace", "--subresource=status", `--as=${MC}`, "-f", "-"], {
      input: JSON.stringify({ ...object, status }),
    });

  before(async () => {
    cluster = await startGatewayApiCluster();
    ensureNamespace(cluster, NS);
    ensureNamespace(cluster, OTHER, { team: "other" });
    // the component's DecoratorControllers, strictly against Metacontroller's CRD (foreign-crds.ts)
    const controllers = cluster.kubectl(["kustomize", "decoratorcontrollers/gateway-api"]);
    assert.equal(controllers.match(/^kind: DecoratorController$/gm)?.length, 4);
    applyClean(cluster, controllers);
    applyClean(
      cluster,
      cluster.tryKubectl([
        "create",
        "--dry-run=client",
        "-o",
        "yaml",
        "-f",
        "manifests/components/gateway-api/rbac.yaml",
      ]).stdout,
    );
    applyClean(
      cluster,
      cluster.tryKubectl([
        "create",
        "--dry-run=client",
        "-o",
        "yaml",
        "-f",
        "manifests/components/gateway-api/gatewayclass.yaml",
      ]).stdout,
    );
    cluster.kubectl([
      "create",
      "clusterrolebinding",
      "restricted-metacontroller",
      "--clusterrole=tailnet-operator-metacontroller-gateway-api",
      "--serviceaccount=metacontroller:restricted",
    ]);
    ({ post, close } = await suiteHooks());
    const svc = (name: string, ns: string, port: number) =>
      ({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: ns },
        spec: { ports: [{ port }] },
      }) as unknown as Manifest;
    applyClean(cluster, [
      svc("api", NS, 80),
      svc("api-canary", NS, 80),
      svc("greeter", NS, 50051),
      svc("search", OTHER, 80),
    ]);
  });
  after(async () => {
    await close();
    await cluster?.stop();
  });

  it(`the standard channel CRDs of ${"sigs.k8s.io/gateway-api"} at the pin are served, and accept our objects (strict)`, () => {
    const crds = (JSON.parse(cluster.kubectl(["get", "crd", "-o", "json"])) as { items: K8sObject[] }).items.filter(
      (c) => c.metadata.annotations?.[`${GW}/channel`] === "standard",
    );
    const versions = new Set(crds.map((c) => c.metadata.annotations?.[`${GW}/bundle-version`]));
    assert.deepEqual([...versions], [gatewayApiPin()]);
    assert.ok(crds.length >= 5, "gatewayclasses, gateways, httproutes, grpcroutes, referencegrants");
    const objects = shopObjects(NS, OTHER, BASE) as unknown as Manifest[];
    applyClean(cluster, objects);
    // a weight the CRD refuses is refused by the server (the schema is really in force)
    const bad = cluster.tryKubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({
        ...objects[1],
        metadata: { name: "bad", namespace: OTHER },
        spec: { rules: [{ backendRefs: [{ name: "x", port: 80, weight: -1 }] }] },
      }),
    });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /weight/);
  });

  it("the restricted ServiceAccount may update the Gateway API statuses and nothing more on them", () => {
    const can = (...what: string[]) =>
      cluster.tryKubectl(["auth", "can-i", ...what, "-n", NS, `--as=${MC}`]).stdout.trim();
    for (const r of ["gatewayclasses", "gateways", "httproutes", "grpcroutes"])
      assert.equal(can("update", `${r}.${GW}`, "--subresource=status"), "yes", r);
    assert.equal(can("delete", `gateways.${GW}`), "no");
    assert.equal(can("update", `referencegrants.${GW}`), "no");
    assert.equal(can("get", "secrets"), "no");
  });

  it("GatewayClass tailnet: Accepted, written through /status; the next sync answers the stored status", async () => {
    const answer = await sync("gatewayapi-class", {
      ...get(`gatewayclasses.${GW}`, "tailnet"),
      apiVersion: `${GW}/v1`,
      kind: "GatewayClass",
    });
    const w = writeStatus(get(`gatewayclasses.${GW}`, "tailnet"), answer.status);
    assert.equal(w.status, 0, w.stderr);
    const stored = get(`gatewayclasses.${GW}`, "tailnet");
    assert.deepEqual(summary((stored.status as { conditions: Cond[] }).conditions), ["Accepted=True/Accepted"]);
    assert.equal(
      (stored.status as { conditions: Cond[] }).conditions[0].observedGeneration,
      stored.metadata.generation,
    );
    const again = await sync("gatewayapi-class", { ...stored, apiVersion: `${GW}/v1`, kind: "GatewayClass" });
    assert.deepEqual(again.status, stored.status, "no write on the next resync");
  });

  it("Gateway: its TailnetIngress passes our CRD (CEL); Accepted, then Programmed with addresses once it is Ready", async () => {
    const gw = () => typed(get(`gateways.${GW}`, "web", NS), `${GW}/v1`, "Gateway");
    const first = await sync("gatewayapi-gateway", gw());
    const [desired] = first.attachments as K8sObject[];
    assert.equal(desired.kind, "TailnetIngress");
    const paths = (desired.spec as { exposes: { paths: { path: string; backends: unknown[] }[] }[] }).exposes[0].paths;
    assert.deepEqual(
      paths.map((p) => p.path),
      // created in the same second: by namespace/name, other/shop before shop/greeter
      ["/search", "/helloworld.Greeter/SayHello"],
    );
    // as Metacontroller creates it: owned by the Gateway, server-side validated (schema and CEL)
    const owner = gw();
    const created = {
      ...desired,
      metadata: {
        ...desired.metadata,
        ownerReferences: [
          { apiVersion: `${GW}/v1`, kind: "Gateway", name: "web", uid: owner.metadata.uid, controller: true },
        ],
      },
    };
    applyClean(cluster, [created as unknown as Manifest]);
    const w1 = writeStatus(gw(), first.status);
    assert.equal(w1.status, 0, w1.stderr);
    const pending = gw().status as { conditions: Cond[] };
    assert.deepEqual(summary(pending.conditions), ["Accepted=True/Accepted", "Programmed=Unknown/Pending"]);

    // the TailnetIngress reports Ready (its own controller's status write, here by hand)
    const ti = get("tailnetingresses.tailnet.internal", "web", NS);
    const tiStatus = {
      observedGeneration: ti.metadata.generation,
      conditions: [
        { type: "Ready", status: "True", reason: "Ready", message: "", lastTransitionTime: "2026-12-05T00:00:00Z" },
      ],
      exposes: [{ name: "https", dnsName: `shop.${BASE}` }],
    };
    const wt = cluster.tryKubectl(["replace", "--subresource=status", "-f", "-"], {
      input: JSON.stringify({ ...ti, status: tiStatus }),
    });
    assert.equal(wt.status, 0, wt.stderr);
    const stored = {
      ...get("tailnetingresses.tailnet.internal", "web", NS),
      apiVersion: "tailnet.internal/v1alpha1",
      kind: "TailnetIngress",
    };
    const ready = await sync("gatewayapi-gateway", gw(), { [TI]: { [`${NS}/web`]: stored } });
    const w2 = writeStatus(gw(), ready.status);
    assert.equal(w2.status, 0, w2.stderr);
    const status = gw().status as {
      conditions: Cond[];
      addresses: unknown[];
      listeners: { name: string; attachedRoutes: number; supportedKinds: unknown[]; conditions: Cond[] }[];
    };
    assert.deepEqual(summary(status.conditions), ["Accepted=True/Accepted", "Programmed=True/Programmed"]);
    assert.deepEqual(status.addresses, [{ type: "Hostname", value: `shop.${BASE}` }]);
    assert.equal(
      status.listeners[0].attachedRoutes,
      2,
      "the HTTPRoute from other and the GRPCRoute, both selected by the namespace's own label",
    );
    assert.deepEqual(summary(status.listeners[0].conditions), [
      "Accepted=True/Accepted",
      "Programmed=True/Programmed",
      "ResolvedRefs=True/ResolvedRefs",
      "Conflicted=False/NoConflicts",
    ]);
    const again = await sync("gatewayapi-gateway", gw(), { [TI]: { [`${NS}/web`]: stored } });
    assert.deepEqual(again.status, gw().status, "no write on the next resync");
  });

  it("routes: our parent entry beside another controller's, which is kept; a stale write is a conflict, never a loss", async () => {
    const route = () => typed(get(`httproutes.${GW}`, "shop", OTHER), `${GW}/v1`, "HTTPRoute");
    const istio = (message: string): Parent => ({
      parentRef: { group: GW, kind: "Gateway", name: "istio-gw", namespace: NS },
      controllerName: "istio.io/gateway-controller",
      conditions: [
        {
          type: "Accepted",
          status: "True",
          reason: "Accepted",
          message,
          lastTransitionTime: "2026-12-01T00:00:00Z",
          observedGeneration: 1,
        } as Cond,
      ],
    });
    // the other controller writes first
    const wi = cluster.tryKubectl(["replace", "--subresource=status", "-f", "-"], {
      input: JSON.stringify({ ...route(), status: { parents: [istio("first")] } }),
    });
    assert.equal(wi.status, 0, wi.stderr);
    const seen = route();
    const answer = await sync("gatewayapi-httproute", seen);
    // meanwhile, the other controller writes again
    const wi2 = cluster.tryKubectl(["replace", "--subresource=status", "-f", "-"], {
      input: JSON.stringify({ ...route(), status: { parents: [istio("second")] } }),
    });
    assert.equal(wi2.status, 0, wi2.stderr);
    const stale = writeStatus(seen, answer.status);
    assert.notEqual(stale.status, 0, "UpdateStatus from the copy the hook saw is refused");
    assert.match(stale.stderr, /modified|conflict/i);
    assert.deepEqual(
      (route().status as { parents: Parent[] }).parents,
      [istio("second")],
      "the other controller's write stands",
    );
    // the next sync starts from the new status
    const next = await sync("gatewayapi-httproute", route());
    const w = writeStatus(route(), next.status);
    assert.equal(w.status, 0, w.stderr);
    const parents = (route().status as { parents: Parent[] }).parents;
    assert.deepEqual(parents[0], istio("second"));
    assert.equal(parents[1].controllerName, CONTROLLER_NAME);
    assert.deepEqual(parents[1].parentRef, { group: GW, kind: "Gateway", name: "web", namespace: NS });
    assert.deepEqual(summary(parents[1].conditions), ["Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"]);
    assert.deepEqual(
      (await sync("gatewayapi-httproute", route())).status,
      route().status,
      "no write on the next resync",
    );

    const grpc = () => typed(get(`grpcroutes.${GW}`, "greeter", NS), `${GW}/v1`, "GRPCRoute");
    const g = await sync("gatewayapi-grpcroute", grpc());
    const wg = writeStatus(grpc(), g.status);
    assert.equal(wg.status, 0, wg.stderr);
    const gp = (grpc().status as { parents: Parent[] }).parents;
    assert.deepEqual(summary(gp[0].conditions), ["Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"]);
  });

  it("attack: without the ReferenceGrant the cross-namespace backend is RefNotPermitted, written as such", async () => {
    cluster.kubectl(["-n", NS, "delete", `referencegrants.${GW}`, "routes-from-other"]);
    const route = () => typed(get(`httproutes.${GW}`, "shop", OTHER), `${GW}/v1`, "HTTPRoute");
    const answer = await sync("gatewayapi-httproute", route());
    const w = writeStatus(route(), answer.status);
    assert.equal(w.status, 0, w.stderr);
    const ours = (route().status as { parents: Parent[] }).parents.find((p) => p.controllerName === CONTROLLER_NAME);
    assert.deepEqual(summary(ours?.conditions), ["Accepted=True/Accepted", "ResolvedRefs=False/RefNotPermitted"]);
  });

  it("released (its class changed away): the attachment goes, the status is back to the CRD's default, stable on resync", async () => {
    const gw = () => typed(get(`gateways.${GW}`, "web", NS), `${GW}/v1`, "Gateway");
    cluster.kubectl([
      "-n",
      NS,
      "patch",
      `gateways.${GW}`,
      "web",
      "--type=merge",
      "-p",
      '{"spec":{"gatewayClassName":"istio"}}',
    ]);
    const ti = typed(
      get("tailnetingresses.tailnet.internal", "web", NS),
      "tailnet.internal/v1alpha1",
      "TailnetIngress",
    );
    const released = await sync("gatewayapi-gateway", gw(), { [TI]: { [`${NS}/web`]: ti } });
    assert.deepEqual(released.attachments, [], "Metacontroller deletes the TailnetIngress");
    const w = writeStatus(gw(), released.status);
    assert.equal(w.status, 0, w.stderr);
    const stored = gw().status as { conditions: Cond[]; addresses?: unknown };
    assert.deepEqual(summary(stored.conditions), ["Accepted=Unknown/Pending", "Programmed=Unknown/Pending"]);
    assert.equal(stored.addresses, undefined);
    const again = await sync("gatewayapi-gateway", gw(), { [TI]: { [`${NS}/web`]: ti } });
    assert.deepEqual(again.status, null, "no longer naming our addresses: left to the new class's controller");
  });
});
