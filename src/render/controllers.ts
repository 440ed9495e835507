/** The CompositeControllers shipped in compositecontrollers/, read by the loop and by tests. */
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { typeKey } from "../k8s/objects.js";

export interface CompositeController {
  metadata: { name: string };
  spec: {
    childResources: { apiVersion: string; resource: string; updateStrategy?: { method?: string } }[];
  } & Record<string, unknown>;
}

const RESOURCE_KINDS: Record<string, string> = {
  deployments: "Deployment",
  services: "Service",
  networkpolicies: "NetworkPolicy",
  secrets: "Secret",
  serviceaccounts: "ServiceAccount",
  configmaps: "ConfigMap",
  pods: "Pod",
  tailnets: "Tailnet",
  tailnetegresses: "TailnetEgress",
  tailnetingresses: "TailnetIngress",
  tailnetsites: "TailnetSite",
  tailnetgateways: "TailnetGateway",
  tailnetproxyclasses: "TailnetProxyClass",
};

export function kindOfResource(resource: string): string {
  const k = RESOURCE_KINDS[resource];
  if (!k) throw new Error(`unknown resource ${resource}`);
  return k;
}

const cache = new Map<string, CompositeController>();
export function compositeController(hookKind: string): CompositeController {
  let cc = cache.get(hookKind);
  if (!cc) {
    const url = new URL(`../../compositecontrollers/${hookKind}.yaml`, import.meta.url);
    cc = parse(readFileSync(url, "utf8")) as CompositeController;
    cache.set(hookKind, cc);
  }
  return cc;
}

/** Child type keys with their update strategy (default OnDelete, as Metacontroller). */
export function childTypes(hookKind: string): { type: string; method: string }[] {
  return compositeController(hookKind).spec.childResources.map((c) => ({
    type: typeKey(c.apiVersion, kindOfResource(c.resource)),
    method: c.updateStrategy?.method ?? "OnDelete",
  }));
}
