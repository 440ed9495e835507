/**
 * The Gateway API class end to end through the Metacontroller emulator, which plays the repo's
 * decoratorcontrollers/gateway-api/*.yaml (no selector, no finalize hook) against the real hook server. The
 * TailnetIngress kind is a stand-in that reports Ready with its DNS names (its own behaviour has its own tests);
 * what is checked: objects of another class are never written to, a route's entries of other controllers are
 * kept, ours are Accepted; the Gateway is Programmed with its addresses; the TailnetIngress it gets renders an
 * agent config the agent accepts, routing by path, header and method, with weights and another namespace's
 * backend granted by a ReferenceGrant; the answer is stable (a second round writes nothing).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { exposeRouter } from "../../../../src/agent/routes.js";
import { API_VERSION, type HookKind } from "../../../../src/api/schemas.js";
import { cond } from "../../../../src/conditions/condition.js";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { ingressAgentConfig } from "../../../../src/kinds/composite/ingress/children.js";
import { ingressSpecProblem, readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { CONTROLLER_NAME, GW_V1 } from "../../../../src/kinds/shared/gateway-api-objects.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { assembleStatus } from "../../../../src/pipeline/status.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { silentTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { build } from "../../../helpers/server.js";
import {
  BASE,
  backendRef,
  gateway,
  gatewayClass,
  grpcRoute,
  httpRoute,
  listener,
  NS,
  namespace,
  referenceGrant,
  service,
  tailnet,
} from "./fixtures.js";

/** A TailnetIngress that is Ready at once and publishes <host or hostname>.<BASE> per expose. */
const readyIngress: KindModule = {
  hookKind: "ingress",
  customize: () => [],
  async sync(req, deps) {
    const spec = req.parent.spec as { hostname: string; exposes: { name: string; host?: string }[] };
    const exposes = spec.exposes.map((e) => ({ name: e.name, dnsName: `${e.host ?? spec.hostname}.${BASE}` }));
    const ready = cond("Ready", "True", "Ready", "stand-in");
    return {
      status: assembleStatus(req, deps, [ready], { dnsName: `${spec.hostname}.${BASE}`, exposes }),
      children: [],
    };
  },
  async finalize(req, deps) {
    return { status: assembleStatus(req, deps, [], {}, { publish: false }), children: [], finalized: true };
  },
  invalid: (req, _m, deps) => ({ status: assembleStatus(req, deps, []), children: [] }),
};

async function world(t: { after: (fn: () => Promise<void> | void) => void }) {
  const views = new HeadscaleViews({ timeoutMs: 5000, cacheTTLSeconds: 0, retries: 0 });
  t.after(() => views.close());
  const kinds = new Map<HookKind, KindModule>(kindModules);
  kinds.set("tailnet", silentTailnet);
  kinds.set("ingress", readyIngress);
  const { app } = await build(t, {
    server: {
      kinds,
      deps: { views, metrics: createOperatorMetrics({ defaultMetrics: false }), events: memoryEventRecorder() },
    },
  });
  const mc = new FakeMetacontroller({ app });
  for (const o of [
    tailnet(),
    gatewayClass(),
    gatewayClass("istio", "istio.io/gateway-controller"),
    namespace(NS),
    namespace("other", { team: "other" }),
    service("api"),
    service("api-canary"),
    service("greeter", NS, [50051]),
    service("search", "other"),
  ]) {
    mc.apply(o);
  }
  return mc;
}

const istioEntry = {
  parentRef: { name: "istio-gw" },
  controllerName: "istio.io/gateway-controller",
  conditions: [
    {
      type: "Accepted",
      status: "True",
      reason: "Accepted",
      message: "",
      lastTransitionTime: "2026-11-01T00:00:00Z",
      observedGeneration: 2,
    },
  ],
};

describe("Gateway API class tailnet end to end (Metacontroller emulator)", () => {
  it("ours get their status and a TailnetIngress; other classes and other controllers' entries are untouched", async (t) => {
    const mc = await world(t);
    const gw = gateway([
      listener("https", { hostname: `shop.${BASE}`, allowedRoutes: { namespaces: { from: "All" } } }),
    ]);
    const theirs = gateway([listener("https")], { name: "istio-gw", className: "istio" });
    const shop = httpRoute(
      "shop",
      {
        parentRefs: [{ name: "istio-gw" }, { name: "web" }],
        rules: [
          {
            matches: [{ path: { value: "/api" }, headers: [{ name: "x-canary", value: "yes" }] }],
            backendRefs: [backendRef("api", 80, { weight: 3 }), backendRef("api-canary", 80, { weight: 1 })],
          },
          { matches: [{ path: { value: "/" }, method: "GET" }], backendRefs: [backendRef("api")] },
        ],
      },
      { status: { parents: [istioEntry] } },
    );
    const search = httpRoute(
      "search",
      {
        parentRefs: [{ name: "web", namespace: NS }],
        rules: [{ matches: [{ path: { value: "/search" } }], backendRefs: [backendRef("search")] }],
      },
      { namespace: "other" },
    );
    const greeter = grpcRoute("greeter", {
      rules: [
        { matches: [{ method: { service: "helloworld.Greeter" } }], backendRefs: [backendRef("greeter", 50051)] },
      ],
    });
    const istioOnly = httpRoute(
      "only-istio",
      { parentRefs: [{ name: "istio-gw" }], rules: [] },
      { status: { parents: [istioEntry] } },
    );
    for (const o of [gw, theirs, shop, search, greeter, istioOnly]) mc.apply(o);
    const untouched = {
      theirs: structuredClone(mc.get(GW_V1, "Gateway", "istio-gw", NS)),
      istioOnly: structuredClone(mc.get(GW_V1, "HTTPRoute", "only-istio", NS)),
      istioClass: structuredClone(mc.get(GW_V1, "GatewayClass", "istio")),
    };
    await mc.settle(30);
    assert.deepEqual(mc.errors, []);
    assert.deepEqual(
      mc.get(GW_V1, "Gateway", "istio-gw", NS),
      untouched.theirs,
      "another class's Gateway: not a byte changed",
    );
    assert.deepEqual(
      mc.get(GW_V1, "HTTPRoute", "only-istio", NS),
      untouched.istioOnly,
      "a route of another controller only",
    );
    assert.deepEqual(mc.get(GW_V1, "GatewayClass", "istio"), untouched.istioClass);

    const cls = mc.get(GW_V1, "GatewayClass", "tailnet") as K8sObject;
    assert.deepEqual(
      (cls.status as { conditions: { reason: string }[] }).conditions.map((c) => c.reason),
      ["Accepted"],
    );

    const status = (mc.get(GW_V1, "Gateway", "web", NS) as K8sObject).status as {
      conditions: { type: string; status: string }[];
      addresses: unknown[];
      listeners: { attachedRoutes: number; conditions: { type: string; status: string }[] }[];
    };
    assert.deepEqual(
      status.conditions.map((c) => `${c.type}=${c.status}`),
      ["Accepted=True", "Programmed=True"],
    );
    assert.deepEqual(status.addresses, [{ type: "Hostname", value: `shop.${BASE}` }]);
    assert.equal(status.listeners[0].attachedRoutes, 3);
    assert.deepEqual(
      status.listeners[0].conditions.map((c) => `${c.type}=${c.status}`),
      ["Accepted=True", "Programmed=True", "ResolvedRefs=True", "Conflicted=False"],
    );

    // the route of two controllers: istio's entry first, as it was; ours after it
    const parents = (
      (mc.get(GW_V1, "HTTPRoute", "shop", NS) as K8sObject).status as {
        parents: { controllerName: string; conditions: { type: string; status: string; reason: string }[] }[];
      }
    ).parents;
    assert.deepEqual(parents[0], istioEntry);
    assert.equal(parents[1].controllerName, CONTROLLER_NAME);
    assert.deepEqual(
      parents[1].conditions.map((c) => `${c.type}=${c.status}/${c.reason}`),
      ["Accepted=True/Accepted", "ResolvedRefs=True/ResolvedRefs"],
    );
    // the route in namespace other: attached (from All) but its backend is its own namespace's, so it resolves
    const other = (mc.get(GW_V1, "HTTPRoute", "search", "other") as K8sObject).status as {
      parents: { conditions: { reason: string }[] }[];
    };
    assert.deepEqual(
      other.parents[0].conditions.map((c) => c.reason),
      ["Accepted", "ResolvedRefs"],
    );

    // the TailnetIngress renders an agent config the agent accepts, and routes as the routes say
    const tni = mc.get(API_VERSION, "TailnetIngress", "web", NS) as K8sObject;
    assert.equal(ingressSpecProblem(tni), undefined);
    const config = validateAgentConfig(
      ingressAgentConfig(tni, readIngressSpec(tni), [{ dnsName: `shop.${BASE}`, dnsAliases: [] }]),
    );
    const router = exposeRouter(config.exposes[0]);
    const host = (svc: string, ns = NS) => `${svc}.${ns}.svc.cluster.local`;
    assert.deepEqual(router?.route("/", { method: "GET", fieldLines: [] }), { host: host("api"), port: 80 });
    assert.deepEqual(router?.route("/search/x", { method: "GET", fieldLines: [] }), {
      host: host("search", "other"),
      port: 80,
    });
    // a GRPCRoute's backend is routed with its protocol, h2c, for the agent's HTTP/2 pipe
    assert.deepEqual(router?.route("/helloworld.Greeter/SayHello", { method: "POST", fieldLines: [] }), {
      host: host("greeter"),
      port: 50051,
      protocol: "h2c",
    });
    const canary = new Set(
      Array.from({ length: 200 }, () => router?.route("/api/x", { method: "GET", fieldLines: ["x-canary: yes"] }).host),
    );
    // both weighted backends survive Metacontroller's in-place apply (two backends on port 80 were merged into
    // one by apply.go's guessed key `port` until the Service moved under `backend`)
    assert.deepEqual([...canary].sort(), [host("api-canary"), host("api")]);
    assert.throws(() => router?.route("/other", { method: "POST", fieldLines: [] }), { status: 404 });

    // settled: another round writes nothing (every status is deterministic)
    assert.equal(await mc.settle(3), 1);
  });

  it("attack: a route in another namespace attaching to a Gateway that allows only its own namespace is refused and not served", async (t) => {
    const mc = await world(t);
    mc.apply(gateway([listener("https", { hostname: "shop" })]));
    mc.apply(httpRoute("mine", { rules: [{ backendRefs: [backendRef("api")] }] }));
    mc.apply(
      httpRoute(
        "steal",
        {
          parentRefs: [{ name: "web", namespace: NS }],
          rules: [{ matches: [{ path: { value: "/admin" } }], backendRefs: [backendRef("search")] }],
        },
        { namespace: "other" },
      ),
    );
    // and a backend in another namespace without a ReferenceGrant, from the Gateway's own namespace
    mc.apply(
      httpRoute("reach", {
        rules: [
          { matches: [{ path: { value: "/reach" } }], backendRefs: [backendRef("search", 80, { namespace: "other" })] },
        ],
      }),
    );
    await mc.settle(30);
    assert.deepEqual(mc.errors, []);
    const reasons = (name: string, ns: string) =>
      (
        (mc.get(GW_V1, "HTTPRoute", name, ns) as K8sObject).status as {
          parents: { conditions: { reason: string }[] }[];
        }
      ).parents[0].conditions.map((c) => c.reason);
    assert.deepEqual(reasons("steal", "other"), ["NotAllowedByListeners", "ResolvedRefs"]);
    assert.deepEqual(reasons("reach", NS), ["Accepted", "RefNotPermitted"]);
    const tni = mc.get(API_VERSION, "TailnetIngress", "web", NS) as K8sObject;
    const paths = (tni.spec as { exposes: { paths: { path: string; backends: unknown[] }[] }[] }).exposes[0].paths;
    // routes of one age go by namespace/name: "mine" before "reach"
    assert.deepEqual(
      paths.map((p) => [p.path, p.backends]),
      [
        ["/", [{ backend: { service: "api", port: 80 }, weight: 1 }]],
        ["/reach", [{ weight: 1 }]],
      ],
    );
    // the grant arrives: the next syncs resolve it (a related object's change re-syncs the Gateway and routes)
    mc.apply(
      referenceGrant(
        "other",
        [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: NS }],
        [{ group: "", kind: "Service", name: "search" }],
      ),
    );
    await mc.settle(30);
    assert.deepEqual(reasons("reach", NS), ["Accepted", "ResolvedRefs"]);
    const after = (mc.get(API_VERSION, "TailnetIngress", "web", NS) as K8sObject).spec as {
      exposes: { paths: { backends: unknown[] }[] }[];
    };
    assert.deepEqual(after.exposes[0].paths[1].backends, [
      {
        backend: {
          service: "search",
          namespace: "other",
          port: 80,
          route: { kind: "HTTPRoute", namespace: NS, name: "reach" },
        },
        weight: 1,
      },
    ]);
  });
});
