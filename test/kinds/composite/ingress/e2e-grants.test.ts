/**
 * A TailnetIngress naming another namespace's Service, through the Metacontroller emulator and the real hook server
 * (ingress/permitted.ts). The attack first: an editor of monitoring writes `backend.namespace: other`; the agent's
 * config leaves that expose out until other grants it with a ReferenceGrant, and again once the grant is deleted.
 * Without the gateway-api component (no ReferenceGrant CRD) the same ingress is refused, and every hook still answers.
 * Through the Gateway API class, the TailnetIngress a Gateway gets serves a route's backend in the route's namespace,
 * and a TailnetIngress an editor writes with a forged ownerReference to that Gateway gets nothing the routes did not give.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { startAgent } from "../../../../src/agent/main.js";
import { API_VERSION } from "../../../../src/api/schemas.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { GW_V1 } from "../../../../src/kinds/shared/gateway-api-objects.js";
import { gateway, gatewayClass, listener, service } from "../../decorators/gateway-api/fixtures.js";
import { NS, tcpIngress } from "./fixtures.js";
import { grantObject, OTHER, rightGrant, route } from "./grant-inputs.js";
import { type World, world } from "./world.js";

const PG = { name: "postgres", port: 5432, backend: { service: "postgres", namespace: OTHER, port: 5432 } };
const LOCAL_PG = { name: "local", port: 5433, backend: { service: "pg-local", port: 5432 } };

/** The expose names and backend hosts of the agent config an ingress's ConfigMap holds. */
function agentExposes(w: World, name: string): string[] {
  const cm = w.mc.get("v1", "ConfigMap", `${name}-agent`, NS);
  assert.ok(cm, `ConfigMap ${name}-agent`);
  const config = JSON.parse((cm.data as Record<string, string>)["config.json"]) as {
    exposes: { name: string; backend: { host: string }; paths?: { backends?: { host?: string }[] }[] }[];
  };
  return config.exposes.flatMap((e) => [
    `${e.name} ${e.backend.host}`,
    ...(e.paths ?? []).flatMap((p) => (p.backends ?? []).map((b) => `${e.name} path ${b.host ?? "(500)"}`)),
  ]);
}

async function settle(w: World): Promise<void> {
  await w.mc.settle();
  assert.deepEqual(w.mc.errors, [], "every hook answered 200");
}

describe("TailnetIngress: a backend in another namespace (emulator)", () => {
  it("attack: no grant, not served; the grant arrives, served; the grant goes, not served again", async (t) => {
    const w = await world(t, { components: ["gateway-api"] });
    w.mc.apply(tcpIngress("pg", { exposes: [PG, LOCAL_PG] }));
    await settle(w);
    assert.deepEqual(agentExposes(w, "pg"), ["local pg-local.monitoring.svc.cluster.local"]);
    const refused = w.condition("BackendsReachable", "pg");
    assert.equal(refused.reason, "BackendNotPermitted");
    assert.match(refused.message, /Service other\/postgres, which is not this namespace's/);

    // a near miss: a grant to TailnetIngresses of another namespace changes nothing
    w.mc.apply(
      grantObject(
        OTHER,
        [{ group: "tailnet.internal", kind: "TailnetIngress", namespace: "team" }],
        [{ group: "", kind: "Service" }],
      ),
    );
    await settle(w);
    assert.deepEqual(agentExposes(w, "pg"), ["local pg-local.monitoring.svc.cluster.local"]);

    w.mc.apply(rightGrant("postgres"));
    await settle(w);
    assert.deepEqual(agentExposes(w, "pg"), [
      "postgres postgres.other.svc.cluster.local",
      "local pg-local.monitoring.svc.cluster.local",
    ]);
    assert.notEqual(w.condition("BackendsReachable", "pg").reason, "BackendNotPermitted");

    // consent is withdrawn: the next sync leaves the expose out again
    w.mc.delete("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", "allow", OTHER);
    await settle(w);
    assert.deepEqual(agentExposes(w, "pg"), ["local pg-local.monitoring.svc.cluster.local"]);
    assert.equal(w.condition("BackendsReachable", "pg").reason, "BackendNotPermitted");
  });

  it("without the gateway-api component: GatewayAPIMissing, every hook answers, the rest of the ingress serves", async (t) => {
    const w = await world(t);
    w.mc.apply(rightGrant());
    w.mc.apply(tcpIngress("pg", { exposes: [PG, LOCAL_PG] }));
    await settle(w);
    assert.deepEqual(agentExposes(w, "pg"), ["local pg-local.monitoring.svc.cluster.local"]);
    const c = w.condition("BackendsReachable", "pg");
    assert.equal(c.reason, "GatewayAPIMissing");
    assert.match(c.message, /install the Gateway API ReferenceGrant CRD/);
    assert.ok(w.mc.get("apps/v1", "StatefulSet", "pg-agent-0", NS), "the agent runs");
  });
});

describe("TailnetIngress: the Gateway API class's backends in another namespace (emulator)", () => {
  async function gatewayWorld(t: Parameters<typeof world>[0]) {
    const w = await world(t, { components: ["gateway-api"] });
    w.mc.apply(gatewayClass());
    w.mc.apply(
      gateway([listener("https", { hostname: "shop", allowedRoutes: { namespaces: { from: "All" } } })], {
        namespace: NS,
      }),
    );
    // the route owner in other attaches a route to monitoring's Gateway, with other's own Service
    w.mc.apply(service("search", OTHER));
    w.mc.apply(route("search", OTHER, { backendRefs: [{ name: "search", port: 80 }] }));
    await settle(w);
    return w;
  }

  it("the Gateway's TailnetIngress serves the route's backend in the route's namespace, no grant needed", async (t) => {
    const w = await gatewayWorld(t);
    const tni = w.ingress("web", NS);
    assert.ok(tni, "the Gateway's TailnetIngress");
    assert.deepEqual(agentExposes(w, "web"), [
      "https search.other.svc.cluster.local",
      "https path search.other.svc.cluster.local",
    ]);
    assert.notEqual(w.condition("BackendsReachable", "web", NS).reason, "BackendNotPermitted");
    assert.ok(w.mc.get(GW_V1, "HTTPRoute", "search", OTHER));
  });

  it("attack: a TailnetIngress with a forged ownerReference to the Gateway gets only what a route gave it", async (t) => {
    const w = await gatewayWorld(t);
    const gw = w.mc.get(GW_V1, "Gateway", "web", NS) as K8sObject;
    const forged = (name: string, backend: Record<string, unknown>) => {
      const o = tcpIngress(name, { exposes: [{ name: "x", port: 5432, backend: backend as never }] });
      o.metadata.ownerReferences = [
        { apiVersion: GW_V1, kind: "Gateway", name: "web", uid: gw.metadata.uid ?? "", controller: true },
      ];
      return o;
    };
    const viaSearch = { kind: "HTTPRoute", namespace: OTHER, name: "search" };
    // another Service of other, claimed through the route that names only search
    w.mc.apply(forged("steal", { service: "postgres", namespace: OTHER, port: 5432, route: viaSearch }));
    // another port of the Service the route gave
    w.mc.apply(forged("port", { service: "search", namespace: OTHER, port: 9090, route: viaSearch }));
    // exactly what the route gave the Gateway: no more than monitoring's Gateway already serves
    w.mc.apply(forged("same", { service: "search", namespace: OTHER, port: 80, route: viaSearch }));
    await settle(w);
    for (const name of ["steal", "port"]) {
      assert.deepEqual(agentExposes(w, name), [], name);
      const c = w.condition("BackendsReachable", name);
      assert.equal(c.reason, "BackendNotPermitted", name);
      assert.match(c.message, /HTTPRoute other\/search does not give Gateway monitoring\/web Service other\//, name);
    }
    assert.deepEqual(agentExposes(w, "same"), ["x search.other.svc.cluster.local"]);
    // every expose refused: the agent the ConfigMap starts runs, listens for nothing, and is ready (nothing to probe)
    const cm = w.mc.get("v1", "ConfigMap", "steal-agent", NS) as K8sObject;
    const config = JSON.parse((cm.data as Record<string, string>)["config.json"]);
    const agent = await startAgent(
      { ...config, metricsPort: 0, metricsHost: "127.0.0.1", tailscale: {} },
      { timers: false, defaultMetrics: false },
    );
    t.after(() => agent.close());
    assert.deepEqual((await agent.refresh()).exposes, []);
    const ready = await fetch(`http://127.0.0.1:${agent.metricsPort}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(w.ingress("steal")?.kind, "TailnetIngress");
    assert.equal(API_VERSION, w.ingress("steal")?.apiVersion);
  });
});
