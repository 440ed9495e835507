/**
 * The TailnetGateway metric: tailnet_auth_key_expiry_timestamp_seconds{kind="TailnetGateway"}, the expiry of
 * its bootstrap key (the series the other kinds publish for theirs). A sync without a key to report leaves
 * the series as it was; finalize removes it.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import type { OperatorMetrics } from "../../../metrics/registry.js";
import { resourceId } from "../../../pipeline/status.js";

export function publishGatewayMetrics(metrics: OperatorMetrics, parent: K8sObject, keyExpiresAt?: Date): void {
  if (keyExpiresAt) metrics.authKeyExpiry.set(resourceId(parent), Math.floor(keyExpiresAt.getTime() / 1000));
}

export function withdrawGatewayMetrics(metrics: OperatorMetrics, parent: K8sObject): void {
  metrics.authKeyExpiry.remove(resourceId(parent));
}
