/**
 * An Ingress of class tailnet whose backend Service port says `appProtocol: kubernetes.io/h2c` (Kubernetes'
 * standard application protocol for HTTP/2 without TLS): the TailnetIngress speaks h2c to that backend, by
 * number or by port name, on a path or as the default; other ports stay HTTP/1.1 (no field at all).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngressClass } from "../../../../src/kinds/decorators/ingress-class/decide.js";
import { planIngressClass } from "../../../../src/kinds/decorators/ingress-class/plan.js";
import { BASE, ingress, NS, observe, simpleSpec, svcBackend } from "./fixtures.js";

const service = (name: string, ports: { name?: string; port: number; appProtocol?: string }[]): K8sObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: NS },
  spec: { ports },
});

const exposesOf = (ing: K8sObject, services: K8sObject[]) =>
  (decideIngressClass(planIngressClass(observe(ing, { services }))).children[0].spec as { exposes: unknown }).exposes;

describe("Ingress class: appProtocol kubernetes.io/h2c", () => {
  it("a path to an h2c port (by name) gets protocol h2c; the HTTP/1.1 default backend gets no field", () => {
    const ing = ingress(
      simpleSpec({
        rules: [
          {
            host: `grafana.${BASE}`,
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: svcBackend("web", 80) },
                { path: "/routeguide.RouteGuide", pathType: "Prefix", backend: svcBackend("grpc", "grpc") },
              ],
            },
          },
        ],
      }),
    );
    const services = [
      service("web", [{ port: 80, appProtocol: "http" }]),
      service("grpc", [{ name: "grpc", port: 50051, appProtocol: "kubernetes.io/h2c" }]),
    ];
    assert.deepEqual(exposesOf(ing, services), [
      {
        name: "grafana",
        backend: { service: "web", port: 80 },
        paths: [
          {
            path: "/routeguide.RouteGuide",
            pathType: "Prefix",
            backend: { service: "grpc", port: 50051, protocol: "h2c" },
          },
        ],
        tls: { secretName: "grafana-tls" },
      },
    ]);
  });

  it("a default backend on an h2c port (by number) gets protocol h2c; another port of that Service does not", () => {
    const ing = (port: number) =>
      ingress(
        simpleSpec({
          rules: [
            {
              host: `grafana.${BASE}`,
              http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grpc", port) }] },
            },
          ],
        }),
      );
    const services = [
      service("grpc", [
        { name: "grpc", port: 50051, appProtocol: "kubernetes.io/h2c" },
        { name: "metrics", port: 9090 },
      ]),
    ];
    assert.deepEqual((exposesOf(ing(50051), services) as { backend: unknown }[])[0].backend, {
      service: "grpc",
      port: 50051,
      protocol: "h2c",
    });
    assert.deepEqual((exposesOf(ing(9090), services) as { backend: unknown }[])[0].backend, {
      service: "grpc",
      port: 9090,
    });
  });
});
