import type { K8sObject } from "../../chart/helm.js";

/** The kinds whose pod template becomes pods: Deployments (through a ReplicaSet) and StatefulSets. */
export const WORKLOAD_KINDS: readonly string[] = ["Deployment", "StatefulSet"];

/**
 * A bare Pod from a Deployment's or StatefulSet's template: what the ReplicaSet or StatefulSet controller would
 * submit for it (a StatefulSet's pod `<name>-0` carries its ordinal label, pkg/controller/statefulset/stateful_set_utils.go).
 */
export function podFrom(workload: K8sObject, namespace: string): K8sObject {
  const template = (
    workload as unknown as { spec: { template: { metadata?: { labels?: Record<string, string> }; spec: unknown } } }
  ).spec.template;
  const stateful = workload.kind === "StatefulSet";
  const name = stateful ? `${workload.metadata.name}-0` : workload.metadata.name;
  const labels = stateful
    ? { ...template.metadata?.labels, "apps.kubernetes.io/pod-index": "0", "statefulset.kubernetes.io/pod-name": name }
    : template.metadata?.labels;
  return { apiVersion: "v1", kind: "Pod", metadata: { name, namespace, labels }, spec: template.spec };
}
