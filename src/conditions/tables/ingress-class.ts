/**
 * Ingresses of the IngressClass `tailnet` (the ingress-class DecoratorController): one condition,
 * `Exposed`, written back on the Ingress as the label `tailnet.internal/ingress-state` (the reason),
 * the annotation `tailnet.internal/ingress-message`, and an Event whenever the reason changes.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { EXPOSURE_INVALID_ANNOTATION, EXPOSURE_REFUSED, EXPOSURE_STATE } from "./exposure.js";

export const INGRESS_CLASS_REASONS = {
  Exposed: {
    ...EXPOSURE_STATE,
    ...EXPOSURE_INVALID_ANNOTATION,
    UnsupportedHost: ["False"],
    UnsupportedBackend: ["False"],
    UnsupportedPaths: ["False"],
    NoBackend: ["False"],
    UnresolvedPort: ["False"],
    TLSMissing: ["False"],
    ...EXPOSURE_REFUSED,
  },
} as const satisfies ReasonTable;

export const IngressClassCondition = conditionNames(INGRESS_CLASS_REASONS);
export const IngressClassReason = reasonNames(INGRESS_CLASS_REASONS);
