/**
 * Issue 31 item 2 at the egress: a target that is another object's agent node (registered with a key that
 * object minted, status.preAuthKeyIds) and whose owner does not admit the egress's tag is TargetNotAllowed —
 * the same rule (node-owners.ts) by which the Tailnet renders no grant for it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideEgress } from "../../../../src/kinds/composite/egress/decide.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { hsNode, ok } from "../../shared/fixtures.js";
import { egressParent, input, NODES, TAG, TARGETS, tailnetRead } from "./fixtures.js";

const kubeApi = (allowFrom: string[], keyIds = ["40"]) =>
  parentObject(
    "TailnetIngress",
    "kube-api",
    { tailnetRef: { name: "home" }, hostname: "kube-api", allowFrom, exposes: [] },
    { namespace: "tailnet-system", status: { preAuthKeyIds: keyIds } },
  );
const KUBE_TAG = "tag:k8s-tailnet--system-kube-api";
const kubeNode: HsNode = {
  ...hsNode({ id: "12", name: "kube-api", tags: [KUBE_TAG] }),
  preAuthKey: {
    user: null,
    id: "40",
    key: "hskey-auth-40-***",
    reusable: true,
    ephemeral: true,
    used: true,
    expiration: null,
    createdAt: null,
    aclTags: [KUBE_TAG],
  },
};
const targeting = (host: string) =>
  egressParent({ targets: [{ name: "api", host, ports: [{ port: 443 }] }, ...TARGETS] });

function decided(parent: K8sObject, related: K8sObject[]) {
  const nodes = ok([...NODES.map(hsNode), kubeNode]);
  return decideEgress(input({ parent, related, tailnet: tailnetRead({ nodes }) }));
}
const cond = (d: ReturnType<typeof decideEgress>, type: string) => {
  const c = d.conditions.find((x) => x.type === type);
  return c && `${c.status}/${c.reason}: ${c.message}`;
};
const targetReasons = (d: ReturnType<typeof decideEgress>) =>
  (d.fields.targets ?? []).map((t) => `${t.name}=${t.state}/${t.reason}`);

const REFUSED = `api: no grant: Headscale node 12 (kube-api) is an agent of TailnetIngress tailnet-system/kube-api, whose spec.allowFrom does not name ${TAG}`;

describe("egress: a target that is another object's agent node (issue 31 item 2)", () => {
  it("the kube-api ingress's node, not admitting the egress's tag: TargetNotAllowed on the target, RoutesGranted and Ready", () => {
    const d = decided(targeting("kube-api"), [kubeApi(["group:admins"])]);
    assert.deepEqual(targetReasons(d), ["api=NotReady/TargetNotAllowed", "postgres=Ready/", "printer=Ready/"]);
    assert.equal(cond(d, "RoutesGranted"), `False/TargetNotAllowed: ${REFUSED}`);
    assert.equal(cond(d, "Ready"), `False/TargetNotAllowed: ${REFUSED}`);
    // the refused target is RoutesGranted's to report, not a dial the agent is waiting for
    assert.equal(cond(d, "TargetsReachable"), "True/Reachable: 2 targets answer the agent's probe");
  });

  it("by its tailnet IP or a CIDR holding it, too", () => {
    for (const host of ["100.64.0.12", "100.64.0.0/28"]) {
      const d = decided(targeting(host), [kubeApi(["group:admins"])]);
      assert.equal(targetReasons(d)[0], "api=NotReady/TargetNotAllowed", host);
    }
  });

  it("an ingress whose allowFrom names the egress's tag admits it", () => {
    const d = decided(targeting("kube-api"), [kubeApi(["group:admins", TAG])]);
    assert.notEqual(targetReasons(d)[0], "api=NotReady/TargetNotAllowed");
    assert.ok(!cond(d, "RoutesGranted")?.includes("TargetNotAllowed"));
  });

  it("a node the ingress's keys did not register is not its agent (a tag or name proves nothing)", () => {
    const d = decided(targeting("kube-api"), [kubeApi(["group:admins"], ["41"])]);
    assert.notEqual(targetReasons(d)[0], "api=NotReady/TargetNotAllowed");
  });

  it("an ingress of another Tailnet does not own the node", () => {
    const other = kubeApi(["group:admins"]);
    (other.spec as { tailnetRef: { name: string } }).tailnetRef.name = "other";
    const d = decided(targeting("kube-api"), [other]);
    assert.notEqual(targetReasons(d)[0], "api=NotReady/TargetNotAllowed");
  });
});
