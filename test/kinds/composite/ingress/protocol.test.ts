// A backend's `protocol` (http1, h2c) on TailnetIngress exposes and paths: read from the spec, refused outside
// mode http with a message naming the field, and carried into the agent config only where the user set it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { ingressAgentConfig } from "../../../../src/kinds/composite/ingress/children.js";
import { ingressSpecProblem, readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";

const ti = (mode: string, expose: Record<string, unknown>): K8sObject => ({
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetIngress",
  metadata: { name: "shop", namespace: "apps" },
  spec: { tailnetRef: { name: "home" }, hostname: "shop", mode, exposes: [{ name: "e", ...expose }] },
});

const NAMES = [{ dnsName: "shop.ts.example.com", dnsAliases: [] }];

describe("backend protocol", () => {
  it("h2c on the default backend and a path reaches the agent config; unset stays unset", () => {
    const parent = ti("http", {
      backend: { service: "web", port: 80 },
      paths: [
        {
          path: "/routeguide.RouteGuide",
          pathType: "Prefix",
          backend: { service: "grpc", port: 50051, protocol: "h2c" },
        },
        { path: "/v1", pathType: "Prefix", backend: { service: "api", port: 8080, protocol: "http1" } },
      ],
      tls: { secretName: "shop-tls" },
    });
    assert.equal(ingressSpecProblem(parent), undefined);
    const config = validateAgentConfig(ingressAgentConfig(parent, readIngressSpec(parent), NAMES));
    const [expose] = config.exposes;
    assert.deepEqual(expose.backend, { host: "web.apps.svc.cluster.local", port: 80 });
    assert.deepEqual(
      expose.paths?.map((p) => p.backend),
      [
        { host: "grpc.apps.svc.cluster.local", port: 50051, protocol: "h2c" },
        { host: "api.apps.svc.cluster.local", port: 8080, protocol: "http1" },
      ],
    );
  });

  it("a protocol in mode tcp is InvalidSpec naming the field", () => {
    const parent = ti("tcp", { port: 5432, backend: { service: "db", port: 5432, protocol: "h2c" } });
    assert.equal(
      ingressSpecProblem(parent),
      "spec.exposes[0].backend.protocol: only in mode http (mode tcp passes bytes as they come)",
    );
  });

  it("a value the schema does not know is not read (the CRD refuses it first)", () => {
    const parent = ti("http", { backend: { service: "web", port: 80, protocol: "h2" }, tls: { secretName: "t" } });
    assert.equal(readIngressSpec(parent).exposes[0].backend.protocol, undefined);
  });
});
