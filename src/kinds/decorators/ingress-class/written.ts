/**
 * What the operator writes back on an Ingress of its class (docs/ingress-class.md): a label
 * `kubectl get ing -L` shows, an annotation with the sentence, and `status.loadBalancer`. No key is
 * one the DecoratorController selects by (it selects every Ingress), so writing never changes matching.
 */
import { GROUP } from "../../../api/schemas.js";

export const Written = {
  state: `${GROUP}/ingress-state`,
  message: `${GROUP}/ingress-message`,
} as const;
