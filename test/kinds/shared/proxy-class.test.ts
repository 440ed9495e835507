import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { type AgentDeploymentInputs, agentStatefulSet } from "../../../src/kinds/shared/agent-pod.js";
import { agentReplica } from "../../../src/kinds/shared/agent-replicas.js";
import {
  applyProxyClass,
  lookupProxyClass,
  mebibytes,
  type ProxyClassSpec,
  proxyClassRules,
} from "../../../src/kinds/shared/proxy-class.js";
import { parentObject } from "../../fixtures/hooks.js";
import { validateChildren } from "../../helpers/validate.js";

const egress = (spec: Record<string, unknown> = {}) =>
  parentObject(
    "TailnetEgress",
    "db",
    { tailnetRef: { name: "home" }, targets: [], ...spec },
    { namespace: "shop", uid: "11111111-2222-4333-8444-555555555555" },
  );
const inputs: AgentDeploymentInputs = {
  tag: "tag:k8s-shop-db",
  loginServer: "https://hs.example.com",
  authKeySecret: "db-authkey-7",
  hostname: "shop-db",
  images: { agent: "op:1", tailscale: "ts:1", coredns: "dns:1" },
  listenPorts: [10000],
  configHash: "0123456789abcdef",
  noLogsNoSupport: true,
};
const proxyClass = (name: string, spec: ProxyClassSpec): K8sObject => ({
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetProxyClass",
  metadata: { name },
  spec: spec as Record<string, unknown>,
});
const related = (...objs: K8sObject[]) => ({
  "TailnetProxyClass.tailnet.internal/v1alpha1": Object.fromEntries(objs.map((o) => [o.metadata.name, o])),
});
type Pod = {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: Record<string, unknown> & {
    containers: { name: string; image: string; resources: unknown; env?: { name: string; value: string }[] }[];
  };
};
const podOf = (d: K8sObject) => (d.spec as { template: Pod }).template;

describe("TailnetProxyClass lookup", () => {
  it("asks for the named class only", () => {
    assert.deepEqual(proxyClassRules(egress()), []);
    assert.deepEqual(proxyClassRules(egress({ proxyClassName: "big" })), [
      { apiVersion: "tailnet.internal/v1alpha1", resource: "tailnetproxyclasses", names: ["big"] },
    ]);
  });

  const rows: { name: string; spec: Record<string, unknown>; related: K8sObject[]; expect: string }[] = [
    { name: "no class named", spec: {}, related: [proxyClass("big", {})], expect: "none" },
    { name: "named and present", spec: { proxyClassName: "big" }, related: [proxyClass("big", {})], expect: "found" },
    {
      name: "named and absent",
      spec: { proxyClassName: "big" },
      related: [proxyClass("small", {})],
      expect: "missing",
    },
    { name: "nothing related", spec: { proxyClassName: "big" }, related: [], expect: "missing" },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(lookupProxyClass(egress(row.spec), related(...row.related)).kind, row.expect);
    });
  }
});

describe("applyProxyClass", () => {
  const base = agentStatefulSet(egress(), inputs, agentReplica(egress(), 0));

  it("an empty class changes nothing", () => {
    assert.deepEqual(applyProxyClass(base, {}), base);
  });

  it("folds resources, scheduling, images, extra labels and annotations into the pod template", () => {
    const spec: ProxyClassSpec = {
      resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "1Gi" } },
      tailscaleResources: { requests: { cpu: "50m" } },
      nodeSelector: { "kubernetes.io/os": "linux" },
      tolerations: [{ key: "edge", operator: "Exists", effect: "NoSchedule" }],
      affinity: { nodeAffinity: {} },
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "DoNotSchedule" },
      ],
      priorityClassName: "tailnet-critical",
      podLabels: { team: "net", "tailnet.internal/owner-uid": "evil" },
      podAnnotations: { "example.com/x": "1", "tailnet.internal/config-hash": "evil" },
      images: { agent: "mirror/op:1", tailscale: "mirror/ts:1" },
    };
    const out = applyProxyClass(base, spec);
    validateChildren([out]);
    const pod = podOf(out);
    const agent = pod.spec.containers.find((c) => c.name === "agent");
    const tailscale = pod.spec.containers.find((c) => c.name === "tailscale");
    assert.deepEqual(agent?.resources, spec.resources);
    assert.equal(agent?.image, "mirror/op:1");
    assert.equal(agent?.env?.find((e) => e.name === "NODE_OPTIONS")?.value, "--max-old-space-size=512");
    assert.deepEqual(tailscale?.resources, { requests: { cpu: "50m" } });
    assert.equal(tailscale?.image, "mirror/ts:1");
    assert.equal(pod.spec.priorityClassName, "tailnet-critical");
    assert.deepEqual(pod.spec.nodeSelector, { "kubernetes.io/os": "linux" });
    assert.equal((pod.spec.tolerations as unknown[]).length, 1);
    assert.equal(pod.metadata.labels.team, "net");
    // The operator's own labels and annotations win: the selector and the config hash stay ours.
    assert.equal(pod.metadata.labels["tailnet.internal/owner-uid"], "11111111-2222-4333-8444-555555555555");
    assert.equal(pod.metadata.annotations["tailnet.internal/config-hash"], "0123456789abcdef");
    assert.equal(pod.metadata.annotations["example.com/x"], "1");
    // The Deployment's selector is untouched.
    assert.deepEqual((out.spec as { selector: unknown }).selector, (base.spec as { selector: unknown }).selector);
  });

  it("a class edit changes the pod template (so the pods roll)", () => {
    const a = applyProxyClass(base, { resources: { limits: { memory: "512Mi" } } });
    const b = applyProxyClass(base, { resources: { limits: { memory: "768Mi" } } });
    assert.notDeepEqual(podOf(a), podOf(b));
  });

  it("reads memory quantities", () => {
    assert.equal(mebibytes("256Mi"), 256);
    assert.equal(mebibytes("1Gi"), 1024);
    assert.equal(mebibytes("1048576"), 1);
    assert.equal(mebibytes("bogus"), undefined);
  });
});
