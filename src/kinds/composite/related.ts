/**
 * The related objects each kind asks for in customize (api.md § Hook contract). The answer
 * depends only on the parent's spec and identity: Metacontroller caches it per uid+generation.
 * v2 semantics: a labelSelector without namespace lists every namespace; names without a
 * namespace match in every namespace; names never combine with selectors.
 */
import { API_VERSION } from "../../api/schemas.js";
import type { OperatorConfig } from "../../config.js";
import { credentialsSecretName, OWNER_UID_LABEL } from "../../k8s/labels.js";
import type { K8sObject } from "../../k8s/objects.js";
import type { RelatedRule } from "../../pipeline/types.js";
import { GRANT_VERSION, GW_V1 } from "../shared/gateway-api-objects.js";
import { proxyClassRules } from "../shared/proxy-class.js";
import { tailnetRefName } from "../shared/tailnet-ref.js";
import { foreignBackends } from "./ingress/permitted.js";
import { readIngressSpec } from "./ingress/spec.js";

type Spec = Record<string, unknown>;
const specOf = (p: K8sObject): Spec => (p.spec && typeof p.spec === "object" ? (p.spec as Spec) : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const uniqSorted = (v: string[]) => [...new Set(v)].sort();
/** The objects of a spec list; anything else (the CRD schema would have refused it) reads as empty. */
const records = (v: unknown): Spec[] =>
  Array.isArray(v) ? v.filter((x): x is Spec => !!x && typeof x === "object" && !Array.isArray(x)) : [];

/**
 * Tailnet + its credentials Secret + the object's agent Pods + its Namespace (whose labels the Tailnet's
 * spec.tenancy selectors judge, tenancy.ts): what every workload kind needs.
 */
export function workloadRelated(parent: K8sObject, config: OperatorConfig): RelatedRule[] {
  const rules: RelatedRule[] = [];
  const tailnet = tailnetRefName(parent);
  if (tailnet) {
    rules.push({ apiVersion: API_VERSION, resource: "tailnets", names: [tailnet] });
    rules.push({
      apiVersion: "v1",
      resource: "secrets",
      namespace: config.operatorNamespace,
      names: [credentialsSecretName(tailnet)],
    });
  }
  if (tailnet && parent.metadata.namespace) {
    rules.push({ apiVersion: "v1", resource: "namespaces", names: [parent.metadata.namespace] });
  }
  if (parent.metadata.uid && parent.metadata.namespace) {
    rules.push({
      apiVersion: "v1",
      resource: "pods",
      namespace: parent.metadata.namespace,
      labelSelector: { matchLabels: { [OWNER_UID_LABEL]: parent.metadata.uid } },
    });
  }
  return rules;
}

const all = (resource: string): RelatedRule => ({ apiVersion: API_VERSION, resource, labelSelector: {} });

export function tailnetRelated(parent: K8sObject): RelatedRule[] {
  const spec = specOf(parent);
  const hs = (spec.headscale ?? {}) as Spec;
  const rules: RelatedRule[] = [
    all("tailnetegresses"),
    all("tailnetingresses"),
    all("tailnetsites"),
    all("tailnetgateways"),
    // the labels spec.tenancy judges: a refused namespace's objects get nothing in the policy
    { apiVersion: "v1", resource: "namespaces", labelSelector: {} },
  ];
  const secretsByNs = new Map<string, string[]>();
  for (const ref of [hs.apiKeySecretRef, hs.caSecretRef]) {
    const r = ref as { namespace?: unknown; name?: unknown } | undefined;
    if (typeof r?.namespace === "string" && typeof r.name === "string") {
      secretsByNs.set(r.namespace, [...(secretsByNs.get(r.namespace) ?? []), r.name]);
    }
  }
  for (const [namespace, names] of [...secretsByNs].sort()) {
    rules.push({ apiVersion: "v1", resource: "secrets", namespace, names: uniqSorted(names) });
  }
  const base = (spec.policy as Spec | undefined)?.baseConfigMapRef as
    | { namespace?: unknown; name?: unknown }
    | undefined;
  if (typeof base?.namespace === "string" && typeof base.name === "string") {
    rules.push({ apiVersion: "v1", resource: "configmaps", namespace: base.namespace, names: [base.name] });
  }
  return rules;
}

export function egressRelated(parent: K8sObject, config: OperatorConfig): RelatedRule[] {
  const names = uniqSorted(
    records(specOf(parent).targets).flatMap((t) => (typeof t.name === "string" ? [t.name] : [])),
  );
  const rules = workloadRelated(parent, config);
  if (names.length && parent.metadata.namespace) {
    rules.push({ apiVersion: "v1", resource: "services", namespace: parent.metadata.namespace, names });
  }
  // whose agent node a target is (node-owners.ts): their status.preAuthKeyIds prove which nodes they registered
  rules.push(all("tailnetingresses"), all("tailnetegresses"), all("tailnetgateways"));
  rules.push(...proxyClassRules(parent));
  return rules;
}

/**
 * What gives a backend in another namespace (ingress/permitted.ts): the ReferenceGrants of each such namespace, and
 * the routes the backends name, by name. Only while ReferenceGrants are served (`grantsServed`, the gateway-api
 * component): a related type the API server does not serve fails the whole sync. From the spec alone, as customize must.
 */
function backendGrantRules(parent: K8sObject, grantsServed: boolean): RelatedRule[] {
  const ns = parent.metadata.namespace;
  if (!grantsServed || !ns) return [];
  const foreign = foreignBackends(readIngressSpec(parent), ns).map((u) => u.backend);
  const rules: RelatedRule[] = uniqSorted(foreign.map((b) => b.namespace ?? ns)).map((namespace) => ({
    apiVersion: GRANT_VERSION,
    resource: "referencegrants",
    namespace,
  }));
  const routes = new Map<string, string[]>();
  for (const r of foreign.flatMap((b) => (b.route ? [b.route] : []))) {
    const key = `${r.kind === "GRPCRoute" ? "grpcroutes" : "httproutes"} ${r.namespace}`;
    routes.set(key, [...(routes.get(key) ?? []), r.name]);
  }
  for (const [key, names] of [...routes].sort()) {
    const [resource, namespace] = key.split(" ");
    rules.push({ apiVersion: GW_V1, resource, namespace, names: uniqSorted(names) });
  }
  return rules;
}

export function ingressRelated(parent: K8sObject, config: OperatorConfig, grantsServed = false): RelatedRule[] {
  const exposes = records(specOf(parent).exposes);
  // the Secret of each expose: its own, or the one its Certificate fills (ingress/certificate.ts certificateName)
  const tls = uniqSorted(
    exposes.flatMap((e) => {
      const t = e.tls as Spec | undefined;
      if (!t || typeof t !== "object") return [];
      if (typeof t.secretName === "string") return [t.secretName];
      return typeof e.name === "string" ? [`${parent.metadata.name}.${e.name}-tls`] : [];
    }),
  );
  // Path backends too (per-request routes): every Service the agent forwards to.
  const backends = uniqSorted(
    exposes.flatMap((e) =>
      strings([
        (e.backend as Spec | undefined)?.service,
        ...records(e.paths).map((p) => (p.backend as Spec | undefined)?.service),
      ]),
    ),
  );
  const ns = parent.metadata.namespace;
  const rules = workloadRelated(parent, config);
  if (ns && tls.length) rules.push({ apiVersion: "v1", resource: "secrets", namespace: ns, names: tls });
  if (ns && backends.length) rules.push({ apiVersion: "v1", resource: "services", namespace: ns, names: backends });
  rules.push(all("tailnetingresses"), ...proxyClassRules(parent), ...backendGrantRules(parent, grantsServed));
  return rules;
}

export function siteRelated(parent: K8sObject, config: OperatorConfig): RelatedRule[] {
  return [...workloadRelated(parent, config), all("tailnetsites")];
}

export function gatewayRelated(parent: K8sObject, config: OperatorConfig): RelatedRule[] {
  return [
    ...workloadRelated(parent, config),
    { apiVersion: "v1", resource: "configmaps", namespace: "kube-system", names: ["coredns"] },
    all("tailnetegresses"),
    // every Namespace: the Tailnet's tenancy judges which egresses may claim a zone name (shared/zone-owners.ts)
    { apiVersion: "v1", resource: "namespaces", labelSelector: {} },
    {
      apiVersion: "v1",
      resource: "services",
      labelSelector: { matchLabels: { "tailnet.internal/egress-target": "true" } },
    },
    ...proxyClassRules(parent),
  ];
}

/** A TailnetUser: its Tailnet and the Tailnet's credentials Secret. */
export function userRelated(parent: K8sObject, config: OperatorConfig): RelatedRule[] {
  return workloadRelated(parent, config).filter((r) => r.resource !== "pods" && r.resource !== "namespaces");
}

/**
 * A TailnetAuthKey: its Tailnet, the credentials Secret, its Namespace (tenancy grants its tags), and the
 * TailnetUser it names (whose spec.authKeyNamespaces and status.id decide a user's key), and the Secret it
 * writes (to see one it does not own). No pods: it runs none.
 */
export function authKeyRelated(parent: K8sObject, config: OperatorConfig): RelatedRule[] {
  const rules = workloadRelated(parent, config).filter((r) => r.resource !== "pods");
  const user = (specOf(parent).user as { name?: unknown } | undefined)?.name;
  if (typeof user === "string" && user)
    rules.push({ apiVersion: API_VERSION, resource: "tailnetusers", names: [user] });
  // the Secret it would write, whoever owns it: one it does not own is SecretNotOwned (observe.ts foreignSecret)
  const secretName = specOf(parent).secretName;
  if (typeof secretName === "string" && secretName && parent.metadata.namespace) {
    rules.push({ apiVersion: "v1", resource: "secrets", namespace: parent.metadata.namespace, names: [secretName] });
  }
  return rules;
}
