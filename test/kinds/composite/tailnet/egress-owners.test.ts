/**
 * Issue 31 item 2 at the Tailnet: an egress target that is another object's agent node (proven by the
 * pre-auth key the operator minted for that object, status.preAuthKeyIds) renders no grant unless that
 * object admits the egress's tag. Without the rule, `allowedEgressTargets: [100.64.0.0/10]` let a tenant's
 * egress reach the admins' kube-api ingress, whose allowFrom does not name the tenant.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HsNode, HsPreAuthKey } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { composeTailnetPolicy } from "../../../../src/kinds/composite/tailnet/compose.js";
import { readInputs } from "../../../../src/kinds/composite/tailnet/inputs.js";
import { toMaps } from "../../../fixtures/hooks.js";
import { baseConfigMap, egress, gateway, hsNode, ingress, tailnet, tailnetSpec } from "./fixtures.js";

const key = (id: string, tag: string): HsPreAuthKey => ({
  user: null,
  id,
  key: `hskey-auth-${id}-***`,
  reusable: true,
  ephemeral: true,
  used: true,
  expiration: "2026-12-29T00:00:00Z",
  createdAt: "2026-11-02T00:00:00Z",
  aclTags: [tag],
});
const agentNode = (id: string, givenName: string, tag: string, keyId: string): HsNode =>
  hsNode({ id, givenName, tags: [tag], preAuthKey: key(keyId, tag) });
const withStatus = (o: K8sObject, status: Record<string, unknown>): K8sObject => ({ ...o, status });
const withTarget = (o: K8sObject, host: string): K8sObject => ({
  ...o,
  spec: { ...(o.spec as object), targets: [{ name: "api", host, ports: [{ port: 443 }] }] },
});

// the admins' kube-api ingress: allowFrom names only group:admins
const kubeApi = withStatus(ingress("kube-api", "tailnet-system", { allowFrom: ["group:eng"] }), {
  preAuthKeyIds: ["7"],
});
const kubeApiNode = agentNode("40", "kube-api", "tag:k8s-tailnet--system-kube-api", "7");
const tenant = (host: string) => withTarget(egress("steal", "tenant"), host);

type Grant = { src: string[]; dst: string[]; ip: string[] };
function grantsFrom(objects: K8sObject[], nodes: HsNode[], src: string): Grant[] {
  const render = composeTailnetPolicy(readInputs(tailnet(tailnetSpec()), toMaps([baseConfigMap(), ...objects])), nodes);
  assert.ok(render.ok, JSON.stringify(render));
  const grants = (render.candidate.policy as { grants?: Grant[] }).grants ?? [];
  return grants.filter((g) => g.src.includes(src));
}

const TENANT_TAG = "tag:k8s-tenant-steal";

describe("Tailnet: an egress target that is another object's agent node (issue 31 item 2)", () => {
  it("a tenant egress naming the kube-api ingress's node gets no grant", () => {
    assert.deepEqual(grantsFrom([kubeApi, tenant("kube-api")], [kubeApiNode], TENANT_TAG), []);
  });

  it("by its MagicDNS name, its IPv4, its IPv6, or a CIDR holding it: no grant", () => {
    for (const host of ["kube-api.ts.example.com", "100.64.0.40", "fd7a:115c:a1e0::40", "100.64.0.0/24"]) {
      assert.deepEqual(grantsFrom([kubeApi, tenant(host)], [kubeApiNode], TENANT_TAG), [], host);
    }
  });

  it("an ingress whose allowFrom names the egress's tag admits it: the grant is rendered", () => {
    const open = withStatus(ingress("kube-api", "tailnet-system", { allowFrom: ["group:eng", TENANT_TAG] }), {
      preAuthKeyIds: ["7"],
    });
    assert.deepEqual(grantsFrom([open, tenant("kube-api")], [kubeApiNode], TENANT_TAG), [
      { dst: ["100.64.0.40"], ip: ["tcp:443"], src: [TENANT_TAG] },
    ]);
  });

  it("another egress's or a gateway's agent node gets no grant", () => {
    const other = withStatus(egress("db", "shop"), { preAuthKeyIds: ["8"] });
    const otherNode = agentNode("41", "shop-db", "tag:k8s-shop-db", "8");
    const gw = withStatus(gateway(), { preAuthKeyIds: ["9"] });
    const gwNode = agentNode("42", "cluster-gw", "tag:k8s-tailnet--system-cluster-gw", "9");
    const nodes = [otherNode, gwNode];
    assert.deepEqual(grantsFrom([other, tenant("shop-db")], nodes, TENANT_TAG), []);
    assert.deepEqual(grantsFrom([gw, tenant("cluster-gw")], nodes, TENANT_TAG), []);
  });

  it("a node carrying the ingress's tag that its keys did not register is no agent of it: the allowlist decides", () => {
    const admins = hsNode({ id: "43", givenName: "vault", tags: ["tag:k8s-tailnet--system-kube-api"] });
    assert.deepEqual(grantsFrom([kubeApi, tenant("vault")], [kubeApiNode, admins], TENANT_TAG), [
      { dst: ["100.64.0.43"], ip: ["tcp:443"], src: [TENANT_TAG] },
    ]);
  });

  it("an egress's other targets keep their grants", () => {
    const two = {
      ...tenant("kube-api"),
      spec: {
        tailnetRef: { name: "home" },
        targets: [
          { name: "api", host: "kube-api", ports: [{ port: 443 }] },
          { name: "db", host: "100.64.0.5", ports: [{ port: 5432 }] },
        ],
      },
    };
    assert.deepEqual(grantsFrom([kubeApi, two], [kubeApiNode], TENANT_TAG), [
      { dst: ["100.64.0.5"], ip: ["tcp:5432"], src: [TENANT_TAG] },
    ]);
  });
});
