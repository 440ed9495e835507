/**
 * The annotations a user writes on a decorated object — an annotated Service (docs/services.md) or an
 * Ingress of class tailnet (docs/ingress-class.md) — to shape the TailnetIngress it gets.
 */
import { GROUP } from "../../api/schemas.js";

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
