/**
 * TailnetProxyClass: cluster-scoped pod settings for the agent pods of egresses, ingresses and gateways
 * (`spec.proxyClassName`). No controller reconciles it: the kinds that name a class receive it as a related
 * object and fold it into their pod template, so editing a class rolls every pod that uses it.
 */
import type { ResourceInfo, Schema } from "./schemas.js";

const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const stringMap = (description: string): Schema => ({
  type: "object",
  additionalProperties: { type: "string" },
  description,
});
/** Kubernetes' own types, checked by the API server when the pod template is applied, not re-modelled here. */
const opaque = (type: "object" | "array", description: string): Schema =>
  type === "object"
    ? { type, "x-kubernetes-preserve-unknown-fields": true, description }
    : { type, items: { type: "object", "x-kubernetes-preserve-unknown-fields": true }, description };
const quantities = stringMap("Resource name → quantity, e.g. cpu: 50m, memory: 64Mi.");
const resources: Schema = {
  type: "object",
  properties: { requests: quantities, limits: quantities },
  description: "Resources of the agent container (replaces the operator's default: 20m/48Mi, limit 256Mi).",
};

export const proxyClassSpec: Schema = {
  type: "object",
  properties: {
    resources,
    tailscaleResources: { ...resources, description: "Resources of the tailscale container." },
    corednsResources: { ...resources, description: "Resources of a gateway's coredns container." },
    nodeSelector: stringMap("The pods' nodeSelector."),
    tolerations: opaque("array", "The pods' tolerations (core/v1 Toleration)."),
    affinity: opaque("object", "The pods' affinity (core/v1 Affinity)."),
    topologySpreadConstraints: opaque(
      "array",
      "The pods' topologySpreadConstraints; the label selector may use the pods' tailnet.internal/owner-uid label.",
    ),
    priorityClassName: str({ maxLength: 253, description: "The pods' priorityClassName." }),
    podLabels: stringMap("Extra labels on the pods; the operator's own labels win on a clash."),
    podAnnotations: stringMap("Extra annotations on the pods; the operator's own annotations win on a clash."),
    images: {
      type: "object",
      description: "Images of the agent pods' containers.",
      properties: {
        agent: str({ minLength: 1, description: "Image of the agent container (default: the operator's image)." }),
        tailscale: str({ minLength: 1, description: "Image of the tailscale container (default: the pinned one)." }),
        coredns: str({
          minLength: 1,
          description: "Image of a gateway's coredns container (default: the pinned one).",
        }),
      },
    },
  },
};

export const PROXY_CLASS: ResourceInfo = {
  kind: "TailnetProxyClass",
  plural: "tailnetproxyclasses",
  singular: "tailnetproxyclass",
  shortName: "tnpc",
  scope: "Cluster",
  description:
    "Pod settings (resources, scheduling, labels, images) the agent pods of the TailnetEgresses, TailnetIngresses and TailnetGateways that name it take.",
  spec: proxyClassSpec,
  printerColumns: [{ name: "AGE", type: "date", jsonPath: ".metadata.creationTimestamp" }],
};
