/**
 * `kubectl kustomize` builds the opt-in components on top of the base install, alone and
 * together, and the documented overlay patch (a metrics peer for the operator) applies.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { find, type K8sObject, layerBinary, parseObjects, renderChart, repoRoot } from "../chart/helm.js";
import { validateObject } from "../chart/validate.js";
import { MONITORING_VALUES } from "./generated.js";

const manifests = join(repoRoot, "manifests");
const work = mkdtempSync(join(tmpdir(), "tailnet-kustomize-"));
after(() => rmSync(work, { recursive: true, force: true }));

function build(dir: string): K8sObject[] {
  return parseObjects(
    execFileSync(layerBinary("kubectl"), ["kustomize", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }),
  );
}
const ids = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);

const COMPONENT_OBJECTS: Record<string, string[]> = {
  monitoring: [
    "ServiceMonitor/tailnet-operator",
    "PodMonitor/tailnet-agents",
    "PrometheusRule/tailnet-operator",
    "GrafanaDashboard/tailnet-operator",
  ],
  "network-isolation": ["NetworkPolicy/tailnet-operator"],
  "cert-manager": ["ClusterRole/tailnet-operator-metacontroller-certificates"],
};
// manifests/ itself includes network-isolation (on by default); every overlay keeps it.
const OVERLAYS: Record<string, string[]> = {
  monitoring: ["monitoring", "network-isolation"],
  "network-isolation": ["network-isolation"],
  full: ["monitoring", "network-isolation"],
  "cert-manager": ["cert-manager", "network-isolation"],
};

describe("kustomize overlays", () => {
  const base = build(manifests);

  for (const [overlay, components] of Object.entries(OVERLAYS)) {
    it(`${overlay}: lists the base's parts`, () => {
      // kustomize rejects `../../` from inside the base's directory (cycle), so the overlays
      // name the base's resources one by one; they must stay the same list.
      const baseResources = parse(readFileSync(join(manifests, "kustomization.yaml"), "utf8")).resources as string[];
      const overlayDir = join(manifests, "overlays", overlay);
      const want = baseResources.map((r) => relative(overlayDir, join(manifests, r)));
      const kustomization = parse(readFileSync(join(overlayDir, "kustomization.yaml"), "utf8"));
      assert.deepEqual(kustomization.resources, want);
      assert.deepEqual(
        kustomization.components,
        components.map((c) => `../../components/${c}`),
      );
    });

    it(`${overlay}: builds the base plus ${components.join(" and ")}, every object valid`, () => {
      const objects = build(join(manifests, "overlays", overlay));
      const expected = [...new Set([...ids(base), ...components.flatMap((c) => COMPONENT_OBJECTS[c])])];
      assert.deepEqual(ids(objects).sort(), expected.sort());
      for (const o of objects) validateObject(o);
      for (const c of components.flatMap((name) => COMPONENT_OBJECTS[name])) {
        const [kind, name] = c.split("/");
        if (kind === "ClusterRole") continue; // cluster-scoped
        assert.equal(find(objects, kind, name).metadata.namespace, "tailnet-system", c);
      }
    });
  }

  it("cert-manager: Certificates are a child type of the ingress CompositeController there, and only there", () => {
    // Metacontroller refuses a CompositeController whose child type is not served, so the base must not list it
    const childrenOf = (objects: ReturnType<typeof build>) =>
      (
        find(objects, "CompositeController", "tailnet-operator-ingress").spec as {
          childResources: { resource: string }[];
        }
      ).childResources.map((c) => c.resource);
    assert.ok(!childrenOf(base).includes("certificates"));
    assert.deepEqual(childrenOf(build(join(manifests, "overlays", "cert-manager"))), [
      ...childrenOf(base),
      "certificates",
    ]);
  });

  it("the components select what the base installs", () => {
    const objects = build(join(manifests, "overlays", "full"));
    const service = find(objects, "Service", "tailnet-operator");
    const sm = find(objects, "ServiceMonitor", "tailnet-operator").spec as {
      selector: { matchLabels: Record<string, string> };
      endpoints: Array<{ port: string }>;
    };
    for (const [k, v] of Object.entries(sm.selector.matchLabels)) assert.equal(service.metadata.labels?.[k], v, k);
    const portNames = (service.spec as { ports: Array<{ name: string }> }).ports.map((p) => p.name);
    assert.ok(portNames.includes(sm.endpoints[0].port));
    const deployment = find(objects, "Deployment", "tailnet-operator").spec as {
      template: { metadata: { labels: Record<string, string> } };
    };
    const policy = find(objects, "NetworkPolicy", "tailnet-operator").spec as {
      podSelector: { matchLabels: Record<string, string> };
    };
    for (const [k, v] of Object.entries(policy.podSelector.matchLabels)) {
      assert.equal(deployment.template.metadata.labels[k], v, k);
    }
  });

  it("the PrometheusRule is the chart's", () => {
    const objects = build(join(manifests, "overlays", "monitoring"));
    const chartRule = find(renderChart(MONITORING_VALUES), "PrometheusRule", "tailnet-operator");
    assert.deepEqual(find(objects, "PrometheusRule", "tailnet-operator").spec, chartRule.spec);
  });

  it("an overlay can add a metrics peer to the operator NetworkPolicy (as docs/OPERATIONS.md shows)", () => {
    const dir = join(work, "site");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "kustomization.yaml"),
      stringify({
        apiVersion: "kustomize.config.k8s.io/v1beta1",
        kind: "Kustomization",
        // kustomize accepts only relative paths to other kustomizations.
        resources: [relative(dir, join(manifests, "overlays", "full"))],
        patches: [
          {
            target: { kind: "NetworkPolicy", name: "tailnet-operator" },
            patch: stringify([
              {
                op: "add",
                path: "/spec/ingress/-",
                value: {
                  from: [
                    {
                      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
                      podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
                    },
                  ],
                  ports: [{ port: 8080, protocol: "TCP" }],
                },
              },
            ]),
          },
        ],
      }),
    );
    const policy = find(build(dir), "NetworkPolicy", "tailnet-operator").spec as { ingress: unknown[] };
    assert.equal(policy.ingress.length, 2);
  });
});
