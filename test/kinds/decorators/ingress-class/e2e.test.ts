/**
 * Ingresses of the class `tailnet` end to end through the Metacontroller emulator, which plays the
 * repo's decoratorcontrollers/ingress-class.yaml (no selector, no finalize hook) against the real
 * hook server. The TailnetIngress kind is a stand-in that reports Ready with its DNS names (its own
 * behaviour has its own tests): what is checked here is the decorator contract — an Ingress of
 * another class is never written to (no label, annotation, finalizer or status), ours gets its
 * attachment, state and status.loadBalancer, and changing the class away releases it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API_VERSION, type HookKind } from "../../../../src/api/schemas.js";
import { cond } from "../../../../src/conditions/condition.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { assembleStatus } from "../../../../src/pipeline/status.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { silentTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { build } from "../../../helpers/server.js";
import { BASE, ingress, ingressClass, NS, simpleSpec, svcBackend, tailnet } from "./fixtures.js";

const T = "tailnet.internal";

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
  const events = memoryEventRecorder();
  const { app } = await build(t, {
    server: { kinds, deps: { views, metrics: createOperatorMetrics({ defaultMetrics: false }), events } },
  });
  const mc = new FakeMetacontroller({ app });
  mc.apply(tailnet());
  mc.apply(ingressClass());
  mc.apply(ingressClass("nginx", "k8s.io/ingress-nginx"));
  mc.apply(backendService("grafana", [{ name: "http", port: 3000 }]));
  return { mc, events: events.events };
}

/** A backend Service of the Ingresses, in their namespace. */
const backendService = (name: string, ports: { name?: string; port: number }[]): K8sObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: NS },
  spec: { ports },
});

const ing = (mc: FakeMetacontroller, name: string) => mc.get("networking.k8s.io/v1", "Ingress", name, NS) as K8sObject;

describe("Ingress class tailnet end to end (Metacontroller emulator)", () => {
  it("an Ingress of another class is never written to; ours gets a TailnetIngress, its state, an Event and status.loadBalancer", async (t) => {
    const { mc, events } = await world(t);
    const nginxStatus = { loadBalancer: { ingress: [{ ip: "10.0.0.1" }] } };
    mc.apply(ingress({ ...simpleSpec(), ingressClassName: "nginx" }, { name: "shop", status: nginxStatus }));
    mc.apply(ingress({ defaultBackend: svcBackend("grafana", 3000) }, { name: "classless" }));
    mc.apply(
      ingress({
        ...simpleSpec(),
        rules: [
          {
            host: "grafana",
            http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", "http") }] },
          },
        ],
      }),
    );
    const before = { shop: structuredClone(ing(mc, "shop")), classless: structuredClone(ing(mc, "classless")) };
    await mc.settle(20);
    assert.deepEqual(mc.errors, []);
    for (const name of ["shop", "classless"] as const) {
      assert.deepEqual(ing(mc, name), before[name], `${name}: not a byte changed`);
    }
    assert.deepEqual(
      mc.list("TailnetIngress").map((o) => o.metadata.name),
      ["grafana"],
    );
    assert.ok(!events.some((e) => e.regarding.metadata.name !== "grafana"), "no Event on other Ingresses");

    const ours = ing(mc, "grafana");
    const att = mc.get(API_VERSION, "TailnetIngress", "grafana", NS) as K8sObject;
    assert.equal(att.metadata.ownerReferences?.[0]?.uid, ours.metadata.uid, "owned: deleting the Ingress collects it");
    assert.deepEqual((att.spec as { exposes: unknown[] }).exposes, [
      { name: "grafana", backend: { service: "grafana", port: 3000 }, tls: { secretName: "grafana-tls" } },
    ]);
    assert.equal(ours.metadata.labels?.[`${T}/ingress-state`], "Ready");
    assert.deepEqual(ours.status, {
      loadBalancer: { ingress: [{ hostname: `grafana.${BASE}`, ports: [{ port: 443, protocol: "TCP" }] }] },
    });
    assert.deepEqual(
      events.filter((e) => e.regarding.kind === "Ingress").map((e) => e.reason),
      ["Pending", "Ready"],
    );
    // settled: another round writes nothing (the status is deterministic)
    assert.equal(await mc.settle(3), 1);
    // no finalizer on any Ingress (the controller has no finalize hook): a delete removes it at once
    for (const name of ["shop", "grafana"]) {
      mc.delete("networking.k8s.io/v1", "Ingress", name, NS);
      assert.equal(ing(mc, name), undefined, `${name} deleted without waiting for a finalizer`);
    }
  });

  it("two hosts on port 443 survive Metacontroller's in-place apply: the exposes are merged by name, not collapsed by port", async (t) => {
    // pkg/dynamic/apply/apply.go guesses a list's merge key, `port` before `name`: exposes that all
    // carried port 443 collapsed into one (the second sync made [wiki, wiki], InvalidSpec).
    const { mc } = await world(t);
    mc.apply(backendService("wiki", [{ port: 8080 }]));
    const wiki = {
      host: "wiki",
      http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("wiki", 8080) }] },
    };
    mc.apply(ingress(simpleSpec({ tls: [{ secretName: "all-tls" }], rules: [...simpleSpec().rules, wiki] })));
    await mc.settle(20);
    await mc.settle(20);
    assert.deepEqual(mc.errors, []);
    const att = mc.get(API_VERSION, "TailnetIngress", "grafana", NS) as K8sObject;
    assert.deepEqual(
      (att.spec as { exposes: { name: string; backend: unknown }[] }).exposes.map((e) => [e.name, e.backend]),
      [
        ["grafana", { service: "grafana", port: 3000 }],
        ["wiki", { service: "wiki", port: 8080 }],
      ],
    );
    assert.equal(ing(mc, "grafana").metadata.labels?.[`${T}/ingress-state`], "Ready");
    assert.deepEqual(
      (ing(mc, "grafana").status as { loadBalancer: { ingress: { hostname: string }[] } }).loadBalancer.ingress.map(
        (i) => i.hostname,
      ),
      [`grafana.${BASE}`, `wiki.${BASE}`],
    );
  });

  it("changing the class away releases the Ingress: attachment deleted, label and annotation removed, our status cleared", async (t) => {
    const { mc } = await world(t);
    mc.apply(ingress(simpleSpec()));
    await mc.settle(20);
    assert.ok(mc.get(API_VERSION, "TailnetIngress", "grafana", NS));
    const live = structuredClone(ing(mc, "grafana"));
    (live.spec as { ingressClassName: string }).ingressClassName = "nginx";
    mc.apply(live);
    await mc.settle(20);
    assert.deepEqual(mc.errors, []);
    const after = ing(mc, "grafana");
    assert.equal(mc.get(API_VERSION, "TailnetIngress", "grafana", NS), undefined);
    assert.equal(after.metadata.labels?.[`${T}/ingress-state`], undefined);
    assert.equal(after.metadata.annotations?.[`${T}/ingress-message`], undefined);
    assert.deepEqual(after.status, { loadBalancer: {} });
  });
});
