/**
 * Our objects against a real kube-apiserver: every example and every object written out in README.md
 * and docs/ applies strictly; the status the operator reports (each example's golden status) comes
 * back unpruned through the status subresource; every child the operator renders (the golden
 * children) applies strictly under its parent's owner reference, its pods are admitted by PodSecurity
 * at the level the docs give, and the real garbage collector removes them all with the parent.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../chart/helm.js";
import { apply, applyClean, documentedObjects, ensureNamespace, examples, type GoldenObject } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";
import { gatewayApiCrds } from "./gateway-api.js";
import { podFrom, WORKLOAD_KINDS } from "./pods.js";

let cluster: Cluster;
const all = examples();
const namespacesOf = (objects: { metadata: { namespace?: string } }[]) =>
  [...new Set(objects.map((o) => o.metadata.namespace).filter((n): n is string => !!n))].sort();
/** The resource (plural.group) of a kind the examples use: ours, or a core Service. */
const resourceOf = (kind: string) => {
  const lower = kind.toLowerCase();
  const plural = lower.endsWith("ss") ? `${lower}es` : `${lower}s`;
  return kind.startsWith("Tailnet") ? `${plural}.tailnet.internal` : plural;
};

function getJson<T>(args: string[]): T {
  return JSON.parse(cluster.kubectl([...args, "-o", "json"])) as T;
}

async function until(what: string, check: () => boolean, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

/**
 * A decorated Service's attachment (a TailnetIngress no input names, examples/loadbalancer): created
 * from the Service's golden children under the Service, as Metacontroller would, so its status and
 * children can be checked like any parent's.
 */
function attach(golden: GoldenObject[], g: GoldenObject): void {
  for (const svc of golden.filter((o) => o.kind === "Service")) {
    const child = svc.children?.find((c) => c.kind === g.kind && c.metadata.name === g.name);
    if (!child) continue;
    const parent = getJson<K8sObject & { metadata: { uid: string } }>([
      "get",
      "svc",
      svc.name,
      "-n",
      svc.namespace ?? "",
    ]);
    const owner = { apiVersion: "v1", kind: "Service", name: svc.name, uid: parent.metadata.uid, controller: true };
    const owned = { ...child, metadata: { ...child.metadata, ownerReferences: [owner] } };
    const r = apply(cluster, [owned]);
    assert.ok(r.status === 0 && r.warnings.length === 0, `${g.kind}/${g.name} under Service ${svc.name}:\n${r.stderr}`);
    return;
  }
}

describe("our objects on a real API server", { timeout: 600_000 }, () => {
  before(async () => {
    cluster = await startCluster();
    applyClean(cluster, cluster.kubectl(["kustomize", "manifests/crds"]));
    // docs/gateway-api.md's Gateway, HTTPRoute and GRPCRoute: the pinned standard channel CRDs validate them
    for (const crd of gatewayApiCrds()) applyClean(cluster, crd.yaml);
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    const namespaces = namespacesOf([...all.flatMap((e) => e.inputs), ...documentedObjects().map((d) => d.object)]);
    // Every namespace at PodSecurity `restricted`, as manifests/base/namespace.yaml labels the
    // operator's own (the gateway runs there): the rendered pods must be admitted wherever they land.
    for (const ns of namespaces) ensureNamespace(cluster, ns, { "pod-security.kubernetes.io/enforce": "restricted" });
  });
  after(async () => {
    await cluster?.stop();
  });

  for (const { name, inputs } of all) {
    it(`examples/${name} applies strictly`, () => applyClean(cluster, inputs));
  }

  it("every object in README.md and docs/*.md applies strictly (dry run)", () => {
    const docs = documentedObjects();
    assert.ok(docs.length >= 10, `found ${docs.length} documented objects`);
    for (const { file, object } of docs) {
      const r = apply(cluster, [object], { dryRun: true });
      assert.ok(
        r.status === 0 && r.warnings.length === 0,
        `${file}: ${object.kind}/${object.metadata.name}:\n${r.stderr}`,
      );
    }
  });

  for (const { name, golden } of all) {
    it(`examples/${name}: the golden status is written through /status and read back byte for byte`, () => {
      for (const g of golden.filter((o) => o.status && o.kind.startsWith("Tailnet"))) {
        const ns = g.namespace ? ["-n", g.namespace] : [];
        const target = [resourceOf(g.kind), g.name];
        if (cluster.tryKubectl(["get", ...target, ...ns]).status !== 0) attach(golden, g);
        const patch = JSON.stringify({ status: g.status });
        cluster.kubectl(["patch", ...target, ...ns, "--subresource=status", "--type=merge", "-p", patch]);
        const back = getJson<{ status: unknown }>(["get", ...target, ...ns]).status;
        assert.deepEqual(back, g.status, `${g.kind}/${g.name}: the server pruned or changed the status`);
      }
    });
  }

  for (const { name, golden } of all) {
    it(`examples/${name}: every rendered child applies strictly under its parent's owner reference`, () => {
      for (const g of golden.filter((o) => o.children?.length)) {
        const ns = g.namespace ? ["-n", g.namespace] : [];
        const parent = getJson<K8sObject & { metadata: { uid: string } }>(["get", resourceOf(g.kind), g.name, ...ns]);
        const owner = {
          apiVersion: parent.apiVersion,
          kind: parent.kind,
          name: parent.metadata.name,
          uid: parent.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        };
        const children = (g.children ?? []).map((c) => ({
          ...c,
          metadata: { ...c.metadata, ownerReferences: [owner] },
        }));
        // Examples share names (ingress, ingress-ha and service all render monitoring/grafana-agent),
        // and a workload's selector (which carries the owner's uid) is immutable: start afresh.
        for (const d of children.filter((c) => WORKLOAD_KINDS.includes(c.kind))) {
          const where = ["-n", d.metadata.namespace ?? "default"];
          const kind = d.kind.toLowerCase();
          cluster.kubectl(["delete", kind, d.metadata.name, ...where, "--ignore-not-found", "--wait=true"]);
        }
        const r = apply(cluster, children);
        assert.ok(r.status === 0 && r.warnings.length === 0, `${g.kind}/${g.name}:\n${r.stderr}`);
      }
    });
  }

  it("every pod the operator renders is admitted by PodSecurity `restricted` in its own namespace", () => {
    const refused: string[] = [];
    for (const { name, golden } of all) {
      for (const d of golden.flatMap((g) => g.children ?? []).filter((c) => WORKLOAD_KINDS.includes(c.kind))) {
        // Under a name of its own: the StatefulSet applied above already has its real pod <name>-0, which a
        // dry-run apply of the same name would try to update (and pods are immutable).
        const pod = podFrom(d, d.metadata.namespace ?? "default");
        pod.metadata.name = `${pod.metadata.name}-admission`;
        const r = apply(cluster, [pod], { dryRun: true });
        if (r.status !== 0 || r.warnings.length)
          refused.push(`examples/${name} ${d.metadata.name}: ${r.stderr.trim()}`);
      }
    }
    assert.deepEqual(refused, []);
  });

  it("the real controllers make each rendered workload's pods, and the garbage collector removes every child with its parent", async () => {
    const owned = (ns: string, uid: string) =>
      [
        "deployments",
        "replicasets",
        "statefulsets",
        "pods",
        "services",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "roles",
        "rolebindings",
      ].flatMap((kind) =>
        getJson<{ items: { metadata: { name: string; ownerReferences?: { uid: string }[] } }[] }>([
          "-n",
          ns,
          "get",
          kind,
        ])
          .items.filter((o) => o.metadata.ownerReferences?.some((r) => r.uid === uid))
          .map((o) => `${kind}/${o.metadata.name}`),
      );
    const egress = all.find((e) => e.name === "egress");
    assert.ok(egress, "examples/egress exists");
    const parent = getJson<{ metadata: { uid: string } }>([
      "-n",
      "shop",
      "get",
      "tailnetegresses.tailnet.internal",
      "db",
    ]);
    await until("the agent's pod", () => getJson<{ items: unknown[] }>(["-n", "shop", "get", "pods"]).items.length > 0);
    const before = owned("shop", parent.metadata.uid);
    assert.ok(before.length >= 4, `children owned by the TailnetEgress: ${before.join(", ")}`);
    cluster.kubectl(["-n", "shop", "delete", "tailnetegresses.tailnet.internal", "db", "--wait=true"]);
    await until(
      "the garbage collector",
      () =>
        owned("shop", parent.metadata.uid).length === 0 &&
        getJson<{ items: unknown[] }>(["-n", "shop", "get", "pods"]).items.length === 0,
    );
  });
});
