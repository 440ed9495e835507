/**
 * The API server's refusals of updates to immutable fields, worded as kubernetes v1.35 words them:
 * pkg/apis/apps/validation/validation.go ValidateStatefulSetUpdate, pkg/apis/rbac/validation/validation.go
 * ValidateRoleBindingUpdate, pkg/apis/core/validation/validation.go ValidateSecretUpdate (field errors rendered
 * by apimachinery pkg/util/validation/field/errors.go).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { apiServerErrors } from "../../../src/emulator/metacontroller/apiserver.js";

const STS_FORBIDDEN =
  "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

const sts = (spec: Record<string, unknown>) => ({
  kind: "StatefulSet",
  spec: {
    replicas: 1,
    serviceName: "db-agent-0",
    podManagementPolicy: "Parallel",
    selector: { matchLabels: { app: "a", "tailnet.internal/replica": "0" } },
    updateStrategy: { type: "RollingUpdate" },
    template: {
      metadata: { labels: { app: "a", "tailnet.internal/replica": "0" } },
      spec: { containers: [{ name: "tailscale", image: "x:1" }] },
    },
    ...spec,
  },
});

describe("StatefulSet update", () => {
  const old = sts({});
  for (const [field, value] of [
    ["selector", { matchLabels: { app: "a" } }],
    ["serviceName", "other"],
    ["podManagementPolicy", "OrderedReady"],
    ["volumeClaimTemplates", [{ metadata: { name: "data" } }]],
  ] as const) {
    it(`refuses a changed ${field} with one Forbidden on spec`, () => {
      assert.deepEqual(apiServerErrors(sts({ [field]: value }), old), [STS_FORBIDDEN]);
    });
  }

  it("allows replicas, template, updateStrategy, minReadySeconds and revisionHistoryLimit to change", () => {
    const changed = sts({
      replicas: 0,
      template: {
        metadata: { labels: { app: "a", "tailnet.internal/replica": "0" } },
        spec: { containers: [{ name: "tailscale", image: "x:2" }] },
      },
      updateStrategy: { type: "OnDelete" },
      minReadySeconds: 5,
      revisionHistoryLimit: 3,
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Delete" },
    });
    assert.deepEqual(apiServerErrors(changed, old), []);
  });

  it("a create is never an immutability refusal", () => {
    assert.deepEqual(apiServerErrors(sts({ serviceName: "other" })), []);
  });
});

describe("StatefulSet selector (ValidateStatefulSetSpec), on create and update", () => {
  it("refuses a selector the template's labels do not match, the labels as Go marshals a map", () => {
    const bad = sts({ selector: { matchLabels: { app: "a", "tailnet.internal/replica": "1" } } });
    assert.deepEqual(apiServerErrors(bad), [
      'spec.template.metadata.labels: Invalid value: {"app":"a","tailnet.internal/replica":"0"}: `selector` does not match template `labels`',
    ]);
  });
  it("refuses a missing and an empty selector", () => {
    assert.deepEqual(apiServerErrors(sts({ selector: undefined })), ["spec.selector: Required value"]);
    assert.deepEqual(apiServerErrors(sts({ selector: {} })), [
      "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
    ]);
  });
});

describe("RoleBinding update", () => {
  const rb = (name: string) => ({
    kind: "RoleBinding",
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
    subjects: [{ kind: "ServiceAccount", name: "db-agent-0" }],
  });
  it("refuses a changed roleRef, showing the new one as the internal struct's JSON", () => {
    assert.deepEqual(apiServerErrors(rb("other"), rb("db-agent-0")), [
      'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: cannot change roleRef',
    ]);
  });
  it("allows the subjects to change", () => {
    assert.deepEqual(apiServerErrors({ ...rb("db-agent-0"), subjects: [] }, rb("db-agent-0")), []);
  });
});

describe("Secret update", () => {
  it("refuses a changed type; an unset type is Opaque (SetDefaults_Secret)", () => {
    assert.deepEqual(apiServerErrors({ kind: "Secret", type: "kubernetes.io/tls" }, { kind: "Secret" }), [
      'type: Invalid value: "kubernetes.io/tls": field is immutable',
    ]);
    assert.deepEqual(apiServerErrors({ kind: "Secret" }, { kind: "Secret", type: "Opaque" }), []);
  });
});
