/**
 * The Gateway API class `tailnet`, decided from one request (pure): which GatewayClasses and Gateways are ours,
 * the TailnetIngress a Gateway becomes, every condition and reason of the GatewayClass, the Gateway and its
 * listeners, and Programmed following the TailnetIngress (routes: routes.test.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  GATEWAY_API_GATEWAY_REASONS,
  GATEWAY_CLASS_REASONS,
  GATEWAY_LISTENER_REASONS,
} from "../../../../src/conditions/tables/gateway-api.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { planGatewayClass } from "../../../../src/kinds/decorators/gateway-api/class-plan.js";
import { planGateway } from "../../../../src/kinds/decorators/gateway-api/plan.js";
import { CONTROLLER_NAME } from "../../../../src/kinds/shared/gateway-api-objects.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import {
  BASE,
  backendRef,
  gateway,
  gatewayClass,
  grpcRoute,
  httpRoute,
  listener,
  NOW,
  NS,
  referenceGrant,
  world,
} from "./fixtures.js";
import {
  api,
  type Cond,
  canary,
  exposesOf,
  type GwStatus,
  listenerReasons,
  planOf,
  produced,
  reasons,
  statusOf,
  web,
} from "./scenario.js";

const summary = (cs: readonly Cond[]) => cs.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe("GatewayClass", () => {
  it("ours is Accepted; parametersRef is InvalidParameters; another controller's is not written to", () => {
    const accepted = planGatewayClass(gatewayClass(), NOW) as { conditions: Cond[] };
    assert.deepEqual(reasons(accepted.conditions), { Accepted: "True/Accepted" });
    assert.equal(accepted.conditions[0].observedGeneration, 1);
    const params = planGatewayClass(
      gatewayClass("t2", CONTROLLER_NAME, { parametersRef: { group: "", kind: "ConfigMap", name: "x" } }),
      NOW,
    ) as { conditions: Cond[] };
    assert.deepEqual(reasons(params.conditions), { Accepted: "False/InvalidParameters" });
    assert.equal(planGatewayClass(gatewayClass("istio", "istio.io/gateway-controller"), NOW), null);
    produced.class.push(accepted.conditions, params.conditions);
  });
});

describe("Gateway: ours or not", () => {
  it("a Gateway of another class gets no attachment and a null status (nothing written); one we managed is released", () => {
    const other = gateway([listener("https")], { className: "istio" });
    assert.deepEqual(planOf(other), { role: "foreign", attachments: [], status: null });
    const before = planOf(web(), [httpRoute("shop", { rules: [{ backendRefs: [backendRef("api")] }] }), api]);
    assert.equal(before.attachments.length, 1);
    const released = planOf(gateway([listener("https")], { className: "istio" }), [], before.attachments);
    assert.deepEqual(released, { role: "released", attachments: [], status: null });
    // released while its status still shows our published address: back to the CRD's default (no controller);
    // the new controller's: left alone
    const published = {
      ...before.attachments[0],
      status: { exposes: [{ name: "https", dnsName: `shop.${BASE}` }] },
    } as K8sObject;
    const stale = {
      ...gateway([listener("https")], { className: "istio" }),
      status: { addresses: [{ type: "Hostname", value: `shop.${BASE}` }] },
    };
    const waiting = planOf(stale, [], [published]).status as { conditions: Cond[] };
    assert.deepEqual(summary(waiting.conditions), ["Accepted=Unknown/Pending", "Programmed=Unknown/Pending"]);
    assert.equal(waiting.conditions[0].message, "Waiting for controller", "the CRD's own default: stable on resync");
    const theirs = { ...stale, status: { addresses: [{ type: "IPAddress", value: "10.0.0.7" }] } };
    assert.equal(planOf(theirs, [], [published]).status, null);
  });
});

describe("Gateway → TailnetIngress", () => {
  it("paths, methods, headers and weights of two routes become one expose, oldest route first; no match is 404", () => {
    const first = httpRoute(
      "shop",
      {
        hostnames: [`shop.${BASE}`],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/api" }, headers: [{ name: "X-Canary", value: "yes" }] }],
            backendRefs: [backendRef("api", 80, { weight: 90 }), backendRef("api-canary", 80, { weight: 10 })],
          },
          {
            matches: [{ path: { type: "Exact", value: "/api/write" }, method: "POST" }],
            backendRefs: [backendRef("api")],
          },
        ],
      },
      { created: "2026-11-02T00:00:00Z" },
    );
    // younger, with a duplicate of the first match: the oldest route's rule wins
    const second = httpRoute(
      "late",
      {
        rules: [
          {
            matches: [
              { path: { value: "/api" }, headers: [{ name: "x-canary", value: "yes" }] },
              { path: { value: "/" } },
            ],
            backendRefs: [backendRef("api-canary")],
          },
        ],
      },
      { created: "2026-11-05T00:00:00Z" },
    );
    const p = planOf(web(), [first, second, api, canary]);
    const ti = p.attachments[0];
    assert.equal(ti.metadata.name, "web");
    assert.equal(ti.metadata.labels?.["tailnet.internal/gateway"], "web");
    assert.deepEqual(ti.spec, {
      tailnetRef: { name: "home" },
      hostname: "web",
      mode: "http",
      exposes: [
        {
          name: "https",
          backend: { service: "api", port: 80 },
          paths: [
            {
              name: "rule-0",
              path: "/api",
              pathType: "Prefix",
              headers: [{ name: "X-Canary", value: "yes" }],
              backends: [
                { backend: { service: "api", port: 80 }, weight: 90 },
                { backend: { service: "api-canary", port: 80 }, weight: 10 },
              ],
            },
            {
              name: "rule-1",
              path: "/api/write",
              pathType: "Exact",
              method: "POST",
              backends: [{ backend: { service: "api", port: 80 }, weight: 1 }],
            },
            {
              name: "rule-2",
              path: "/",
              pathType: "Prefix",
              backends: [{ backend: { service: "api-canary", port: 80 }, weight: 1 }],
            },
          ],
          unmatched: "notFound",
          host: "shop",
          tls: { secretName: "https-tls" },
        },
      ],
    });
    const s = statusOf(p);
    assert.equal(s.listeners[0].attachedRoutes, 2);
    assert.deepEqual(s.listeners[0].supportedKinds, [
      { group: "gateway.networking.k8s.io", kind: "HTTPRoute" },
      { group: "gateway.networking.k8s.io", kind: "GRPCRoute" },
    ]);
    // the attachment does not exist yet: Programmed is Pending, and so is the listener
    assert.deepEqual(reasons(s.conditions), { Accepted: "True/Accepted", Programmed: "Unknown/Pending" });
    assert.deepEqual(listenerReasons(p, "https"), {
      Accepted: "True/Accepted",
      Programmed: "Unknown/Pending",
      ResolvedRefs: "True/ResolvedRefs",
      Conflicted: "False/NoConflicts",
    });
    assert.equal(s.addresses, undefined);
  });

  it("a GRPCRoute's service and method are paths, its backends h2c", () => {
    const route = grpcRoute("greeter", {
      rules: [
        {
          matches: [{ method: { service: "helloworld.Greeter", method: "SayHello" } }],
          backendRefs: [backendRef("api", 50051)],
        },
        { matches: [{ method: { service: "helloworld.Admin" } }], backendRefs: [backendRef("api", 50052)] },
      ],
    });
    const paths = exposesOf(planOf(web(), [route, api]))?.[0].paths;
    assert.deepEqual(paths, [
      {
        name: "rule-0",
        path: "/helloworld.Greeter/SayHello",
        pathType: "Exact",
        backends: [{ backend: { service: "api", port: 50051, protocol: "h2c" }, weight: 1 }],
      },
      {
        name: "rule-1",
        path: "/helloworld.Admin",
        pathType: "Prefix",
        backends: [{ backend: { service: "api", port: 50052, protocol: "h2c" }, weight: 1 }],
      },
    ]);
  });

  it("a listener with no route publishes nothing (Pending); the Gateway without any route has no attachment", () => {
    const p = planOf(gateway([listener("a", { hostname: "a" }), listener("b", { hostname: "b" })]), [
      httpRoute("r", {
        parentRefs: [{ name: "web", sectionName: "a" }],
        rules: [{ backendRefs: [backendRef("api")] }],
      }),
      api,
    ]);
    assert.deepEqual(
      exposesOf(p)?.map((e) => e.name),
      ["a"],
    );
    assert.deepEqual(listenerReasons(p, "b").Programmed, "Unknown/Pending");
    const empty = planOf(web());
    assert.deepEqual(empty.attachments, []);
    assert.deepEqual(reasons(statusOf(empty).conditions).Programmed, "Unknown/Pending");
  });
});

describe("Programmed follows the TailnetIngress", () => {
  const route = httpRoute("shop", { rules: [{ backendRefs: [backendRef("api")] }] });
  const reported = (ready: Record<string, unknown>): K8sObject => {
    const desired = planOf(web(), [route, api]).attachments[0];
    return {
      ...desired,
      metadata: { ...desired.metadata, generation: 3, ownerReferences: [{ uid: "uid-gw-web" } as never] },
      status: {
        observedGeneration: 3,
        conditions: [{ type: "Ready", ...ready }],
        exposes: [{ name: "https", dnsName: `shop.${BASE}` }],
      },
    };
  };
  it("Ready: Programmed True, each listener Programmed, status.addresses the published names", () => {
    const p = planOf(web(), [route, api], [reported({ status: "True", reason: "Ready" })]);
    assert.deepEqual(reasons(statusOf(p).conditions), { Accepted: "True/Accepted", Programmed: "True/Programmed" });
    assert.equal(listenerReasons(p, "https").Programmed, "True/Programmed");
    assert.deepEqual(statusOf(p).addresses, [{ type: "Hostname", value: `shop.${BASE}` }]);
  });
  it("a tenancy refusal of the TailnetIngress (TagNotGranted) is Programmed False Invalid, naming it", () => {
    const p = planOf(web(), [route, api], [reported({ status: "False", reason: "TagNotGranted", message: "tag:x" })]);
    const programmed = statusOf(p).conditions.find((c) => c.type === "Programmed");
    assert.equal(`${programmed?.status}/${programmed?.reason}`, "False/Invalid");
    assert.match(programmed?.message ?? "", /^TagNotGranted: /);
    assert.equal(listenerReasons(p, "https").Programmed, "False/Invalid");
    assert.equal(statusOf(p).addresses, undefined);
  });
  it("attack: a TailnetIngress named like the Gateway that it did not make is never taken over (NameTaken)", () => {
    const squatter = { ...reported({ status: "True", reason: "Ready" }), metadata: { name: "web", namespace: NS } };
    const p = planGateway({
      gateway: web(),
      world: world([web(), route, api]),
      attachments: [],
      tailnetIngresses: [squatter],
      now: NOW,
    });
    assert.deepEqual(p.attachments, []);
    assert.match((p.status as GwStatus).conditions[1].message, /^NameTaken: /);
  });
});

describe("listener reasons", () => {
  const l = (extra: Record<string, unknown>) =>
    planOf(gateway([listener("bad", extra), listener("good", { hostname: "good" })]));
  for (const [what, extra, type, expected] of [
    ["HTTP", { protocol: "HTTP", port: 80 }, "Accepted", "False/UnsupportedProtocol"],
    ["Passthrough", { tls: { mode: "Passthrough" } }, "Accepted", "False/UnsupportedProtocol"],
    ["port 8443", { port: 8443 }, "Accepted", "False/PortUnavailable"],
    ["a wildcard", { hostname: `*.${BASE}` }, "Accepted", "False/UnsupportedHostname"],
    ["a name outside the zone", { hostname: "shop.example.org" }, "Accepted", "False/UnsupportedHostname"],
    ["no certificate", { tls: { mode: "Terminate" } }, "ResolvedRefs", "False/InvalidCertificateRef"],
    [
      "a ConfigMap certificate",
      { tls: { certificateRefs: [{ kind: "ConfigMap", name: "x" }] } },
      "ResolvedRefs",
      "False/InvalidCertificateRef",
    ],
    [
      "a TCPRoute kind",
      { allowedRoutes: { kinds: [{ kind: "TCPRoute" }] } },
      "ResolvedRefs",
      "False/InvalidRouteKinds",
    ],
    [
      "attack: a certificate of another namespace, no grant",
      { tls: { certificateRefs: [{ name: "x", namespace: "other" }] } },
      "ResolvedRefs",
      "False/RefNotPermitted",
    ],
  ] as const) {
    it(`${what}: ${type} ${expected}, the other listener still served (Accepted True, ListenersNotValid)`, () => {
      const p = l(extra);
      assert.equal(listenerReasons(p, "bad")[type], expected);
      assert.equal(listenerReasons(p, "bad").Programmed, "False/Invalid");
      assert.equal(reasons(statusOf(p).conditions).Accepted, "True/ListenersNotValid");
    });
  }
  it("a certificate of another namespace granted by a ReferenceGrant is still refused: the agent mounts its own namespace's Secrets", () => {
    const grant = referenceGrant(
      "other",
      [{ group: "gateway.networking.k8s.io", kind: "Gateway", namespace: NS }],
      [{ group: "", kind: "Secret" }],
    );
    const gw = gateway([listener("bad", { tls: { certificateRefs: [{ name: "x", namespace: "other" }] } })]);
    const p = planOf(gw, [grant]);
    assert.equal(listenerReasons(p, "bad").ResolvedRefs, "False/InvalidCertificateRef");
    assert.deepEqual(reasons(statusOf(p).conditions), {
      Accepted: "False/ListenersNotValid",
      Programmed: "False/Invalid",
    });
  });
  it("two listeners publishing one name conflict: neither is served", () => {
    const p = planOf(gateway([listener("a", { hostname: "shop" }), listener("b", { hostname: `shop.${BASE}` })]));
    assert.equal(listenerReasons(p, "a").Conflicted, "True/HostnameConflict");
    assert.equal(listenerReasons(p, "b").Conflicted, "True/HostnameConflict");
    assert.equal(reasons(statusOf(p).conditions).Accepted, "False/ListenersNotValid");
  });
});

describe("Gateway reasons", () => {
  it("spec.addresses is UnsupportedAddress, a bad annotation InvalidAnnotation, a class with parametersRef InvalidParameters", () => {
    const addr = planOf(gateway([listener("a")], { spec: { addresses: [{ value: "10.0.0.1" }] } }));
    assert.deepEqual(reasons(statusOf(addr).conditions), {
      Accepted: "False/UnsupportedAddress",
      Programmed: "False/Invalid",
    });
    const ann = planOf(gateway([listener("a")], { annotations: { "tailnet.internal/tags": "tag:a,tag:b" } }));
    assert.equal(reasons(statusOf(ann).conditions).Accepted, "False/InvalidAnnotation");
    const cls = gatewayClass("paramed", CONTROLLER_NAME, {
      parametersRef: { group: "", kind: "ConfigMap", name: "x" },
    });
    const params = planOf(gateway([listener("a")], { className: "paramed" }), [cls]);
    assert.equal(reasons(statusOf(params).conditions).Accepted, "False/InvalidParameters");
    assert.deepEqual(params.attachments, []);
  });
});

describe("every condition and reason of the class, Gateway and listener tables is produced by a scenario above", () => {
  it("GatewayClass, Gateway, listener", () => {
    assertCoversTable(GATEWAY_CLASS_REASONS, produced.class);
    assertCoversTable(GATEWAY_API_GATEWAY_REASONS, produced.gateway);
    assertCoversTable(GATEWAY_LISTENER_REASONS, produced.listener);
  });
});
