/**
 * HTTPRoute and GRPCRoute parents of the Gateway API class `tailnet` (pure): each route's `status.parents`
 * entry for a Gateway of ours — Accepted and ResolvedRefs with every reason of the spec —, ReferenceGrant allow
 * and deny, allowedRoutes, other controllers' entries kept, and the attacker's moves (a route attached to
 * someone else's Gateway, a backend in a namespace that did not consent, a hostname the listener does not serve).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ROUTE_PARENT_REASONS } from "../../../../src/conditions/tables/gateway-api.js";
import { planRouteStatus } from "../../../../src/kinds/decorators/gateway-api/route-plan.js";
import { CONTROLLER_NAME } from "../../../../src/kinds/shared/gateway-api-objects.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import {
  BASE,
  backendRef,
  gateway,
  grpcRoute,
  httpRoute,
  listener,
  NS,
  referenceGrant,
  service,
  world,
} from "./fixtures.js";
import { api, exposesOf, ourParent, planOf, produced, routeStatus, web } from "./scenario.js";

describe("routes: parents[] and the attacker", () => {
  const ok = httpRoute("shop", { rules: [{ backendRefs: [backendRef("api")] }] });
  it("an attached route is Accepted and ResolvedRefs", () => {
    assert.deepEqual(ourParent(routeStatus(ok, [web(), api])), {
      Accepted: "True/Accepted",
      ResolvedRefs: "True/ResolvedRefs",
    });
  });
  it("attack: a route from another namespace cannot attach to a Gateway that allows Same (NotAllowedByListeners), and is not served", () => {
    const intruder = httpRoute(
      "steal",
      { parentRefs: [{ name: "web", namespace: NS }], rules: [{ backendRefs: [backendRef("evil")] }] },
      { namespace: "other" },
    );
    const evil = service("evil", "other");
    assert.deepEqual(ourParent(routeStatus(intruder, [web(), evil])).Accepted, "False/NotAllowedByListeners");
    assert.deepEqual(planOf(web(), [intruder, evil]).attachments, []);
  });
  it("from All, and from a Selector matching the route's namespace, attach it; a Selector that does not match refuses it", () => {
    const route = httpRoute(
      "x",
      { parentRefs: [{ name: "web", namespace: NS }], rules: [{ backendRefs: [backendRef("b")] }] },
      { namespace: "other" },
    );
    const b = service("b", "other");
    const gw = (from: Record<string, unknown>) => gateway([listener("https", { allowedRoutes: { namespaces: from } })]);
    assert.equal(ourParent(routeStatus(route, [gw({ from: "All" }), b])).Accepted, "True/Accepted");
    assert.equal(
      ourParent(routeStatus(route, [gw({ from: "Selector", selector: { matchLabels: { team: "other" } } }), b]))
        .Accepted,
      "True/Accepted",
    );
    assert.equal(
      ourParent(routeStatus(route, [gw({ from: "Selector", selector: { matchLabels: { team: "shop" } } }), b]))
        .Accepted,
      "False/NotAllowedByListeners",
    );
    // served in the Gateway's TailnetIngress with the backend's namespace named
    const paths = exposesOf(planOf(gw({ from: "All" }), [route, b]))?.[0].paths;
    assert.deepEqual(paths, [
      {
        name: "rule-0",
        path: "/",
        pathType: "Prefix",
        // a backend in another namespace names the route it comes from: the TailnetIngress re-checks it
        backends: [
          {
            backend: {
              service: "b",
              namespace: "other",
              port: 80,
              route: { kind: "HTTPRoute", namespace: "other", name: "x" },
            },
            weight: 1,
          },
        ],
      },
    ]);
  });
  it("a sectionName or port no listener has is NoMatchingParent; a GRPCRoute on an HTTPRoute-only listener is NotAllowedByListeners", () => {
    const r = httpRoute("x", { parentRefs: [{ name: "web", sectionName: "nope" }], rules: [] });
    assert.equal(ourParent(routeStatus(r, [web()])).Accepted, "False/NoMatchingParent");
    const p = httpRoute("y", { parentRefs: [{ name: "web", port: 8443 }], rules: [] });
    assert.equal(ourParent(routeStatus(p, [web()])).Accepted, "False/NoMatchingParent");
    const onlyHttp = gateway([listener("https", { allowedRoutes: { kinds: [{ kind: "HTTPRoute" }] } })]);
    assert.equal(
      ourParent(routeStatus(grpcRoute("g", { rules: [] }), [onlyHttp])).Accepted,
      "False/NotAllowedByListeners",
    );
  });
  it("attack: hostnames the listener does not serve are NoMatchingListenerHostname; a wildcard above it matches", () => {
    const r = (hostnames: string[]) => httpRoute("x", { hostnames, rules: [{ backendRefs: [backendRef("api")] }] });
    assert.equal(
      ourParent(routeStatus(r(["admin.ts.example.com"]), [web(), api])).Accepted,
      "False/NoMatchingListenerHostname",
    );
    assert.equal(
      ourParent(routeStatus(r(["shop.example.org"]), [web(), api])).Accepted,
      "False/NoMatchingListenerHostname",
    );
    assert.equal(ourParent(routeStatus(r([`*.${BASE}`]), [web(), api])).Accepted, "True/Accepted");
    assert.equal(ourParent(routeStatus(r(["shop"]), [web(), api])).Accepted, "True/Accepted");
  });
  it("what the agent cannot serve as written is UnsupportedValue: filters, regular expressions, query matches", () => {
    for (const rule of [
      { filters: [{ type: "RequestHeaderModifier" }], backendRefs: [backendRef("api")] },
      { matches: [{ path: { type: "RegularExpression", value: "/a.*" } }] },
      { matches: [{ headers: [{ type: "RegularExpression", name: "x", value: "y.*" }] }] },
      { matches: [{ queryParams: [{ name: "a", value: "b" }] }] },
      { matches: [{ path: { value: "/a/../b" } }] },
    ]) {
      const s = routeStatus(httpRoute("x", { rules: [rule] }), [web(), api]);
      assert.equal(ourParent(s).Accepted, "False/UnsupportedValue", JSON.stringify(rule));
    }
  });
  it("attack: a backend in another namespace without a ReferenceGrant is RefNotPermitted and answered 500; the grant allows it", () => {
    const secret = service("db-admin", "other");
    const route = httpRoute("x", { rules: [{ backendRefs: [backendRef("db-admin", 80, { namespace: "other" })] }] });
    assert.equal(ourParent(routeStatus(route, [web(), secret])).ResolvedRefs, "False/RefNotPermitted");
    assert.deepEqual(exposesOf(planOf(web(), [route, secret])), undefined, "no resolved backend: nothing published");
    const mixed = httpRoute("y", {
      rules: [{ backendRefs: [backendRef("api"), backendRef("db-admin", 80, { namespace: "other" })] }],
    });
    assert.deepEqual(exposesOf(planOf(web(), [mixed, secret, api]))?.[0].paths, [
      {
        name: "rule-0",
        path: "/",
        pathType: "Prefix",
        backends: [{ backend: { service: "api", port: 80 }, weight: 1 }, { weight: 1 }],
      },
    ]);
    // a grant for another kind, or from another namespace, does not count
    const wrong = referenceGrant(
      "other",
      [{ group: "gateway.networking.k8s.io", kind: "GRPCRoute", namespace: NS }],
      [{ group: "", kind: "Service" }],
    );
    assert.equal(ourParent(routeStatus(route, [web(), secret, wrong])).ResolvedRefs, "False/RefNotPermitted");
    const named = referenceGrant(
      "other",
      [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: NS }],
      [{ group: "", kind: "Service", name: "public" }],
    );
    assert.equal(ourParent(routeStatus(route, [web(), secret, named])).ResolvedRefs, "False/RefNotPermitted");
    const grant = referenceGrant(
      "other",
      [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: NS }],
      [{ group: "", kind: "Service", name: "db-admin" }],
    );
    assert.equal(ourParent(routeStatus(route, [web(), secret, grant])).ResolvedRefs, "True/ResolvedRefs");
  });
  it("a non-Service backend is InvalidKind, a missing Service BackendNotFound", () => {
    const kind = httpRoute("x", { rules: [{ backendRefs: [{ group: "example.com", kind: "Bucket", name: "b" }] }] });
    assert.equal(ourParent(routeStatus(kind, [web()])).ResolvedRefs, "False/InvalidKind");
    const missing = httpRoute("y", { rules: [{ backendRefs: [backendRef("nope")] }] });
    assert.equal(ourParent(routeStatus(missing, [web()])).ResolvedRefs, "False/BackendNotFound");
  });
  it("status.parents of other controllers are kept as they are; ours replace ours only; none of ours and none before: null", () => {
    const theirs = {
      parentRef: { name: "istio-gw" },
      controllerName: "istio.io/gateway-controller",
      conditions: [{ type: "Accepted", status: "True" }],
    };
    const stale = { parentRef: { name: "gone" }, controllerName: CONTROLLER_NAME, conditions: [] };
    const route = httpRoute(
      "shop",
      { parentRefs: [{ name: "istio-gw" }, { name: "web" }], rules: [{ backendRefs: [backendRef("api")] }] },
      { status: { parents: [theirs, stale] } },
    );
    const s = routeStatus(route, [web(), api]) as unknown as {
      parents: { parentRef: unknown; controllerName: string }[];
    };
    assert.deepEqual(s.parents[0], theirs);
    assert.deepEqual(
      s.parents.map((p) => [p.controllerName, p.parentRef]),
      [
        ["istio.io/gateway-controller", { name: "istio-gw" }],
        [CONTROLLER_NAME, { name: "web" }],
      ],
    );
    const foreign = httpRoute(
      "f",
      { parentRefs: [{ name: "istio-gw" }], rules: [] },
      { status: { parents: [theirs] } },
    );
    assert.equal(routeStatus(foreign, [web()]), null);
    // a repeat is byte-identical (lastTransitionTime kept): Metacontroller writes nothing
    const again = planRouteStatus(
      { ...route, status: s },
      world([route, web(), api]),
      new Date("2027-01-01T00:00:00Z"),
    );
    assert.deepEqual(again, s);
  });
});

describe("every condition and reason of the route parent table is produced by a scenario above", () => {
  it("Accepted, ResolvedRefs", () => assertCoversTable(ROUTE_PARENT_REASONS, produced.route));
});
