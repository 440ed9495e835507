/**
 * Issue 32 on a real kube-apiserver: each replica's ServiceAccount may read and write its own state Secret and
 * nothing else — not another replica's state, not the object's auth key, not a list of Secrets, not a new Secret.
 * The children are the operator's own builders (src/kinds/shared/replica.ts); the answers are the real RBAC
 * authorizer's, asked with `kubectl auth can-i --as` and then with real requests made as the ServiceAccount.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { replicaIdentityChildren, replicaName, stateSecretName } from "../../../src/kinds/shared/replica.js";
import type { K8sObject as HelmObject } from "../../chart/helm.js";
import { apply, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";

const NS = "shop";
const parent: K8sObject = {
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetEgress",
  metadata: { name: "db", namespace: NS, uid: "0b6f6c1e-7d3a-4d55-9a59-8a1f6e0c2b11" },
};
const replicas = [0, 1].map((index) => {
  const name = replicaName(parent.metadata.name, "agent", index);
  return { index, name, state: stateSecretName(name), sa: `system:serviceaccount:${NS}:${name}` };
});
const [r0, r1] = replicas;

let cluster: Cluster;

/** `kubectl auth can-i` as a ServiceAccount: exit 0 is yes, 1 is no (anything else is an error). */
function canI(as: string, args: string[]): boolean {
  const r = cluster.tryKubectl(["auth", "can-i", ...args, "-n", NS, `--as=${as}`]);
  assert.ok(r.status === 0 || r.status === 1, `kubectl auth can-i ${args.join(" ")}: ${r.stderr}`);
  return r.status === 0;
}

describe("a replica's RBAC on a real API server", { timeout: 300_000 }, () => {
  before(async () => {
    cluster = await startCluster();
    ensureNamespace(cluster, NS, { "pod-security.kubernetes.io/enforce": "restricted" });
    const children = replicas.flatMap((r) =>
      replicaIdentityChildren({ parent, index: r.index, name: r.name, labels: { "app.kubernetes.io/name": "x" } }),
    );
    const authKey = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db-authkey", namespace: NS },
      type: "Opaque",
      stringData: { authkey: "hskey-auth-not-a-real-key" },
    };
    const r = apply(cluster, [...children, authKey] as HelmObject[]);
    assert.equal(r.status, 0, r.stderr);
  });
  after(async () => {
    await cluster?.stop();
  });

  it("each replica may get, update and patch its own state Secret", () => {
    for (const r of replicas) {
      for (const verb of ["get", "update", "patch"]) {
        assert.equal(canI(r.sa, [verb, `secret/${r.state}`]), true, `${r.name} ${verb} its own state`);
      }
    }
  });

  it("no replica may touch another replica's state, the auth key, or Secrets at large", () => {
    const refused: string[] = [];
    for (const [me, other] of [
      [r0, r1],
      [r1, r0],
    ]) {
      const asks = [
        ...["get", "update", "patch", "delete"].map((v) => [v, `secret/${other.state}`]),
        ...["get", "update", "patch"].map((v) => [v, "secret/db-authkey"]),
        ["delete", `secret/${me.state}`],
        ["list", "secrets"],
        ["watch", "secrets"],
        ["create", "secrets"],
        ["get", "pods"],
        ["create", "events"],
        ["update", `role/${me.name}`],
        ["create", "serviceaccounts/token"],
      ];
      for (const ask of asks) if (canI(me.sa, ask)) refused.push(`${me.name} may ${ask.join(" ")}`);
    }
    assert.deepEqual(refused, []);
  });

  it("real requests as the ServiceAccount agree: its own state is writable, its neighbour's is forbidden", () => {
    const patch = ["--type=merge", "-p", JSON.stringify({ stringData: { device_id: "7" } })];
    const own = cluster.tryKubectl(["-n", NS, "patch", "secret", r0.state, ...patch, `--as=${r0.sa}`]);
    assert.equal(own.status, 0, own.stderr);
    const stored = cluster.kubectl(["-n", NS, "get", "secret", r0.state, "-o", "jsonpath={.data.device_id}"]);
    assert.equal(Buffer.from(stored, "base64").toString(), "7");
    const other = cluster.tryKubectl(["-n", NS, "get", "secret", r1.state, `--as=${r0.sa}`]);
    assert.equal(other.status, 1);
    assert.match(
      other.stderr,
      new RegExp(
        `secrets "${r1.state}" is forbidden: User "${r0.sa}" cannot get resource "secrets" in API group "" in the namespace "${NS}"`,
      ),
    );
    const key = cluster.tryKubectl(["-n", NS, "get", "secret", "db-authkey", `--as=${r0.sa}`]);
    assert.equal(key.status, 1);
    assert.match(key.stderr, /secrets "db-authkey" is forbidden/);
  });
});
