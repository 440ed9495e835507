import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
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
    const files = readdirSync(new URL("compositecontrollers/", root)).filter(
      (f) => f !== "kustomization.yaml" && f !== "kustomizeconfig.yaml",
    );
    assert.deepEqual(files.sort(), KINDS.map((k) => `${k.hookKind}.yaml`).sort());
    for (const k of KINDS) {
      const cc = parse(readFileSync(new URL(`compositecontrollers/${k.hookKind}.yaml`, root), "utf8"));
      assert.equal(cc.spec.generateSelector, true);
      assert.equal(cc.spec.parentResource.resource, k.plural);
      assert.ok(cc.spec.resyncPeriodSeconds > 0);
      for (const hook of ["customize", "sync", "finalize"]) {
        const h = cc.spec.hooks[hook];
        assert.equal(h.version, "v2");
        // service + path, not url: kustomize rewrites a Service reference, never a URL string
        assert.equal(h.webhook.url, undefined);
        assert.deepEqual(h.webhook.service, { name: "tailnet-operator", namespace: "tailnet-system", port: 8080 });
        assert.equal(h.webhook.path, `/hooks/${k.hookKind}/${hook}`);
        assert.match(h.webhook.timeout, /^\d+s$/);
      }
      for (const c of cc.spec.childResources) {
        // OnDelete: only the gateway's DNS Service (53/UDP + 53/TCP cannot go through Metacontroller's merge;
        // the hook replaces it). Every Secret is InPlace: a TailnetAuthKey's Secret is named by its user, the
        // agents' `<name>-authkey` and the gateway's `<name>-gateway-authkey` are rotated in place, and state
        // Secrets are answered without data, so an InPlace apply keeps what containerboot wrote (issue 32).
        const onDelete = c.resource === "services" && k.hookKind === "gateway";
        const want = onDelete ? "OnDelete" : "InPlace";
        assert.equal(c.updateStrategy.method, want, `${k.hookKind} ${c.resource}`);
      }
      // one node per replica (issue 32): every child type the agents answer is listed, or Metacontroller
      // would neither watch nor delete it; deployments stay for the upgrade from the legacy Deployment
      if (k.hookKind === "egress" || k.hookKind === "ingress") {
        const types = cc.spec.childResources.map((c: { resource: string }) => c.resource);
        for (const t of ["statefulsets", "roles", "rolebindings", "secrets", "serviceaccounts", "deployments"])
          assert.ok(types.includes(t), `${k.hookKind} lists ${t}`);
      }
    }
  });

  it("an overlay that changes the namespace or prefixes names moves every hook with the Service", () => {
    const dir = mkdtempSync(join(tmpdir(), "overlay-"));
    // kustomize takes a relative path only
    const base = relative(dir, new URL("manifests/", root).pathname);
    const build = (kustomization: string) => {
      writeFileSync(join(dir, "kustomization.yaml"), kustomization);
      const out = execFileSync(layerBinary("kubectl"), ["kustomize", dir], { encoding: "utf8" });
      return parseAllDocuments(out).map((d) => d.toJSON() as K8sObject & { spec: Record<string, unknown> });
    };
    for (const [overlay, service] of [
      [{ namespace: "ops-net" }, { name: "tailnet-operator", namespace: "ops-net" }],
      [
        { namespace: "ops-net", namePrefix: "blue-" },
        { name: "blue-tailnet-operator", namespace: "ops-net" },
      ],
    ] as const) {
      const docs = build(
        ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", `resources: [${base}]`]
          .concat(Object.entries(overlay).map(([k, v]) => `${k}: ${v}`))
          .join("\n"),
      );
      const svc = docs.find((d) => d.kind === "Service");
      assert.deepEqual({ name: svc?.metadata.name, namespace: svc?.metadata.namespace }, service);
      const ccs = docs.filter((d) => d.kind === "CompositeController");
      assert.equal(ccs.length, KINDS.length);
      for (const cc of ccs) {
        const hooks = cc.spec.hooks as Record<string, { webhook: { service: Record<string, unknown>; path: string } }>;
        for (const hook of ["customize", "sync", "finalize"]) {
          // Metacontroller calls http://<name>.<namespace>:<port><path> (pkg/hooks/webhook.go webhookURL)
          assert.deepEqual(hooks[hook].webhook.service, { ...service, port: 8080 }, `${cc.metadata.name} ${hook}`);
        }
      }
    }
  });
});
