/**
 * The Helm chart against a real kube-apiserver: `helm lint`, `helm template` applied with strict
 * field validation, then a real `helm install` (and an upgrade with every optional part on) into a
 * namespace labelled PodSecurity `restricted`, where the real Deployment and ReplicaSet controllers
 * must get the operator's pods admitted.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { chartDir, helm, helmBinary, templateArgs } from "../../chart/helm.js";
import { applyClean, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";
import { metacontrollerCrds, monitoringCrds } from "./foreign-crds.js";

let cluster: Cluster;
const NS = "tailnet-system";
/** Every optional part of the chart on (the dashboard as a ConfigMap: no Grafana operator here). */
const everything = {
  monitoring: {
    serviceMonitor: { enabled: true },
    podMonitor: { enabled: true },
    rules: { enabled: true },
    dashboard: { enabled: true, kind: "ConfigMap" },
  },
  networkPolicy: { enabled: true },
  hookToken: { value: "not-a-real-token" },
};

function helmOn(args: string[]): { status: number; out: string } {
  const r = spawnSync(helmBinary(), [...args, "--kubeconfig", cluster.adminConfig], {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "",
      HOME: cluster.dir,
      HELM_CACHE_HOME: join(cluster.dir, "helm", "cache"),
      HELM_CONFIG_HOME: join(cluster.dir, "helm", "config"),
      HELM_DATA_HOME: join(cluster.dir, "helm", "data"),
    },
  });
  return { status: r.status ?? 1, out: `${r.stdout}${r.stderr}` };
}

async function podsReady(want: number): Promise<string[]> {
  const deadline = Date.now() + 60_000;
  let names: string[] = [];
  while (Date.now() < deadline) {
    const pods = JSON.parse(cluster.kubectl(["-n", NS, "get", "pods", "-o", "json"])) as {
      items: { metadata: { name: string } }[];
    };
    names = pods.items.map((p) => p.metadata.name);
    if (names.length >= want) return names;
    await new Promise((r) => setTimeout(r, 500));
  }
  const events = cluster.kubectl(["-n", NS, "get", "events", "-o", "custom-columns=REASON:.reason,MSG:.message"]);
  throw new Error(`only ${names.length} of ${want} operator pods were created:\n${events}`);
}

describe("the Helm chart on a real API server", { timeout: 300_000 }, () => {
  before(async () => {
    cluster = await startCluster();
    applyClean(cluster, [...metacontrollerCrds, ...monitoringCrds]);
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    ensureNamespace(cluster, NS, { "pod-security.kubernetes.io/enforce": "restricted" });
  });
  after(async () => {
    await cluster?.stop();
  });

  it("helm lint passes, also with every optional part on", () => {
    helm(["lint", chartDir, "--strict"]);
    helm(["lint", chartDir, "--strict", ...templateArgs(everything).slice(5)]);
  });

  it("helm template (CRDs included) applies strictly as a dry run, also with every optional part on", () => {
    applyClean(cluster, helm(templateArgs({}, { namespace: NS, includeCrds: true })), { dryRun: true });
    // The CRDs must exist for the custom objects of the second render to be validated, not refused.
    applyClean(
      cluster,
      helm(templateArgs({}, { namespace: NS, includeCrds: true }))
        .split(/^---$/m)
        .filter((d) => /kind: CustomResourceDefinition/.test(d))
        .join("\n---\n"),
    );
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    applyClean(cluster, helm(templateArgs(everything, { namespace: NS })), { dryRun: true });
  });

  it("helm install into a restricted namespace: the release deploys and the operator's pods are admitted", async () => {
    const r = helmOn(["install", "tailnet-operator", chartDir, "--namespace", NS]);
    assert.equal(r.status, 0, r.out);
    assert.doesNotMatch(r.out, /warning/i, r.out);
    const crds = cluster.kubectl(["get", "crd", "-o", "name"]);
    assert.match(crds, /tailnetegresses\.tailnet\.internal/);
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    const pods = await podsReady(2);
    assert.equal(pods.length, 2, "replicaCount 2 → two pods");
  });

  it("helm upgrade with every optional part on applies and keeps the pods admitted", async () => {
    const sets = templateArgs(everything).slice(5);
    const r = helmOn(["upgrade", "tailnet-operator", chartDir, "--namespace", NS, ...sets]);
    assert.equal(r.status, 0, r.out);
    assert.doesNotMatch(r.out, /warning/i, r.out);
    for (const kind of ["servicemonitors", "podmonitors", "prometheusrules", "networkpolicies"]) {
      const items = JSON.parse(cluster.kubectl(["-n", NS, "get", kind, "-o", "json"])) as { items: unknown[] };
      assert.ok(items.items.length >= 1, `${kind} installed`);
    }
    await podsReady(2);
  });

  it("helm uninstall removes the release's objects (CRDs stay, as Helm keeps crds/)", () => {
    const r = helmOn(["uninstall", "tailnet-operator", "--namespace", NS, "--wait", "--timeout", "60s"]);
    assert.equal(r.status, 0, r.out);
    assert.equal(cluster.kubectl(["get", "compositecontrollers", "-o", "name"]).trim(), "");
    assert.match(cluster.kubectl(["get", "crd", "-o", "name"]), /tailnets\.tailnet\.internal/);
  });
});
