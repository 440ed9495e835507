/** Labels and names shared by every child and by the customize rules that find them again. */
export const OWNER_UID_LABEL = "tailnet.internal/owner-uid";
export const TAILNET_LABEL = "tailnet.internal/tailnet";
/** On Services the operator creates for egress targets, so a gateway can find them (derived zone). */
export const EGRESS_TARGET_LABEL = "tailnet.internal/egress-target";
export const MANAGED_BY = "tailnet-operator";

export function commonLabels(
  parent: { kind: string; metadata: { name: string; uid?: string } },
  component: string,
  appName = "tailnet-agent",
): Record<string, string> {
  return {
    "app.kubernetes.io/name": appName,
    "app.kubernetes.io/instance": truncateLabel(parent.metadata.name),
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/managed-by": MANAGED_BY,
    [OWNER_UID_LABEL]: parent.metadata.uid ?? "",
  };
}

/** Label values are at most 63 characters. */
export function truncateLabel(v: string): string {
  return v.length <= 63 ? v : v.slice(0, 63).replace(/[-_.]+$/, "");
}

export const credentialsSecretName = (tailnet: string) => `tailnet-${tailnet}-credentials`;
export const policyConfigMapName = (tailnet: string) => `tailnet-${tailnet}-policy`;
export const dnsRecordsConfigMapName = (tailnet: string) => `tailnet-${tailnet}-dns-records`;
