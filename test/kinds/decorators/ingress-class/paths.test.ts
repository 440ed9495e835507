/**
 * Paths of one host to several Services (per-request routing): the TailnetIngress an Ingress becomes, the
 * agent config that TailnetIngress renders (validated as the agent validates it), and the same end to end
 * through the Metacontroller emulator against the real hook server — one host, two paths, two Services → Ready.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API_VERSION, type HookKind } from "../../../../src/api/schemas.js";
import { cond } from "../../../../src/conditions/condition.js";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { ingressAgentConfig } from "../../../../src/kinds/composite/ingress/children.js";
import { ingressSpecProblem, readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { decideIngressClass } from "../../../../src/kinds/decorators/ingress-class/decide.js";
import { planIngressClass } from "../../../../src/kinds/decorators/ingress-class/plan.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { assembleStatus } from "../../../../src/pipeline/status.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { silentTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { build } from "../../../helpers/server.js";
import { BASE, ingress, ingressClass, NS, observe, simpleSpec, svcBackend, tailnet } from "./fixtures.js";

const T = "tailnet.internal";

const service = (name: string, ports: { name?: string; port: number }[]): K8sObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: NS },
  spec: { ports },
});

/** One host: / to grafana, /api (Prefix) to api by port name, /api/health (Exact) back to grafana. */
const shop = () =>
  ingress(
    simpleSpec({
      rules: [
        {
          host: `grafana.${BASE}`,
          http: {
            paths: [
              { path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) },
              { path: "/api/", pathType: "ImplementationSpecific", backend: svcBackend("api", "http") },
              { path: "/api/health", pathType: "Exact", backend: svcBackend("grafana", 3000) },
            ],
          },
        },
      ],
    }),
  );

const EXPECTED_EXPOSES = [
  {
    name: "grafana",
    backend: { service: "grafana", port: 3000 },
    paths: [
      { path: "/api/", pathType: "Prefix", backend: { service: "api", port: 8080 } },
      { path: "/api/health", pathType: "Exact", backend: { service: "grafana", port: 3000 } },
    ],
    tls: { secretName: "grafana-tls" },
  },
];

describe("Ingress class: paths of one host to several Services", () => {
  it("become the expose's paths (ImplementationSpecific read as Prefix, named ports resolved); / Prefix is the default", () => {
    const d = decideIngressClass(
      planIngressClass(observe(shop(), { services: [service("api", [{ name: "http", port: 8080 }])] })),
    );
    assert.equal(d.labels[`${T}/ingress-state`], "Pending");
    assert.deepEqual((d.children[0].spec as { exposes: unknown }).exposes, EXPECTED_EXPOSES);
  });

  it("a path to a Service port that does not resolve is UnresolvedPort, naming the path", () => {
    const d = decideIngressClass(planIngressClass(observe(shop())));
    assert.equal(d.labels[`${T}/ingress-state`], "UnresolvedPort");
    assert.match(d.annotations[`${T}/ingress-message`] ?? "", /paths\[1\]: port "http" of Service api/);
  });

  it("spec.defaultBackend takes what no path matches when there is no / Prefix", () => {
    const ing = ingress(
      simpleSpec({
        defaultBackend: svcBackend("web", 80),
        rules: [
          {
            host: `grafana.${BASE}`,
            http: { paths: [{ path: "/api", pathType: "Prefix", backend: svcBackend("api", 8080) }] },
          },
        ],
      }),
    );
    const d = decideIngressClass(planIngressClass(observe(ing)));
    assert.deepEqual((d.children[0].spec as { exposes: unknown }).exposes, [
      {
        name: "grafana",
        backend: { service: "web", port: 80 },
        paths: [{ path: "/api", pathType: "Prefix", backend: { service: "api", port: 8080 } }],
        tls: { secretName: "grafana-tls" },
      },
    ]);
  });

  it("the TailnetIngress renders an agent config with each path's Service, which the agent accepts", () => {
    const tni: K8sObject = {
      apiVersion: API_VERSION,
      kind: "TailnetIngress",
      metadata: { name: "grafana", namespace: NS },
      spec: { tailnetRef: { name: "home" }, hostname: "grafana", mode: "http", exposes: EXPECTED_EXPOSES },
    };
    assert.equal(ingressSpecProblem(tni), undefined);
    const config = validateAgentConfig(
      ingressAgentConfig(tni, readIngressSpec(tni), [{ dnsName: `grafana.${BASE}`, dnsAliases: [] }]),
    );
    assert.deepEqual(config.exposes[0].backend, { host: `grafana.${NS}.svc.cluster.local`, port: 3000 });
    assert.deepEqual(config.exposes[0].paths, [
      { path: "/api/", pathType: "Prefix", backend: { host: `api.${NS}.svc.cluster.local`, port: 8080 } },
      { path: "/api/health", pathType: "Exact", backend: { host: `grafana.${NS}.svc.cluster.local`, port: 3000 } },
    ]);
  });

  it("a TailnetIngress whose paths the agent could not serve is a spec problem naming the path", () => {
    const withPaths = (mode: string, paths: unknown[]): K8sObject => ({
      apiVersion: API_VERSION,
      kind: "TailnetIngress",
      metadata: { name: "x", namespace: NS },
      spec: {
        tailnetRef: { name: "home" },
        hostname: "x",
        mode,
        exposes: [{ name: "x", port: 443, backend: { service: "a", port: 80 }, tls: { secretName: "t" }, paths }],
      },
    });
    const p = (path: string, pathType = "Prefix") => ({ path, pathType, backend: { service: "b", port: 80 } });
    assert.match(
      ingressSpecProblem(withPaths("http", [p("/a%2Fb")])) ?? "",
      /exposes\[0\]\.paths\[0\]: path "\/a%2Fb"/,
    );
    assert.match(ingressSpecProblem(withPaths("http", [p("/a"), p("/a/")])) ?? "", /paths\[1\]: duplicates paths\[0\]/);
    assert.equal(ingressSpecProblem(withPaths("http", [p("/a"), p("/a", "Exact")])), undefined);
    assert.match(ingressSpecProblem(withPaths("tcp", [p("/a")])) ?? "", /paths: only in mode http/);
  });
});

/** A TailnetIngress stand-in that is Ready at once (its own behaviour has its own tests). */
const readyIngress: KindModule = {
  hookKind: "ingress",
  customize: () => [],
  async sync(req, deps) {
    const spec = req.parent.spec as { hostname: string; exposes: { name: string; host?: string }[] };
    const exposes = spec.exposes.map((e) => ({ name: e.name, dnsName: `${e.host ?? spec.hostname}.${BASE}` }));
    return {
      status: assembleStatus(req, deps, [cond("Ready", "True", "Ready", "stand-in")], {
        dnsName: `${spec.hostname}.${BASE}`,
        exposes,
      }),
      children: [],
    };
  },
  async finalize(req, deps) {
    return { status: assembleStatus(req, deps, [], {}, { publish: false }), children: [], finalized: true };
  },
  invalid: (req, _m, deps) => ({ status: assembleStatus(req, deps, []), children: [] }),
};

describe("Ingress class paths end to end (Metacontroller emulator)", () => {
  it("one host, two paths, two Services → Ready; the attachment carries both, stable over further syncs", async (t) => {
    const views = new HeadscaleViews({ timeoutMs: 5000, cacheTTLSeconds: 0, retries: 0 });
    t.after(() => views.close());
    const kinds = new Map<HookKind, KindModule>(kindModules);
    kinds.set("tailnet", silentTailnet);
    kinds.set("ingress", readyIngress);
    const { app } = await build(t, {
      server: { kinds, deps: { views, metrics: createOperatorMetrics({ defaultMetrics: false }) } },
    });
    const mc = new FakeMetacontroller({ app });
    mc.apply(tailnet());
    mc.apply(ingressClass());
    mc.apply(service("grafana", [{ port: 3000 }]));
    mc.apply(service("api", [{ name: "http", port: 8080 }]));
    mc.apply(shop());
    await mc.settle(20);
    await mc.settle(20);
    assert.deepEqual(mc.errors, []);
    const att = mc.get(API_VERSION, "TailnetIngress", "grafana", NS) as K8sObject;
    assert.deepEqual((att.spec as { exposes: unknown }).exposes, EXPECTED_EXPOSES);
    const ours = mc.get("networking.k8s.io/v1", "Ingress", "grafana", NS) as K8sObject;
    assert.equal(ours.metadata.labels?.[`${T}/ingress-state`], "Ready");
    assert.equal(await mc.settle(3), 1, "settled: another round writes nothing");
  });
});
