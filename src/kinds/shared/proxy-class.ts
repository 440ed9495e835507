/**
 * TailnetProxyClass (src/api/proxy-class.ts): the pod settings an egress, ingress or gateway takes by naming a
 * class in `spec.proxyClassName`. The class arrives as a related object; a named class that is absent is a
 * finding (`ProxyClassMissing`), never a silent fallback to the defaults. Applying a class changes the pod
 * template, so a class edit rolls the replicas' pods one replica at a time (staged-rollout.ts).
 */
import { API_VERSION } from "../../api/schemas.js";
import { isRecord, type K8sObject, type ObjectMaps, objectsOf } from "../../k8s/objects.js";
import type { RelatedRule } from "../../pipeline/types.js";

export const PROXY_CLASS_KIND = "TailnetProxyClass";

type StringMap = Record<string, string>;
export interface ContainerResources {
  requests?: StringMap;
  limits?: StringMap;
}

/** The class's spec, read once (the CRD schema has checked the shapes). */
export interface ProxyClassSpec {
  resources?: ContainerResources;
  tailscaleResources?: ContainerResources;
  nodeSelector?: StringMap;
  tolerations?: unknown[];
  affinity?: Record<string, unknown>;
  topologySpreadConstraints?: unknown[];
  priorityClassName?: string;
  podLabels?: StringMap;
  podAnnotations?: StringMap;
  corednsResources?: ContainerResources;
  images?: { agent?: string; tailscale?: string; coredns?: string };
}

export type ProxyClassLookup =
  | { kind: "none" }
  | { kind: "found"; name: string; spec: ProxyClassSpec }
  | { kind: "missing"; name: string };

export function proxyClassNameOf(parent: K8sObject): string | undefined {
  const spec = isRecord(parent.spec) ? parent.spec : {};
  return typeof spec.proxyClassName === "string" && spec.proxyClassName ? spec.proxyClassName : undefined;
}

/** The related rule for the customize answer: the named class, when one is named. */
export function proxyClassRules(parent: K8sObject): RelatedRule[] {
  const name = proxyClassNameOf(parent);
  return name ? [{ apiVersion: API_VERSION, resource: "tailnetproxyclasses", names: [name] }] : [];
}

export function lookupProxyClass(parent: K8sObject, related: ObjectMaps): ProxyClassLookup {
  const name = proxyClassNameOf(parent);
  if (!name) return { kind: "none" };
  const found = objectsOf(related, API_VERSION, PROXY_CLASS_KIND).find((o) => o.metadata.name === name);
  if (!found) return { kind: "missing", name };
  return { kind: "found", name, spec: (isRecord(found.spec) ? found.spec : {}) as ProxyClassSpec };
}

/** The condition message of a missing class (the Ready reason is `ProxyClassMissing` in every kind). */
export const proxyClassMissingMessage = (name: string) =>
  `TailnetProxyClass ${name} does not exist; the agent pods keep their current settings until it does`;

const MEBI: Record<string, number> = { Ki: 1 / 1024, Mi: 1, Gi: 1024, Ti: 1024 * 1024, K: 1e3 / 2 ** 20 };
MEBI.M = 1e6 / 2 ** 20;
MEBI.G = 1e9 / 2 ** 20;

/** A memory quantity in MiB (undefined when it is not one we read: the API server validates quantities). */
export function mebibytes(quantity: string): number | undefined {
  const m = /^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|K|M|G)?$/.exec(quantity.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2] ? n * (MEBI[m[2]] as number) : n / 2 ** 20;
}

type Container = Record<string, unknown> & { name?: unknown; env?: unknown };

/** Node's heap cap follows the agent's memory limit (half of it), as the default 128 MiB follows 256Mi. */
function withHeapCap(container: Container, limit: string | undefined): Container {
  const mib = limit === undefined ? undefined : mebibytes(limit);
  if (mib === undefined || !Array.isArray(container.env)) return container;
  const cap = Math.max(32, Math.floor(mib / 2));
  const env = (container.env as { name: string; value?: string }[]).map((e) =>
    e.name === "NODE_OPTIONS" ? { ...e, value: `--max-old-space-size=${cap}` } : e,
  );
  return { ...container, env };
}

function withContainer(c: Container, spec: ProxyClassSpec): Container {
  if (c.name === "agent") {
    let out: Container = { ...c };
    if (spec.images?.agent) out.image = spec.images.agent;
    if (spec.resources) {
      out.resources = spec.resources;
      out = withHeapCap(out, spec.resources.limits?.memory);
    }
    return out;
  }
  if (c.name === "tailscale") {
    const out: Container = { ...c };
    if (spec.images?.tailscale) out.image = spec.images.tailscale;
    if (spec.tailscaleResources) out.resources = spec.tailscaleResources;
    return out;
  }
  if (c.name === "coredns") {
    const out: Container = { ...c };
    if (spec.images?.coredns) out.image = spec.images.coredns;
    if (spec.corednsResources) out.resources = spec.corednsResources;
    return out;
  }
  return c;
}

/** The Deployment with the class folded into its pod template; the operator's labels and annotations win. */
export function applyProxyClass(deployment: K8sObject, spec: ProxyClassSpec): K8sObject {
  const dspec = deployment.spec as Record<string, unknown>;
  const template = dspec.template as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  const meta = template.metadata;
  const pod = template.spec;
  const labels = { ...spec.podLabels, ...(meta.labels as StringMap | undefined) };
  const annotations = { ...spec.podAnnotations, ...(meta.annotations as StringMap | undefined) };
  const scheduling: Record<string, unknown> = {};
  if (spec.nodeSelector && Object.keys(spec.nodeSelector).length) scheduling.nodeSelector = spec.nodeSelector;
  if (spec.tolerations?.length) scheduling.tolerations = spec.tolerations;
  if (spec.affinity && Object.keys(spec.affinity).length) scheduling.affinity = spec.affinity;
  if (spec.topologySpreadConstraints?.length) scheduling.topologySpreadConstraints = spec.topologySpreadConstraints;
  if (spec.priorityClassName) scheduling.priorityClassName = spec.priorityClassName;
  return {
    ...deployment,
    spec: {
      ...dspec,
      template: {
        ...template,
        metadata: {
          ...meta,
          labels,
          ...(Object.keys(annotations).length ? { annotations } : {}),
        },
        spec: {
          ...pod,
          ...scheduling,
          containers: (pod.containers as Container[]).map((c) => withContainer(c, spec)),
        },
      },
    },
  };
}
