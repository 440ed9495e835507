import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parse, parseAllDocuments } from "yaml";
import { KINDS } from "../../src/api/schemas.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { layerBinary } from "../chart/helm.js";
import { validateChild } from "../helpers/validate.js";

const root = new URL("../../", import.meta.url);

describe("install manifests", () => {
  it("kubectl kustomize manifests/ builds CRDs, operator and CompositeControllers", () => {
    // the same pinned kubectl the chart tests use (a machine's own kubectl may be too old)
    const out = execFileSync(layerBinary("kubectl"), ["kustomize", new URL("manifests/", root).pathname], {
      encoding: "utf8",
    });
    const docs = parseAllDocuments(out).map((d) => d.toJSON() as K8sObject);
    const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`);
    for (const k of KINDS) assert.ok(kinds.includes(`CustomResourceDefinition/${k.plural}.tailnet.internal`));
    for (const k of KINDS) assert.ok(kinds.includes(`CompositeController/tailnet-operator-${k.hookKind}`));
    for (const want of [
      "Namespace/tailnet-system",
      "Deployment/tailnet-operator",
      "Service/tailnet-operator",
      "ServiceAccount/tailnet-operator",
    ]) {
      assert.ok(kinds.includes(want), want);
    }
    for (const d of docs)
      if (["Deployment", "Service", "ServiceAccount", "ConfigMap"].includes(d.kind)) validateChild(d);
    const dep = docs.find((d) => d.kind === "Deployment") as K8sObject & {
      spec: {
        template: {
          spec: {
            securityContext: { runAsNonRoot: boolean };
            containers: { securityContext: Record<string, unknown> }[];
          };
        };
      };
    };
    assert.equal(dep.spec.template.spec.securityContext.runAsNonRoot, true);
    assert.deepEqual(dep.spec.template.spec.containers[0].securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
  });

  it("one CompositeController per kind: v2 hooks, generateSelector, timeouts, update strategies", () => {
    const files = readdirSync(new URL("compositecontrollers/", root)).filter((f) => f !== "kustomization.yaml");
    assert.deepEqual(files.sort(), KINDS.map((k) => `${k.hookKind}.yaml`).sort());
    for (const k of KINDS) {
      const cc = parse(readFileSync(new URL(`compositecontrollers/${k.hookKind}.yaml`, root), "utf8"));
      assert.equal(cc.spec.generateSelector, true);
      assert.equal(cc.spec.parentResource.resource, k.plural);
      assert.ok(cc.spec.resyncPeriodSeconds > 0);
      for (const hook of ["customize", "sync", "finalize"]) {
        const h = cc.spec.hooks[hook];
        assert.equal(h.version, "v2");
        assert.equal(h.webhook.url, `http://tailnet-operator.tailnet-system:8080/hooks/${k.hookKind}/${hook}`);
        assert.match(h.webhook.timeout, /^\d+s$/);
      }
      for (const c of cc.spec.childResources) {
        const want = c.resource === "secrets" && k.hookKind !== "tailnet" ? "OnDelete" : "InPlace";
        assert.equal(c.updateStrategy.method, want, `${k.hookKind} ${c.resource}`);
      }
    }
  });
});
