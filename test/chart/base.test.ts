/**
 * The Helm chart and the kustomize install (manifests/base, compositecontrollers/) describe the
 * same operator: same CompositeControllers, RBAC, workload shape and Service.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { HOOK_KINDS } from "../../src/api/schemas.js";
import { find, type K8sObject, parseObjects, renderChart, repoRoot } from "./helm.js";

function readObjects(dir: string): K8sObject[] {
  return readdirSync(join(repoRoot, dir))
    .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml" && f !== "kustomizeconfig.yaml")
    .flatMap((f) => parseObjects(readFileSync(join(repoRoot, dir, f), "utf8")));
}

/**
 * The hooks name the Service's namespace, which differs per install; compare without it. The chart
 * writes `url` (it knows its namespace), kustomize `service` + `path` (so overlays can move it):
 * both are compared as the URL Metacontroller calls (pkg/hooks/webhook.go webhookURL).
 */
function withoutServiceNamespace(spec: unknown): unknown {
  return JSON.parse(JSON.stringify(spec), (key, value) => {
    if (key !== "webhook" || !value || typeof value !== "object") return value;
    const { url, service, path, ...rest } = value as {
      url?: string;
      service?: { name: string; namespace: string; port?: number; protocol?: string };
      path?: string;
    };
    const called =
      url ??
      (service
        ? `${service.protocol ?? "http"}://${service.name}.${service.namespace}:${service.port ?? 80}${path}`
        : "");
    // the hook token Secret lives in the release's namespace, as the Service does
    const auth = (rest as { authorization?: { secretRef?: { namespace?: string } } }).authorization;
    if (auth?.secretRef) auth.secretRef = { ...auth.secretRef, namespace: "NS" };
    return {
      ...rest,
      url: called.replace(/^http:\/\/tailnet-operator\.[a-z0-9-]+:8080/, "http://tailnet-operator.NS:8080"),
    };
  });
}

function sortedChildren(spec: unknown): unknown {
  const s = spec as { childResources: Array<{ resource: string }> };
  return { ...s, childResources: [...s.childResources].sort((a, b) => a.resource.localeCompare(b.resource)) };
}

describe("chart and kustomize install agree", () => {
  const chart = renderChart({}, { namespace: "another-namespace" });
  const base = readObjects("manifests/base");
  const ccs = readObjects("compositecontrollers");

  it("compositecontrollers/ holds one CompositeController per kind", () => {
    assert.deepEqual(ccs.map((c) => c.metadata.name).sort(), HOOK_KINDS.map((k) => `tailnet-operator-${k}`).sort());
  });

  for (const kind of HOOK_KINDS) {
    it(`CompositeController tailnet-operator-${kind} has the same spec`, () => {
      const name = `tailnet-operator-${kind}`;
      const ours = find(chart, "CompositeController", name);
      const theirs = find(ccs, "CompositeController", name);
      assert.deepEqual(
        sortedChildren(withoutServiceNamespace(ours.spec)),
        sortedChildren(withoutServiceNamespace(theirs.spec)),
      );
      for (const [k, v] of Object.entries(theirs.metadata.labels ?? {})) assert.equal(ours.metadata.labels?.[k], v, k);
    });
  }

  it("the ClusterRoles have the same rules and aggregation labels", () => {
    const roles = base.filter((o) => o.kind === "ClusterRole");
    assert.ok(roles.length >= 3);
    for (const role of roles) {
      const ours = find(chart, "ClusterRole", role.metadata.name);
      assert.deepEqual(ours.rules, role.rules, role.metadata.name);
      const aggregation = (o: K8sObject) =>
        Object.entries(o.metadata.labels ?? {}).filter(([k]) => k.startsWith("rbac.authorization.k8s.io/"));
      assert.deepEqual(aggregation(ours), aggregation(role), role.metadata.name);
    }
    assert.deepEqual(
      chart
        .filter((o) => o.kind === "ClusterRole")
        .map((o) => o.metadata.name)
        .sort(),
      roles.map((o) => o.metadata.name).sort(),
    );
    const binding = (objects: K8sObject[]) => find(objects, "ClusterRoleBinding", "tailnet-operator").roleRef;
    assert.deepEqual(binding(chart), binding(base));
  });

  it("the Deployment has the same selector, pod security, container, probes and config volume", () => {
    type Spec = {
      replicas: number;
      selector: unknown;
      template: {
        spec: {
          serviceAccountName: string;
          securityContext: unknown;
          terminationGracePeriodSeconds: number;
          volumes: unknown;
          containers: Array<Record<string, unknown> & { securityContext: Record<string, unknown> }>;
        };
      };
    };
    const ours = find(chart, "Deployment", "tailnet-operator").spec as Spec;
    const theirs = find(base, "Deployment", "tailnet-operator").spec as Spec;
    assert.equal(ours.replicas, theirs.replicas);
    assert.deepEqual(ours.selector, theirs.selector);
    const [o, t] = [ours.template.spec, theirs.template.spec];
    assert.equal(o.serviceAccountName, t.serviceAccountName);
    assert.deepEqual(o.securityContext, t.securityContext);
    assert.equal(o.terminationGracePeriodSeconds, t.terminationGracePeriodSeconds);
    assert.deepEqual(o.volumes, t.volumes);
    const [oc, tc] = [o.containers[0], t.containers[0]];
    for (const field of ["name", "image", "args", "ports", "volumeMounts", "readinessProbe", "livenessProbe"]) {
      const probe = (v: unknown) =>
        v && typeof v === "object" && "httpGet" in v ? (v as { httpGet: unknown }).httpGet : v;
      assert.deepEqual(probe(oc[field]), probe(tc[field]), field);
    }
    for (const [k, v] of Object.entries(tc.securityContext)) assert.deepEqual(oc.securityContext[k], v, k);
  });

  it("the Service, ServiceAccount and PodDisruptionBudget match", () => {
    const svc = (objects: K8sObject[]) => {
      const spec = find(objects, "Service", "tailnet-operator").spec as { selector: unknown; ports: unknown };
      return { selector: spec.selector, ports: spec.ports };
    };
    assert.deepEqual(svc(chart), svc(base));
    const sa = (objects: K8sObject[]) =>
      find(objects, "ServiceAccount", "tailnet-operator").automountServiceAccountToken;
    assert.equal(sa(chart), sa(base));
    const pdb = (objects: K8sObject[]) => find(objects, "PodDisruptionBudget", "tailnet-operator").spec;
    assert.deepEqual(pdb(chart), pdb(base));
  });
});
