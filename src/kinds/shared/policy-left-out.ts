/**
 * Whether the object's Tailnet left its contribution (or part of it) out of the policy (issue 31 item 4): the
 * Tailnet's render and its policy/check search record each such object in status.policy.leftOut
 * (src/kinds/composite/tailnet/left-out.ts), and Metacontroller sends every workload its Tailnet, so each kind reports
 * it as its own `LeftOutOfPolicy` condition reason. Only the Tailnet writes that status (cluster-scoped, not
 * aggregated to `edit`), so a tenant cannot plant an entry.
 */
import { API_VERSION } from "../../api/schemas.js";
import { findObject, isRecord, type K8sObject, type ObjectMaps } from "../../k8s/objects.js";
import { tailnetRefName } from "./tailnet-ref.js";

/** LeftOutOfPolicy's message for `parent` (of `kind`), or undefined when its Tailnet lists no entry for it. */
export function leftOutOfPolicy(related: ObjectMaps, parent: K8sObject, kind: string): string | undefined {
  const name = tailnetRefName(parent);
  return leftOutIn(name ? findObject(related, API_VERSION, "Tailnet", name) : undefined, parent, kind);
}

/** leftOutOfPolicy with the Tailnet object at hand. */
export function leftOutIn(tailnet: K8sObject | undefined, parent: K8sObject, kind: string): string | undefined {
  const name = tailnet?.metadata.name;
  const policy = isRecord(tailnet?.status) ? tailnet.status.policy : undefined;
  const list = isRecord(policy) && Array.isArray(policy.leftOut) ? policy.leftOut : [];
  const entry = list.find(
    (e) =>
      isRecord(e) &&
      e.kind === kind &&
      e.namespace === (parent.metadata.namespace ?? "") &&
      e.name === parent.metadata.name,
  ) as Record<string, unknown> | undefined;
  if (!entry) return undefined;
  return `Tailnet ${name} left this object's contribution out of the policy (${String(entry.reason)}), so that everyone else's is written: ${String(entry.message)}`;
}
