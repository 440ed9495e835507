/**
 * A TailnetIngress naming a Service in another namespace (ingress/permitted.ts), the attack first: an editor of
 * monitoring writes `backend.namespace: other`. Refused without a ReferenceGrant in other from TailnetIngress in
 * monitoring to that Service, refused with any near miss, served with the right one; a Gateway's ingress is served
 * only what a route that names the Gateway gives it, so a forged ownerReference gets nothing. Then what decide
 * makes of a refusal (the expose out of the agent config, BackendsReachable False, Ready False) and what customize
 * asks Metacontroller for.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import { compositeController } from "../../../../src/emulator/metacontroller/controllers.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngress } from "../../../../src/kinds/composite/ingress/decide.js";
import { grantsServedBy, refusedExposes } from "../../../../src/kinds/composite/ingress/permitted.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { ingressRelated } from "../../../../src/kinds/composite/related.js";
import { ingress, NS, scraped, WEB } from "./fixtures.js";
import {
  FOREIGN_WEB,
  gatewayOwned,
  grantObject,
  LOCAL,
  OTHER,
  rightGrant,
  route,
  seen,
  withGrants,
} from "./grant-inputs.js";
import { type Certificates, certificates, healthyInput } from "./inputs.js";

let certs: Certificates;
before(async () => {
  certs = await certificates();
});
after(() => certs.pki.cleanup());

const foreign = ingress("grafana", { exposes: [FOREIGN_WEB] });
/** The refusal of expose web, as "<reason>" or "served". */
function verdict(parent: K8sObject, objects: K8sObject[], served = true): string {
  const r = refusedExposes(parent, readIngressSpec(parent), seen(objects, served)).get("web");
  return r ? r.reason : "served";
}
const ING = { group: "tailnet.internal", kind: "TailnetIngress", namespace: NS };
const SVC = { group: "", kind: "Service" };

describe("a backend in another namespace: the hand-written TailnetIngress", () => {
  it("attack: no ReferenceGrant at all is refused, and the message names the expose, the Service and the grant it needs", () => {
    const r = refusedExposes(foreign, readIngressSpec(foreign), seen([])).get("web");
    assert.deepEqual(r, {
      reason: "BackendNotPermitted",
      message:
        "expose web: spec.exposes[0].backend names Service other/grafana, which is not this namespace's: it needs a ReferenceGrant in other from tailnet.internal TailnetIngress in monitoring to that Service",
    });
  });

  const nearMisses: [string, K8sObject][] = [
    [
      "a grant for another kind (HTTPRoute)",
      grantObject(OTHER, [{ ...ING, group: "gateway.networking.k8s.io", kind: "HTTPRoute" }], [SVC]),
    ],
    ["a grant for another group's TailnetIngress", grantObject(OTHER, [{ ...ING, group: "evil.example.com" }], [SVC])],
    ["a grant from another namespace", grantObject(OTHER, [{ ...ING, namespace: "team" }], [SVC])],
    ["a grant to another Service name", grantObject(OTHER, [ING], [{ ...SVC, name: "postgres" }])],
    ["a grant to another kind (Secret)", grantObject(OTHER, [ING], [{ group: "", kind: "Secret" }])],
    ["the right grant in the wrong namespace (the ingress's own)", grantObject(NS, [ING], [SVC])],
    ["the right grant in a third namespace", grantObject("third", [ING], [SVC])],
  ];
  for (const [name, grant] of nearMisses) {
    it(`attack: ${name} is refused`, () => {
      assert.equal(verdict(foreign, [grant]), "BackendNotPermitted");
    });
  }

  it("the right grant is served: to every Service, or to that one by name", () => {
    assert.equal(verdict(foreign, [rightGrant()]), "served");
    assert.equal(verdict(foreign, [rightGrant("grafana")]), "served");
    // one of several from/to entries is enough, as the Gateway API reads a grant
    const mixed = grantObject(OTHER, [{ ...ING, namespace: "team" }, ING], [{ ...SVC, name: "x" }, SVC]);
    assert.equal(verdict(foreign, [mixed]), "served");
  });

  it("without the ReferenceGrant CRD (no gateway-api component) it is refused as GatewayAPIMissing, whatever was seen", () => {
    const r = refusedExposes(foreign, readIngressSpec(foreign), seen([rightGrant()], false)).get("web");
    assert.equal(r?.reason, "GatewayAPIMissing");
    assert.match(r?.message ?? "", /install the Gateway API ReferenceGrant CRD/);
  });

  it("a backend of its own namespace needs nothing, even written out; a path backend in another namespace is judged too", () => {
    const own = ingress("grafana", { exposes: [{ ...WEB, backend: { ...WEB.backend, namespace: NS } }] });
    assert.equal(verdict(own, [], false), "served");
    const path = ingress("grafana", {
      exposes: [
        {
          ...WEB,
          paths: [
            { path: "/a", pathType: "Prefix", backend: { service: "a", port: 80 } },
            {
              path: "/b",
              pathType: "Prefix",
              backends: [
                { backend: { service: "a", port: 80 }, weight: 1 },
                { backend: { service: "db", namespace: OTHER, port: 5432 }, weight: 1 },
              ],
            },
          ],
        },
      ],
    });
    const r = refusedExposes(path, readIngressSpec(path), seen([rightGrant("grafana")])).get("web");
    assert.equal(r?.reason, "BackendNotPermitted");
    assert.match(
      r?.message ?? "",
      /^expose web: spec\.exposes\[0\]\.paths\[1\]\.backends\[1\]\.backend names Service other\/db/,
    );
    assert.equal(verdict(path, [rightGrant()]), "served");
  });

  it("a hand-written `route` gives nothing without a Gateway controlling the ingress", () => {
    const parent = ingress("grafana", {
      exposes: [
        { ...WEB, backend: { ...FOREIGN_WEB.backend, route: { kind: "HTTPRoute", namespace: OTHER, name: "r" } } },
      ],
    });
    const r = refusedExposes(parent, readIngressSpec(parent), seen([route("r", OTHER)])).get("web");
    assert.match(r?.message ?? "", /\(it names HTTPRoute other\/r, but no Gateway controls this TailnetIngress\)$/);
  });
});

describe("a backend in another namespace: the Gateway's TailnetIngress (the ownerReference can be forged)", () => {
  const viaRoute = (ns = OTHER, name = "r", kind = "HTTPRoute") => ({
    ...FOREIGN_WEB.backend,
    route: { kind, namespace: ns, name },
  });
  const fromRoutesOf = (ns: string, kind = "HTTPRoute") =>
    grantObject(OTHER, [{ group: "gateway.networking.k8s.io", kind, namespace: ns }], [SVC], "routes");

  it("a route in the Service's namespace naming the Gateway and that Service and port: served, no grant needed", () => {
    assert.equal(verdict(gatewayOwned(viaRoute()), [route("r", OTHER)]), "served");
  });

  const refused: [string, K8sObject, K8sObject[]][] = [
    ["attack: the named route does not exist", gatewayOwned(viaRoute()), []],
    [
      "attack: the route names another Gateway as its parent",
      gatewayOwned(viaRoute()),
      [route("r", OTHER, { parent: { name: "other-gw", namespace: NS } })],
    ],
    [
      "attack: the route's parent is a Gateway of that name in another namespace",
      gatewayOwned(viaRoute()),
      [route("r", OTHER, { parent: { name: "web" } })],
    ],
    [
      "attack: the route's backendRef is another port of that Service",
      gatewayOwned(viaRoute()),
      [route("r", OTHER, { backendRefs: [{ name: "grafana", port: 9090 }] })],
    ],
    [
      "attack: the route's backendRef is another Service",
      gatewayOwned(viaRoute()),
      [route("r", OTHER, { backendRefs: [{ name: "web", port: 3000 }] })],
    ],
    [
      "attack: the ingress says GRPCRoute, the route of that name is an HTTPRoute",
      gatewayOwned(viaRoute(OTHER, "r", "GRPCRoute")),
      [route("r", OTHER)],
    ],
    [
      "attack: the ownerReference is not the controller",
      gatewayOwned(viaRoute(), { name: "web", controller: false }),
      [route("r", OTHER)],
    ],
    [
      "attack: the ingress is controlled by another Gateway than the route's parent",
      gatewayOwned(viaRoute(), { name: "shop", controller: true }),
      [route("r", OTHER)],
    ],
    [
      "a route in a third namespace without a grant in the Service's",
      gatewayOwned(viaRoute("team")),
      [route("r", "team")],
    ],
    [
      "a route in a third namespace with a grant for GRPCRoutes only",
      gatewayOwned(viaRoute("team")),
      [route("r", "team"), fromRoutesOf("team", "GRPCRoute")],
    ],
    [
      "a route in a third namespace with a grant for another namespace's routes",
      gatewayOwned(viaRoute("team")),
      [route("r", "team"), fromRoutesOf("elsewhere")],
    ],
  ];
  for (const [name, parent, objects] of refused) {
    it(`${name}: refused`, () => {
      assert.equal(verdict(parent, objects), "BackendNotPermitted");
    });
  }

  it("attack: the refusal never tells whether a route of another namespace exists, whom it names or what it references", () => {
    // an editor of the ingress's namespace may forge the ownerReference and name any route: the message is one
    // string for a missing route, another parent, another backendRef or a missing grant
    const message = (objects: K8sObject[]) => {
      const parent = gatewayOwned(viaRoute());
      return refusedExposes(parent, readIngressSpec(parent), seen(objects)).get("web")?.message;
    };
    const messages = new Set([
      message([]),
      message([route("r", OTHER, { parent: { name: "other-gw", namespace: NS } })]),
      message([route("r", OTHER, { backendRefs: [{ name: "grafana", port: 9090 }] })]),
      message([route("r", OTHER, { backendRefs: [{ name: "web", port: 3000 }] })]),
    ]);
    assert.equal(messages.size, 1, [...messages].join("\n"));
    assert.match([...messages][0] ?? "", /HTTPRoute .*\/r does not give Gateway .* Service .*grafana port 3000/);
  });

  it("a route in a third namespace with the grant the Gateway API requires for it: served (GRPCRoute too)", () => {
    assert.equal(verdict(gatewayOwned(viaRoute("team")), [route("r", "team"), fromRoutesOf("team")]), "served");
    const grpc = gatewayOwned(viaRoute("team", "g", "GRPCRoute"));
    assert.equal(
      verdict(grpc, [route("g", "team", { kind: "GRPCRoute" }), fromRoutesOf("team", "GRPCRoute")]),
      "served",
    );
  });
});

describe("a refused backend in decide", () => {
  const input = (over = {}) => healthyInput(certs.good, over);
  const two = ingress("grafana", { exposes: [FOREIGN_WEB, LOCAL] });
  const configOf = (children: K8sObject[]) =>
    JSON.parse(
      (
        (children.find((c) => c.kind === "ConfigMap" && c.metadata.name === "grafana-agent")?.data ?? {}) as Record<
          string,
          string
        >
      )["config.json"] ?? "null",
    ) as { exposes: { name: string; backend: { host: string } }[] } | null;

  it("its expose is left out of the agent config (nothing in other is dialled), the other expose is served; BackendsReachable and Ready say why", () => {
    const d = decideIngress({
      ...withGrants(input, two, seen([])),
      scrapes: [scraped([{ name: "local", reachable: true }])],
      services: new Set(["local"]),
    });
    const config = configOf(d.children);
    assert.deepEqual(
      config?.exposes.map((e) => [e.name, e.backend.host]),
      [["local", "local.monitoring.svc.cluster.local"]],
    );
    assert.ok(!JSON.stringify(d.children).includes("grafana.other.svc"), "no child names the refused Service");
    const c = new Map(d.conditions.map((x) => [x.type, x]));
    assert.equal(c.get("BackendsReachable")?.status, "False");
    assert.equal(c.get("BackendsReachable")?.reason, "BackendNotPermitted");
    assert.match(c.get("BackendsReachable")?.message ?? "", /; that expose is not served$/);
    assert.equal(c.get("Ready")?.reason, "BackendNotPermitted");
    assert.deepEqual(
      d.exposes.map((e) => [e.name, e.reachable]),
      [
        ["web", false],
        ["local", true],
      ],
    );
  });

  it("with the grant, the same ingress serves both and is Ready", () => {
    const d = decideIngress({
      ...withGrants(input, two, seen([rightGrant()])),
      scrapes: [
        scraped([
          { name: "web", reachable: true },
          { name: "local", reachable: true },
        ]),
      ],
    });
    assert.deepEqual(
      configOf(d.children)?.exposes.map((e) => e.backend.host),
      ["grafana.other.svc.cluster.local", "local.monitoring.svc.cluster.local"],
    );
    const c = new Map(d.conditions.map((x) => [x.type, x]));
    assert.equal(c.get("BackendsReachable")?.reason, "Reachable");
    assert.equal(c.get("Ready")?.status, "True");
  });

  it("every expose refused: the agent config has none (the agent keeps its node, serves nothing)", () => {
    const d = decideIngress(withGrants(input, foreign, seen([])));
    assert.deepEqual(configOf(d.children)?.exposes, []);
  });
});

describe("customize asks for what the rule reads", () => {
  const owned = gatewayOwned({
    ...FOREIGN_WEB.backend,
    route: { kind: "GRPCRoute", namespace: "team", name: "g" },
  });

  it("with ReferenceGrants served: the grants of each other namespace, and the routes the backends name, by name", () => {
    const rules = ingressRelated(owned, DEFAULT_CONFIG, true).filter((r) => r.apiVersion.startsWith("gateway."));
    assert.deepEqual(rules, [
      { apiVersion: "gateway.networking.k8s.io/v1beta1", resource: "referencegrants", namespace: OTHER },
      { apiVersion: "gateway.networking.k8s.io/v1", resource: "grpcroutes", namespace: "team", names: ["g"] },
    ]);
  });

  it("without them nothing of the Gateway API is asked (an unserved related type would fail every sync); none for a local backend", () => {
    assert.deepEqual(
      ingressRelated(owned, DEFAULT_CONFIG, false).filter((r) => r.apiVersion.startsWith("gateway.")),
      [],
    );
    assert.deepEqual(
      ingressRelated(ingress(), DEFAULT_CONFIG, true).filter((r) => r.apiVersion.startsWith("gateway.")),
      [],
    );
  });

  it("the gateway-api component is what tells: its patch adds ReferenceGrants to the ingress controller's child types", () => {
    assert.equal(grantsServedBy(compositeController("ingress", ["gateway-api"])), true);
    assert.equal(grantsServedBy(compositeController("ingress")), false);
    assert.equal(grantsServedBy(compositeController("ingress", ["cert-manager"])), false);
    assert.equal(grantsServedBy(undefined), false);
  });
});
