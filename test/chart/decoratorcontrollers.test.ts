/**
 * The chart's DecoratorControllers (annotated Services) are the ones in decoratorcontrollers/ (the
 * kustomize install and the `render` loop read those): same spec, compared as the URL Metacontroller
 * calls; `decoratorControllers.enabled: false` renders none.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { find, type K8sObject, parseObjects, renderChart, repoRoot } from "./helm.js";

const called = (spec: unknown) =>
  JSON.parse(JSON.stringify(spec), (key, value) => {
    if (key !== "webhook" || !value || typeof value !== "object") return value;
    const { url, service, path, ...rest } = value as {
      url?: string;
      service?: { name: string; namespace: string; port?: number };
      path?: string;
    };
    const u = url ?? (service ? `http://${service.name}.${service.namespace}:${service.port ?? 80}${path}` : "");
    // the hook token Secret lives in the release's namespace, as the Service does
    const auth = (rest as { authorization?: { secretRef?: { namespace?: string } } }).authorization;
    if (auth?.secretRef) auth.secretRef = { ...auth.secretRef, namespace: "NS" };
    return {
      ...rest,
      url: u.replace(/^http:\/\/tailnet-operator\.[a-z0-9-]+:8080/, "http://tailnet-operator.NS:8080"),
    };
  });

describe("chart DecoratorControllers", () => {
  const dir = join(repoRoot, "decoratorcontrollers");
  const files = (parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as { resources: string[] }).resources;
  const theirs: K8sObject[] = files.flatMap((f) => parseObjects(readFileSync(join(dir, f), "utf8")));
  const chart = renderChart({}, { namespace: "another-namespace" });

  it("decoratorcontrollers/ holds the expose, target, ingress-class and loadbalancer controllers", () => {
    assert.deepEqual(
      theirs.map((o) => `${o.kind}/${o.metadata.name}`),
      [
        "DecoratorController/tailnet-operator-service-expose",
        "DecoratorController/tailnet-operator-service-target",
        "DecoratorController/tailnet-operator-ingress-class",
        "DecoratorController/tailnet-operator-service-loadbalancer",
      ],
    );
  });
  for (const dc of theirs) {
    it(`${dc.metadata.name} has the same spec in the chart`, () => {
      const ours = find(chart, "DecoratorController", dc.metadata.name);
      assert.deepEqual(called(ours.spec), called(dc.spec));
      for (const [k, v] of Object.entries(dc.metadata.labels ?? {})) assert.equal(ours.metadata.labels?.[k], v, k);
    });
  }
  it("the chart and the kustomize base install the same IngressClass; ingressClass.enabled: false renders neither it nor its controller", () => {
    const base = parseObjects(readFileSync(join(repoRoot, "manifests/base/ingressclass.yaml"), "utf8"));
    const cls = find(chart, "IngressClass", "tailnet");
    assert.deepEqual(cls.spec, { controller: "tailnet.internal/ingress" });
    assert.deepEqual(cls.spec, base[0].spec);
    assert.equal(cls.metadata.annotations?.["ingressclass.kubernetes.io/is-default-class"], undefined);
    const off = renderChart({ ingressClass: { enabled: false } });
    assert.equal(off.filter((o) => o.kind === "IngressClass").length, 0);
    assert.equal(off.filter((o) => o.metadata.name === "tailnet-operator-ingress-class").length, 0);
    const def = renderChart({ ingressClass: { default: true } });
    assert.equal(
      find(def, "IngressClass", "tailnet").metadata.annotations?.["ingressclass.kubernetes.io/is-default-class"],
      "true",
    );
  });
  it("gatewayAPI.enabled renders the component's GatewayClass, ClusterRole and the four Gateway API controllers; off by default", () => {
    const component = join(repoRoot, "manifests/components/gateway-api");
    const gwDir = join(repoRoot, "decoratorcontrollers/gateway-api");
    const gwFiles = (parse(readFileSync(join(gwDir, "kustomization.yaml"), "utf8")) as { resources: string[] })
      .resources;
    const controllers = gwFiles.flatMap((f) => parseObjects(readFileSync(join(gwDir, f), "utf8")));
    const on = renderChart({ gatewayAPI: { enabled: true } }, { namespace: "another-namespace" });
    for (const dc of controllers) {
      assert.deepEqual(
        called(find(on, "DecoratorController", dc.metadata.name).spec),
        called(dc.spec),
        dc.metadata.name,
      );
    }
    for (const f of ["gatewayclass.yaml", "rbac.yaml"]) {
      const [mine] = parseObjects(readFileSync(join(component, f), "utf8"));
      const ours = find(on, mine.kind, mine.metadata.name) as unknown as Record<string, unknown>;
      const theirs = mine as unknown as Record<string, unknown>;
      assert.deepEqual(ours.spec ?? ours.rules, theirs.spec ?? theirs.rules, f);
    }
    const names = new Set([...controllers.map((c) => c.metadata.name), "tailnet-operator-metacontroller-gateway-api"]);
    const off = chart.filter((o) => o.kind === "GatewayClass" || names.has(o.metadata.name));
    assert.deepEqual(off, []);
  });
  it("gatewayAPI.enabled appends the component's ReferenceGrant child type to the TailnetIngress controller; off by default", () => {
    const childrenOf = (objects: K8sObject[]) =>
      (find(objects, "CompositeController", "tailnet-operator-ingress").spec as { childResources: unknown[] })
        .childResources;
    const file = join(repoRoot, "manifests/components/gateway-api/ingress-referencegrants.yaml");
    const [patch] = parse(readFileSync(file, "utf8")) as { value: unknown }[];
    const base = childrenOf(renderChart());
    assert.ok(!JSON.stringify(base).includes("referencegrants"));
    assert.deepEqual(childrenOf(renderChart({ gatewayAPI: { enabled: true } })), [...base, patch.value]);
  });
  it("decoratorControllers.enabled: false renders none", () => {
    const off = renderChart({ decoratorControllers: { enabled: false } });
    assert.deepEqual(
      off.filter((o) => o.kind === "DecoratorController"),
      [],
    );
    assert.ok(
      off.some((o) => o.kind === "CompositeController"),
      "the CompositeControllers stay",
    );
  });
});
