/**
 * The TailnetAuthKey metric: tailnet_auth_key_expiry_timestamp_seconds{kind="TailnetAuthKey"}, the expiry of the
 * key in its Secret (the series egress and ingress agents publish too). Whether a due renewal fails is the
 * resource condition metric (type RenewalDue, reason RenewalFailed); the TailnetAuthKeyRenewalFailing alert
 * joins the two. No key, key id or prefix is a label.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { OperatorMetrics } from "../../../metrics/registry.js";
import { onStaleResource } from "../../../metrics/resource.js";

const idOf = (parent: K8sObject) => ({
  kind: "TailnetAuthKey",
  namespace: parent.metadata.namespace ?? "",
  name: parent.metadata.name,
});

export function publishAuthKeyMetrics(metrics: OperatorMetrics, parent: K8sObject, expiresAt: Date | undefined): void {
  if (expiresAt) metrics.authKeyExpiry.set(idOf(parent), Math.floor(expiresAt.getTime() / 1000));
  else metrics.authKeyExpiry.remove(idOf(parent));
}

export function withdrawAuthKeyMetrics(metrics: OperatorMetrics, parent: K8sObject): void {
  publishAuthKeyMetrics(metrics, parent, undefined);
}

// a key whose syncs stopped coming here (deleted while another replica answered): its series goes
onStaleResource((metrics, id) => {
  if (id.kind !== "TailnetAuthKey") return;
  withdrawAuthKeyMetrics(metrics, {
    apiVersion: API_VERSION,
    kind: id.kind,
    metadata: { namespace: id.namespace, name: id.name },
  });
});
