/**
 * The CompositeControllers shipped in compositecontrollers/ and the DecoratorControllers in
 * decoratorcontrollers/, read by the loop and by tests.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { typeKey } from "../../k8s/objects.js";

export interface CompositeController {
  metadata: { name: string };
  spec: {
    childResources: { apiVersion: string; resource: string; updateStrategy?: { method?: string } }[];
  } & Record<string, unknown>;
}

const RESOURCE_KINDS: Record<string, string> = {
  deployments: "Deployment",
  statefulsets: "StatefulSet",
  roles: "Role",
  rolebindings: "RoleBinding",
  services: "Service",
  networkpolicies: "NetworkPolicy",
  secrets: "Secret",
  serviceaccounts: "ServiceAccount",
  configmaps: "ConfigMap",
  pods: "Pod",
  namespaces: "Namespace",
  poddisruptionbudgets: "PodDisruptionBudget",
  tailnets: "Tailnet",
  tailnetegresses: "TailnetEgress",
  tailnetingresses: "TailnetIngress",
  tailnetsites: "TailnetSite",
  tailnetgateways: "TailnetGateway",
  tailnetproxyclasses: "TailnetProxyClass",
  ingresses: "Ingress",
  ingressclasses: "IngressClass",
  tailnetusers: "TailnetUser",
  tailnetauthkeys: "TailnetAuthKey",
  gatewayclasses: "GatewayClass",
  gateways: "Gateway",
  httproutes: "HTTPRoute",
  grpcroutes: "GRPCRoute",
  referencegrants: "ReferenceGrant",
  certificates: "Certificate",
};

export function kindOfResource(resource: string): string {
  const k = RESOURCE_KINDS[resource];
  if (!k) throw new Error(`unknown resource ${resource}`);
  return k;
}

/** The kustomize components that change CompositeControllers (manifests/components/<name>), as shipped. */
export type ControllerComponent = "cert-manager" | "gateway-api";
/** Per component: its JSON6902 patch file and the CompositeController it targets (its kustomization.yaml). */
const COMPONENT_PATCHES: Record<ControllerComponent, { hookKind: string; file: string }> = {
  "cert-manager": { hookKind: "ingress", file: "cert-manager/ingress-certificates.yaml" },
  "gateway-api": { hookKind: "ingress", file: "gateway-api/ingress-referencegrants.yaml" },
};

const cache = new Map<string, CompositeController>();
/** compositecontrollers/<kind>.yaml, with the `add /spec/childResources/-` patches of the given components. */
export function compositeController(
  hookKind: string,
  components: readonly ControllerComponent[] = [],
): CompositeController {
  const key = [hookKind, ...components].join("+");
  let cc = cache.get(key);
  if (!cc) {
    const url = new URL(`../../../compositecontrollers/${hookKind}.yaml`, import.meta.url);
    cc = parse(readFileSync(url, "utf8")) as CompositeController;
    for (const c of components) {
      const patch = COMPONENT_PATCHES[c];
      if (patch.hookKind !== hookKind) continue;
      const file = new URL(`../../../manifests/components/${patch.file}`, import.meta.url);
      const ops = parse(readFileSync(file, "utf8")) as { op: string; path: string; value: unknown }[];
      for (const op of ops) {
        if (op.op !== "add" || op.path !== "/spec/childResources/-")
          throw new Error(`${patch.file}: unsupported ${op.op} ${op.path}`);
        cc.spec.childResources.push(op.value as CompositeController["spec"]["childResources"][number]);
      }
    }
    cache.set(key, cc);
  }
  return cc;
}

/** Child type keys with their update strategy (default OnDelete, as Metacontroller). */
export function childTypes(
  hookKind: string,
  components: readonly ControllerComponent[] = [],
): { type: string; method: string }[] {
  return compositeController(hookKind, components).spec.childResources.map((c) => ({
    type: typeKey(c.apiVersion, kindOfResource(c.resource)),
    method: c.updateStrategy?.method ?? "OnDelete",
  }));
}

export interface DecoratorController {
  metadata: { name: string };
  spec: {
    resources: {
      apiVersion: string;
      resource: string;
      annotationSelector?: {
        matchAnnotations?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      };
    }[];
    attachments?: { apiVersion: string; resource: string; updateStrategy?: { method?: string } }[];
    hooks: Record<string, { webhook: { path: string } }>;
  } & Record<string, unknown>;
}

let decorators: DecoratorController[] | undefined;
/**
 * Every DecoratorController of decoratorcontrollers/kustomization.yaml, in its order, then the opt-in Gateway
 * API ones (decoratorcontrollers/gateway-api/): with no Gateway API object they are never called.
 */
export function decoratorControllers(): DecoratorController[] {
  if (!decorators) {
    const read = (folder: string) => {
      const dir = new URL(`../../../decoratorcontrollers/${folder}`, import.meta.url);
      const k = parse(readFileSync(new URL("kustomization.yaml", dir), "utf8")) as { resources: string[] };
      return k.resources.map((f) => parse(readFileSync(new URL(f, dir), "utf8")) as DecoratorController);
    };
    decorators = [...read(""), ...read("gateway-api/")];
  }
  return decorators;
}
