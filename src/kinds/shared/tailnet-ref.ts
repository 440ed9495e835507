/** The Tailnet a workload object names (`spec.tailnetRef.name`): what every kind and the Tailnet's own inputs read. */
import { type K8sObject, recordOf } from "../../k8s/objects.js";

export function tailnetRefName(parent: K8sObject): string | undefined {
  const ref = recordOf(recordOf(parent.spec).tailnetRef);
  return typeof ref.name === "string" && ref.name ? ref.name : undefined;
}
