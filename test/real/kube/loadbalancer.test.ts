/**
 * LoadBalancer Services of class tailnet.internal/tailnet on a real kube-apiserver (issue 26): the
 * service-loadbalancer sync hook's status answer, written as Metacontroller writes it (UpdateStatus: a
 * PUT of the whole object to services/<name>/status, pkg/controller/decorator/controller.go) by a
 * ServiceAccount that holds nothing but `tailnet-operator-metacontroller-services`, is what
 * `kubectl get svc` shows as EXTERNAL-IP; the next sync answers the status as the server stored it
 * (no write on every resync); the class is immutable, a type change drops it, and the sync then
 * withdraws the addresses.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import type { K8sObject as Manifest } from "../../chart/helm.js";
import { suiteHooks } from "../../helpers/server.js";
import { applyClean, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";

const NS = "monitoring";
const T = "tailnet.internal";
const MC = "system:serviceaccount:metacontroller:restricted";
const ING = "TailnetIngress.tailnet.internal/v1alpha1";

describe("LoadBalancer Service of our class on a real API server", { timeout: 300_000, concurrency: false }, () => {
  let cluster: Cluster;
  let post: (path: string, payload: unknown) => Promise<Record<string, unknown>>;
  let close: () => Promise<void> | void = () => undefined;
  const get = (name: string) =>
    JSON.parse(cluster.kubectl(["-n", NS, "get", "svc", name, "-o", "json"])) as K8sObject & {
      spec: Record<string, unknown>;
      status?: Record<string, unknown>;
    };
  /** The TailnetIngress attachment as Metacontroller would send it once Ready. */
  const attachment = (svc: K8sObject) => ({
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetIngress",
    metadata: {
      name: svc.metadata.name,
      namespace: NS,
      uid: "uid-ing",
      generation: 1,
      ownerReferences: [{ apiVersion: "v1", kind: "Service", name: svc.metadata.name, uid: svc.metadata.uid }],
      annotations: { "metacontroller.k8s.io/decorator-controller": "tailnet-operator-service-loadbalancer" },
    },
    spec: {},
    status: {
      observedGeneration: 1,
      dnsName: "loki.ts.example.com",
      nodes: [{ name: "loki", addresses: ["fd7a:115c:a1e0::9", "100.64.0.9"], online: true }],
      conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "" }],
    },
  });
  const sync = (svc: K8sObject, attached: boolean) =>
    post("/hooks/service-loadbalancer/sync", {
      controller: { metadata: { name: "tailnet-operator-service-loadbalancer" } },
      object: svc,
      attachments: { [ING]: attached ? { [`${NS}/${svc.metadata.name}`]: attachment(svc) } : {} },
      related: {
        "Tailnet.tailnet.internal/v1alpha1": {
          home: {
            apiVersion: "tailnet.internal/v1alpha1",
            kind: "Tailnet",
            metadata: { name: "home", uid: "uid-home", creationTimestamp: "2026-10-01T00:00:00Z" },
            spec: { dns: { baseDomain: "ts.example.com" } },
          },
        },
        [ING]: {},
        "Service.v1": {},
      },
      finalizing: false,
    });
  /** Metacontroller's UpdateStatus, as the restricted ServiceAccount. */
  const writeStatus = (svc: K8sObject, status: unknown) =>
    cluster.tryKubectl(["replace", "--subresource=status", `--as=${MC}`, "-f", "-"], {
      input: JSON.stringify({ ...svc, status }),
    });

  before(async () => {
    cluster = await startCluster();
    ensureNamespace(cluster, NS);
    applyClean(
      cluster,
      cluster
        .kubectl(["kustomize", "manifests/base"])
        .split(/^---$/m)
        .filter((d) => /tailnet-operator-metacontroller-services/.test(d))
        .join("---"),
    );
    cluster.kubectl([
      "create",
      "clusterrolebinding",
      "restricted-metacontroller",
      "--clusterrole=tailnet-operator-metacontroller-services",
      `--serviceaccount=metacontroller:restricted`,
    ]);
    ({ post, close } = await suiteHooks());
    applyClean(cluster, [
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "loki", namespace: NS },
        spec: {
          type: "LoadBalancer",
          loadBalancerClass: `${T}/tailnet`,
          selector: { app: "loki" },
          ports: [{ name: "http", port: 3100 }],
        },
      } as unknown as Manifest,
    ]);
  });
  after(async () => {
    await close();
    await cluster?.stop();
  });

  it("the restricted ServiceAccount may update services/status and nothing else on it; the operator's may not", () => {
    const can = (as: string, ...what: string[]) =>
      cluster.tryKubectl(["auth", "can-i", ...what, "-n", NS, `--as=${as}`]).stdout.trim();
    assert.equal(can(MC, "update", "services", "--subresource=status"), "yes");
    assert.equal(can(MC, "patch", "services", "--subresource=status"), "no");
    assert.equal(can(MC, "delete", "services"), "no");
    const op = "system:serviceaccount:tailnet-system:tailnet-operator";
    assert.equal(can(op, "update", "services", "--subresource=status"), "no");
  });

  it("Ready: the answer's status, written through /status, is EXTERNAL-IP in kubectl get svc", async () => {
    assert.equal(get("loki").spec.loadBalancerClass, `${T}/tailnet`);
    const pending = await sync(get("loki"), false);
    assert.deepEqual(pending.status, { loadBalancer: {} }, "nothing before Ready, in the server's own shape");
    const answer = await sync(get("loki"), true);
    const w = writeStatus(get("loki"), answer.status);
    assert.equal(w.status, 0, w.stderr);
    const table = cluster.kubectl(["-n", NS, "get", "svc", "loki"]);
    console.log(`# kubectl get svc\n${table.replace(/^/gm, "#   ")}`);
    // the server's table (kubectl ≥ 1.x asks for it) lists every entry, IPv4, IPv6, then the name
    assert.match(
      table,
      /^loki\s+LoadBalancer\s+\S+\s+100\.64\.0\.9,fd7a:115c:a1e0::9,loki\.ts\.example\.com\s+3100:\d+\/TCP/m,
    );
    const jsonpath = cluster.kubectl(["-n", NS, "get", "svc", "loki", "-o", "jsonpath={.status.loadBalancer.ingress}"]);
    console.log(`# status.loadBalancer.ingress as stored: ${jsonpath}`);
  });

  it("the next sync answers the status as the server stored it (ipMode defaulted): no write on every resync", async () => {
    const stored = get("loki");
    const answer = await sync(stored, true);
    assert.deepEqual(answer.status, stored.status);
  });

  it("the class is immutable; changing the type drops it, and the next sync withdraws the addresses", async () => {
    const change = cluster.tryKubectl([
      "-n",
      NS,
      "patch",
      "svc",
      "loki",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { loadBalancerClass: "example.com/other" } }),
    ]);
    assert.notEqual(change.status, 0);
    assert.match(change.stderr, /loadBalancerClass/);
    cluster.kubectl([
      "-n",
      NS,
      "patch",
      "svc",
      "loki",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { type: "ClusterIP" } }),
    ]);
    let svc = get("loki");
    assert.equal(svc.spec.loadBalancerClass, undefined, "the API server dropped the class with the type");
    const stale = (svc.status as { loadBalancer?: { ingress?: unknown[] } } | undefined)?.loadBalancer?.ingress ?? [];
    console.log(`# after type: ClusterIP the server kept ${stale.length} status.loadBalancer entries`);
    // what the decorator wrote while it was ours, as the sync before the change left it
    const labelled = { ...svc, metadata: { ...svc.metadata, labels: { [`${T}/expose-state`]: "Ready" } } };
    const answer = await sync(labelled, false);
    assert.deepEqual(answer.labels, { [`${T}/expose-state`]: null });
    if (stale.length) {
      const w = writeStatus(svc, answer.status);
      assert.equal(w.status, 0, w.stderr);
    } else {
      assert.equal(answer.status, undefined, "nothing to withdraw: no status write");
    }
    svc = get("loki");
    assert.deepEqual(svc.status?.loadBalancer ?? {}, {});
    assert.match(cluster.kubectl(["-n", NS, "get", "svc", "loki"]), /^loki\s+ClusterIP\s+\S+\s+<none>\s/m);
  });
});
