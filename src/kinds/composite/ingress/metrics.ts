/**
 * The ingress metrics, set from the same observations as status: tailnet_ingress_expose_reachable
 * {namespace,name,expose} (1/0; no series while the agent was not scraped), the deprecated
 * tailnetingress_backends_unreachable {namespace,name} (number of exposes known unreachable), and
 * tailnet_auth_key_expiry_timestamp_seconds of the key in use. Series of exposes that left the
 * spec, and everything on finalize, are removed.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { registryMemory } from "../../../metrics/memory.js";
import type { OperatorMetrics } from "../../../metrics/registry.js";
import { onStaleResource } from "../../../metrics/resource.js";

const KIND = "TailnetIngress";
/** Per metrics registry: `namespace/name` → expose names with a series. */
const memory = registryMemory<Set<string>>("ingressSeries");

const idOf = (parent: K8sObject) => ({ namespace: parent.metadata.namespace ?? "", name: parent.metadata.name });

export function publishIngressMetrics(
  metrics: OperatorMetrics,
  parent: K8sObject,
  exposes: readonly { name: string; reachable: boolean | undefined }[],
  authKeyExpiresAt: Date | undefined,
): void {
  const id = idOf(parent);
  const key = `${id.namespace}/${id.name}`;
  const before = memory(metrics).get(key) ?? new Set<string>();
  const now = new Set<string>();
  let unreachable = 0;
  for (const e of exposes) {
    if (e.reachable === undefined) continue;
    metrics.ingressExposeReachable.set({ ...id, expose: e.name }, e.reachable ? 1 : 0);
    now.add(e.name);
    if (!e.reachable) unreachable++;
  }
  for (const old of before) if (!now.has(old)) metrics.ingressExposeReachable.remove({ ...id, expose: old });
  memory(metrics).set(key, now);
  if (now.size > 0) metrics.ingressBackendsUnreachableDeprecated.set(id, unreachable);
  else metrics.ingressBackendsUnreachableDeprecated.remove(id);
  if (authKeyExpiresAt) metrics.authKeyExpiry.set({ kind: KIND, ...id }, authKeyExpiresAt.getTime() / 1000);
  else metrics.authKeyExpiry.remove({ kind: KIND, ...id });
}

/** Removes every ingress series of a deleted object. */
export function withdrawIngressMetrics(metrics: OperatorMetrics, parent: K8sObject): void {
  publishIngressMetrics(metrics, parent, [], undefined);
  memory(metrics).delete(`${idOf(parent).namespace}/${idOf(parent).name}`);
}

// An ingress whose syncs stopped coming here (deleted while another replica answered): its series and memory go.
onStaleResource((metrics, id) => {
  if (id.kind !== KIND) return;
  withdrawIngressMetrics(metrics, {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { namespace: id.namespace, name: id.name },
  });
});
