/**
 * The chart's certManager.enabled and the kustomize component manifests/components/cert-manager describe the same
 * thing: cert-manager's Certificates as a child type of the TailnetIngress CompositeController (updated in place),
 * and the ClusterRole a restricted Metacontroller needs for them; off by default in both.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { find, type K8sObject, renderChart, repoRoot } from "./helm.js";

const childrenOf = (objects: K8sObject[]) =>
  (find(objects, "CompositeController", "tailnet-operator-ingress").spec as { childResources: unknown[] })
    .childResources;

describe("chart: certManager.enabled", () => {
  it("off by default: no Certificate child type, no ClusterRole for it", () => {
    const objects = renderChart();
    assert.ok(!JSON.stringify(childrenOf(objects)).includes("cert-manager.io"));
    assert.equal(objects.filter((o) => o.metadata.name === "tailnet-operator-metacontroller-certificates").length, 0);
  });

  it("on: the component's child type appended, and the component's ClusterRole rules", () => {
    const objects = renderChart({ certManager: { enabled: true } });
    const dir = join(repoRoot, "manifests", "components", "cert-manager");
    const [patch] = parse(readFileSync(join(dir, "ingress-certificates.yaml"), "utf8")) as { value: unknown }[];
    const base = childrenOf(renderChart());
    assert.deepEqual(childrenOf(objects), [...base, patch.value]);
    const role = parse(readFileSync(join(dir, "rbac.yaml"), "utf8")) as K8sObject & { rules: unknown };
    const rendered = find(objects, "ClusterRole", "tailnet-operator-metacontroller-certificates") as K8sObject & {
      rules: unknown;
    };
    assert.deepEqual(rendered.rules, role.rules);
  });
});
