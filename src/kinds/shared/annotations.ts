/**
 * The annotations a user writes on a decorated object — an annotated Service (docs/services.md) or an
 * Ingress of class tailnet (docs/ingress-class.md) — to shape the TailnetIngress it gets.
 */
import { GROUP } from "../../api/schemas.js";
import type { K8sObject } from "../../k8s/objects.js";

export const WorkloadAnnotation = {
  /** The tailnet node name (default: the object's name). */
  hostname: `${GROUP}/hostname`,
  /** The Tailnet (default: the only one in the cluster). */
  tailnet: `${GROUP}/tailnet`,
  /** The node's tag (one). */
  tags: `${GROUP}/tags`,
  /** Comma-separated ACL entities allowed to connect. */
  allowFrom: `${GROUP}/allow-from`,
} as const;

/**
 * The Tailnet a decorated object uses: the one its annotation names, else the only one in the cluster;
 * otherwise why not (both decorator tables have these reasons). Names are listed sorted, so the message
 * does not depend on the order Metacontroller sent the related objects in.
 */
export function resolveTailnet(
  named: string | undefined,
  tailnets: readonly K8sObject[],
): { tailnet: K8sObject } | { reason: "NoTailnet" | "AmbiguousTailnet"; message: string } {
  if (named) {
    const t = tailnets.find((x) => x.metadata.name === named);
    if (t) return { tailnet: t };
    return { reason: "NoTailnet", message: `Tailnet "${named}" (${WorkloadAnnotation.tailnet}) does not exist` };
  }
  if (tailnets.length === 1) return { tailnet: tailnets[0] };
  if (tailnets.length === 0) {
    return {
      reason: "NoTailnet",
      message: `no Tailnet exists in the cluster; create one or name one with ${WorkloadAnnotation.tailnet}`,
    };
  }
  const names = tailnets.map((t) => t.metadata.name).sort();
  const shown = names.length > 5 ? `${names.slice(0, 5).join(", ")}, …` : names.join(", ");
  return {
    reason: "AmbiguousTailnet",
    message: `${names.length} Tailnets exist (${shown}); name one with ${WorkloadAnnotation.tailnet}`,
  };
}
