// One identity per replica (src/kinds/shared/replica.ts): names, the per-replica RBAC and state Secret, the
// StatefulSet wrapper and the creation order.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import {
  identityObserved,
  MAX_STATEFULSET_NAME,
  REPLICA_LABEL,
  replicaIdentityChildren,
  replicaIndexOf,
  replicaName,
  replicaRole,
  replicaRoleBinding,
  replicaServiceAccount,
  replicaStatefulSet,
  STATE_LABEL,
  stateSecret,
  stateSecretName,
  wantedLabel,
} from "../../../src/kinds/shared/replica.js";

const parent = {
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetEgress",
  metadata: { name: "db", namespace: "shop", uid: "u-1" },
} as K8sObject;
const ref = (index = 0) => ({
  parent,
  index,
  name: replicaName("db", "agent", index),
  labels: { "app.kubernetes.io/name": "tailnet-agent" },
});

describe("replicaName", () => {
  it("<parent>-agent-<i> when it fits", () => {
    assert.equal(replicaName("db", "agent", 0), "db-agent-0");
    assert.equal(replicaName("db", "gateway", 12), "db-gateway-12");
  });

  it("at most 52 characters, with a hash of the whole name when cut: two long names never collide", () => {
    const a = replicaName(`${"x".repeat(60)}-a`, "agent", 3);
    const b = replicaName(`${"x".repeat(60)}-b`, "agent", 3);
    assert.equal(a.length, MAX_STATEFULSET_NAME);
    assert.equal(b.length, MAX_STATEFULSET_NAME);
    assert.notEqual(a, b);
    assert.match(a, /^x+-[0-9a-f]{6}-agent-3$/);
    // a name that just fits is kept as is; one character more is hashed
    const fits = "y".repeat(MAX_STATEFULSET_NAME - "-agent-0".length);
    assert.equal(replicaName(fits, "agent", 0), `${fits}-agent-0`);
    assert.match(replicaName(`${fits}y`, "agent", 0), /^y+-[0-9a-f]{6}-agent-0$/);
  });

  it("no dash or dot left before the hash", () => {
    const name = `${"a".repeat(35)}.-.${"b".repeat(20)}`;
    const r = replicaName(name, "agent", 1);
    assert.ok(r.length <= MAX_STATEFULSET_NAME);
    assert.doesNotMatch(r, /[-.]-[0-9a-f]{6}-agent-1$/);
  });

  it("the state Secret is <replica>-state", () => {
    assert.equal(stateSecretName("db-agent-0"), "db-agent-0-state");
  });
});

describe("wantedLabel", () => {
  it("replica 0 keeps the host name, replica i ≥ 1 is <host>-r<i> (never Headscale's -<i> bump)", () => {
    assert.equal(wantedLabel("shop-db", 0), "shop-db");
    assert.equal(wantedLabel("shop-db", 1), "shop-db-r1");
    assert.equal(wantedLabel("Shop_DB", 2), "shop-db-r2");
  });

  it("a 63-character host name leaves room for the suffix", () => {
    const host = `${"h".repeat(61)}-x`;
    assert.equal(wantedLabel(host, 0), host);
    assert.equal(wantedLabel(host, 15), `${"h".repeat(59)}-r15`);
    assert.ok(wantedLabel(host, 15).length <= 63);
  });
});

describe("builders", () => {
  it("ServiceAccount: the replica's own, no token automounted", () => {
    const sa = replicaServiceAccount(ref(1));
    assert.equal(sa.metadata.name, "db-agent-1");
    assert.equal(sa.metadata.namespace, "shop");
    assert.equal(sa.automountServiceAccountToken, false);
    assert.equal(sa.metadata.labels?.[REPLICA_LABEL], "1");
    assert.equal(sa.metadata.labels?.["tailnet.internal/owner-uid"], "u-1");
  });

  it("Role: get, update and patch on its own state Secret only — no create, list, watch, delete or events", () => {
    assert.deepEqual(replicaRole(ref(1)).rules, [
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: ["db-agent-1-state"],
        verbs: ["get", "update", "patch"],
      },
    ]);
  });

  it("RoleBinding: its Role to its ServiceAccount", () => {
    const rb = replicaRoleBinding(ref(2));
    assert.deepEqual(rb.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "db-agent-2" });
    assert.deepEqual(rb.subjects, [{ kind: "ServiceAccount", name: "db-agent-2", namespace: "shop" }]);
  });

  it("state Secret: labelled, Opaque, and no data or stringData at all", () => {
    const s = stateSecret(ref(0));
    assert.equal(s.metadata.name, "db-agent-0-state");
    assert.equal(s.type, "Opaque");
    assert.equal(s.metadata.labels?.[STATE_LABEL], "true");
    assert.equal(s.metadata.labels?.[REPLICA_LABEL], "0");
    assert.equal("data" in s, false);
    assert.equal("stringData" in s, false);
    assert.equal(s.metadata.annotations, undefined, "no annotation that could change and cause a PUT");
  });

  it("StatefulSet: one pod, the replica's labels on selector and template, serviceName fixed", () => {
    const sts = replicaStatefulSet(ref(1), {
      labels: { app: "a" },
      selector: { sel: "s" },
      replicas: 1,
      template: { metadata: { labels: { sel: "s" }, annotations: { h: "1" } }, spec: { containers: [] } },
    });
    const spec = sts.spec as {
      replicas: number;
      serviceName: string;
      podManagementPolicy: string;
      selector: unknown;
      template: { metadata: unknown };
    };
    assert.equal(sts.kind, "StatefulSet");
    assert.equal(sts.metadata.name, "db-agent-1");
    assert.equal(spec.replicas, 1);
    assert.equal(spec.serviceName, "db-agent-1");
    assert.equal(spec.podManagementPolicy, "Parallel");
    assert.deepEqual(spec.selector, { matchLabels: { sel: "s", [REPLICA_LABEL]: "1" } });
    assert.deepEqual(spec.template.metadata, { labels: { sel: "s", [REPLICA_LABEL]: "1" }, annotations: { h: "1" } });
    assert.equal(sts.metadata.labels?.[REPLICA_LABEL], "1");
  });

  it("replicaIndexOf reads the label, rejects anything else", () => {
    const o = (v?: string) =>
      ({ kind: "Pod", metadata: { name: "p", labels: v ? { [REPLICA_LABEL]: v } : {} } }) as K8sObject;
    assert.equal(replicaIndexOf(o("3")), 3);
    assert.equal(replicaIndexOf(o("03")), undefined);
    assert.equal(replicaIndexOf(o("-1")), undefined);
    assert.equal(replicaIndexOf(o()), undefined);
  });
});

describe("creation order", () => {
  it("the StatefulSet waits until SA, Role, RoleBinding and state Secret are all observed", () => {
    const children = replicaIdentityChildren(ref(0));
    assert.deepEqual(
      children.map((c) => c.kind),
      ["ServiceAccount", "Role", "RoleBinding", "Secret"],
    );
    assert.equal(identityObserved(ref(0), []), false);
    for (let i = 0; i < children.length; i++) {
      const without = children.filter((_, j) => j !== i);
      assert.equal(identityObserved(ref(0), without), false, `missing ${children[i]?.kind}`);
    }
    assert.equal(identityObserved(ref(0), children), true);
    const deleting = children.map((c) =>
      c.kind === "RoleBinding" ? { ...c, metadata: { ...c.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } } : c,
    );
    assert.equal(identityObserved(ref(0), deleting), false, "a RoleBinding on its way out does not count");
  });
});
