/**
 * Annotated Services (the service-expose and service-target DecoratorControllers): one condition,
 * `Exposed`, written back on the Service as the label `tailnet.internal/<role>-state` (the reason),
 * the annotation `tailnet.internal/<role>-message`, and an Event whenever the reason changes. A
 * LoadBalancer Service of our class (service-loadbalancer) is an exposure and writes the same.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { EXPOSURE_INVALID_ANNOTATION, EXPOSURE_REFUSED, EXPOSURE_STATE } from "./exposure.js";

export const SERVICE_REASONS = {
  Exposed: {
    ...EXPOSURE_STATE,
    ConflictingAnnotations: ["False"],
    ...EXPOSURE_INVALID_ANNOTATION,
    UnsupportedPorts: ["False"],
    UnsupportedField: ["False"],
    ...EXPOSURE_REFUSED,
    ExternalNameMismatch: ["False"],
  },
} as const satisfies ReasonTable;

export const ServiceCondition = conditionNames(SERVICE_REASONS);
export const ServiceReason = reasonNames(SERVICE_REASONS);
