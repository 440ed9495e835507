/**
 * An expose's tailnet port may be left out in mode http (443): the ingress kind and the Tailnet's
 * policy read it through one rule; in mode tcp it stays required (InvalidSpec naming the field).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { ingressSpecProblem, readIngressSpec } from "../../../src/kinds/composite/ingress/spec.js";
import { exposePort } from "../../../src/kinds/shared/expose-port.js";

const ti = (mode: string, expose: Record<string, unknown>): K8sObject => ({
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetIngress",
  metadata: { name: "web", namespace: "a" },
  spec: {
    tailnetRef: { name: "home" },
    hostname: "web",
    mode,
    exposes: [{ name: "e", backend: { service: "web", port: 80 }, ...expose }],
  },
});

describe("expose port", () => {
  it("http without port is 443; a given port is kept; tcp without port is no port", () => {
    assert.equal(exposePort("http", undefined), 443);
    assert.equal(exposePort("http", 8443), 8443);
    assert.equal(exposePort("tcp", 5432), 5432);
    assert.ok(Number.isNaN(exposePort("tcp", undefined)));
  });
  it("the ingress kind reads 443 for an http expose without port, and refuses a tcp one without port", () => {
    const http = ti("http", { tls: { secretName: "t" } });
    assert.equal(readIngressSpec(http).exposes[0].port, 443);
    assert.equal(ingressSpecProblem(http), undefined);
    assert.equal(ingressSpecProblem(ti("tcp", {})), "spec.exposes[0].port: required in mode tcp");
  });
});

describe("the Tailnet's policy input", () => {
  it("grants port 443 for an http expose without port", async () => {
    const { collectInput } = await import("../../../src/kinds/composite/tailnet/compose.js");
    const inputs = {
      settings: {
        allowedIngressSources: ["group:eng"],
        reservedNetworks: [],
        allowedEgressTargets: [],
        tagPrefix: "tag:k8s-",
      },
      tagOwners: [],
      egresses: [],
      ingresses: [ti("http", { tls: { secretName: "t" } }), ti("tcp", { port: 5432 })],
      sites: [],
      gateways: [],
    } as unknown as Parameters<typeof collectInput>[0];
    assert.deepEqual(
      collectInput(inputs, []).ingresses.map((i) => i.ports),
      [[443], [5432]],
    );
  });
});
