/**
 * The Gateway API CRDs of the standard channel at the pin (src/real-versions.json "gatewayApi"), read from the
 * published Go module sigs.k8s.io/gateway-api (config/crd/standard/) in the Go module cache: scripts/real-deps.sh
 * downloads it, goModuleDir finds it (and downloads it when a test runs first).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { goModuleDir } from "../../helpers/upstream.js";
import { REPO } from "../bins.js";
import { applyClean } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";
import { metacontrollerCrds } from "./foreign-crds.js";

export const GATEWAY_API_MODULE = "sigs.k8s.io/gateway-api";

export function gatewayApiPin(): string {
  const pin = (JSON.parse(readFileSync(join(REPO, "src", "real-versions.json"), "utf8")) as { gatewayApi?: unknown })
    .gatewayApi;
  if (typeof pin !== "string" || !/^v\d+\.\d+\.\d+$/.test(pin)) {
    throw new Error(`src/real-versions.json: "gatewayApi" must be a release tag like "v1.4.1", got ${String(pin)}`);
  }
  return pin;
}

/** The standard channel's CRD files (YAML text), sorted by name. */
export function gatewayApiCrds(): { file: string; yaml: string }[] {
  const dir = join(goModuleDir(GATEWAY_API_MODULE, gatewayApiPin()), "config", "crd", "standard");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((file) => ({ file, yaml: readFileSync(join(dir, file), "utf8") }));
}

const GW = "gateway.networking.k8s.io";

/**
 * The real test's objects: a Gateway of class tailnet in `ns` whose listener admits routes from `ns` and `other`
 * (by the namespaces' own kubernetes.io/metadata.name label), an HTTPRoute in `other` with a header and method
 * match and a weighted backend in `ns`, a GRPCRoute in `ns`, and the ReferenceGrant in `ns` that allows it.
 */
export function shopObjects(NS: string, OTHER: string, BASE: string): Record<string, unknown>[] {
  return [
    {
      apiVersion: `${GW}/v1`,
      kind: "Gateway",
      metadata: { name: "web", namespace: NS },
      spec: {
        gatewayClassName: "tailnet",
        listeners: [
          {
            name: "https",
            protocol: "HTTPS",
            port: 443,
            hostname: `shop.${BASE}`,
            tls: { mode: "Terminate", certificateRefs: [{ name: "shop-tls" }] },
            allowedRoutes: {
              namespaces: {
                from: "Selector",
                selector: {
                  matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [NS, OTHER] }],
                },
              },
            },
          },
        ],
      },
    },
    {
      apiVersion: `${GW}/v1`,
      kind: "HTTPRoute",
      metadata: { name: "shop", namespace: OTHER },
      spec: {
        parentRefs: [
          { name: "web", namespace: NS },
          { name: "istio-gw", namespace: NS },
        ],
        hostnames: [`shop.${BASE}`],
        rules: [
          {
            matches: [
              {
                path: { type: "PathPrefix", value: "/search" },
                headers: [{ name: "x-canary", value: "canary" }],
                method: "GET",
              },
            ],
            backendRefs: [
              { name: "search", port: 80, weight: 3 },
              { name: "api", namespace: NS, port: 80, weight: 1 },
            ],
          },
        ],
      },
    },
    {
      apiVersion: `${GW}/v1`,
      kind: "GRPCRoute",
      metadata: { name: "greeter", namespace: NS },
      spec: {
        parentRefs: [{ name: "web" }],
        rules: [
          {
            matches: [{ method: { service: "helloworld.Greeter", method: "SayHello" } }],
            backendRefs: [{ name: "greeter", port: 50051 }],
          },
        ],
      },
    },
    {
      apiVersion: `${GW}/v1beta1`,
      kind: "ReferenceGrant",
      metadata: { name: "routes-from-other", namespace: NS },
      spec: {
        from: [{ group: GW, kind: "HTTPRoute", namespace: OTHER }],
        to: [{ group: "", kind: "Service", name: "api" }],
      },
    },
  ];
}

/** A real API server with the pinned Gateway API CRDs, ours and Metacontroller's, all Established. */
export async function startGatewayApiCluster(): Promise<Cluster> {
  const cluster = await startCluster();
  for (const crd of gatewayApiCrds()) applyClean(cluster, crd.yaml);
  applyClean(cluster, cluster.kubectl(["kustomize", "manifests/crds"]));
  applyClean(cluster, metacontrollerCrds);
  cluster.kubectl(["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"]);
  return cluster;
}
