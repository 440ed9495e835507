import type { K8sObject } from "../../chart/helm.js";

/** A bare Pod from a Deployment's template: what the ReplicaSet controller would submit for it. */
export function podFrom(deployment: K8sObject, namespace: string): K8sObject {
  const template = (
    deployment as unknown as { spec: { template: { metadata?: { labels?: Record<string, string> }; spec: unknown } } }
  ).spec.template;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: deployment.metadata.name, namespace, labels: template.metadata?.labels },
    spec: template.spec,
  };
}
