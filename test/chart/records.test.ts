/**
 * The chart's RBAC for the records sidecar (values `records`, docs/OPERATIONS.md "Headscale outside the
 * operator's namespace or cluster"): nothing by default; a Role with `get` on each listed Tailnet's records
 * ConfigMap by name and nothing else, bound to the listed readers and the optional ServiceAccount.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { find, renderChart } from "./helm.js";
import { SCENARIOS } from "./scenarios.js";

describe("chart: records readers", () => {
  it("renders nothing for the sidecar by default, nor with tailnets but no reader", () => {
    const names = (o: { kind: string; metadata: { name: string } }) => `${o.kind}/${o.metadata.name}`;
    for (const values of [{}, { records: { tailnets: ["home"] } }]) {
      assert.deepEqual(
        renderChart(values)
          .map(names)
          .filter((n) => /records/.test(n)),
        [],
      );
    }
  });

  it("a Role with get on the named ConfigMaps only, bound to every reader", () => {
    const objects = renderChart({
      records: { ...(SCENARIOS["records readers"].records as object), tailnets: ["home", "lab"] },
    });
    const role = find(objects, "Role", "tailnet-operator-records-reader");
    assert.equal(role.metadata.namespace, "tailnet-system");
    assert.deepEqual(role.rules, [
      {
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: ["tailnet-home-dns-records", "tailnet-lab-dns-records"],
        verbs: ["get"],
      },
    ]);
    const binding = find(objects, "RoleBinding", "tailnet-operator-records-reader");
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "tailnet-records-reader", namespace: "tailnet-system" },
      { kind: "ServiceAccount", name: "headscale", namespace: "headscale" },
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "headscale-records" },
    ]);
    const secret = find(objects, "Secret", "tailnet-records-reader-token");
    assert.equal(secret.type, "kubernetes.io/service-account-token");
    assert.equal(secret.metadata.annotations?.["kubernetes.io/service-account.name"], "tailnet-records-reader");
    assert.equal(find(objects, "ServiceAccount", "tailnet-records-reader").automountServiceAccountToken, false);
  });

  it("refuses a ServiceAccount reader without its namespace and a Tailnet name that is not one", () => {
    assert.throws(
      () => renderChart({ records: { tailnets: ["home"], readers: [{ kind: "ServiceAccount", name: "headscale" }] } }),
      /records\/readers\/0': missing property 'namespace'/,
    );
    assert.throws(() => renderChart({ records: { tailnets: ["Home"], readers: [] } }), /records\/tailnets\/0/);
  });
});
