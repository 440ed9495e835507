/**
 * `render` previews a TailnetIngress naming another namespace's Service as the cluster would serve it: Gateway API
 * objects in the input mean the Gateway API is installed (the gateway-api component's ReferenceGrant child type),
 * so a ReferenceGrant in the input decides; without any, the backend is GatewayAPIMissing (ingress/permitted.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { render } from "../../src/render/main.js";

const NOW = new Date("2026-11-29T10:00:00Z");
const tailnet: K8sObject = {
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "Tailnet",
  metadata: { name: "home" },
  spec: {
    headscale: {
      url: "https://headscale.example.com",
      apiKeySecretRef: { namespace: "tailnet-system", name: "headscale-api-key" },
    },
  },
};
const ingress: K8sObject = {
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetIngress",
  metadata: { name: "pg", namespace: "shop" },
  spec: {
    tailnetRef: { name: "home" },
    hostname: "pg",
    mode: "tcp",
    exposes: [{ name: "postgres", port: 5432, backend: { service: "postgres", namespace: "db", port: 5432 } }],
  },
};
const grant = (fromNamespace: string): K8sObject => ({
  apiVersion: "gateway.networking.k8s.io/v1beta1",
  kind: "ReferenceGrant",
  metadata: { name: "allow-shop", namespace: "db" },
  spec: {
    from: [{ group: "tailnet.internal", kind: "TailnetIngress", namespace: fromNamespace }],
    to: [{ group: "", kind: "Service", name: "postgres" }],
  },
});

async function preview(extra: K8sObject[]) {
  const r = await render({ objects: [tailnet, ingress, ...extra], now: NOW });
  const pg = r.objects.find((o) => o.kind === "TailnetIngress" && o.name === "pg");
  assert.ok(pg);
  const conditions = (pg.status.conditions ?? []) as { type: string; reason: string }[];
  const cm = pg.children.find((c) => c.kind === "ConfigMap" && c.metadata.name === "pg-agent");
  const config = cm ? JSON.parse((cm.data as Record<string, string>)["config.json"]) : undefined;
  return {
    backends: conditions.find((c) => c.type === "BackendsReachable")?.reason,
    hosts: (config?.exposes ?? []).map((e: { backend: { host: string } }) => e.backend.host) as string[],
  };
}

describe("render: a TailnetIngress backend in another namespace", () => {
  it("no Gateway API object in the input: GatewayAPIMissing, not served", async () => {
    assert.deepEqual(await preview([]), { backends: "GatewayAPIMissing", hosts: [] });
  });

  it("a grant for another namespace's ingresses: BackendNotPermitted, not served", async () => {
    assert.deepEqual(await preview([grant("elsewhere")]), { backends: "BackendNotPermitted", hosts: [] });
  });

  it("the grant from the ingress's namespace: served", async () => {
    const r = await preview([grant("shop")]);
    assert.deepEqual(r.hosts, ["postgres.db.svc.cluster.local"]);
    assert.notEqual(r.backends, "BackendNotPermitted");
  });
});
