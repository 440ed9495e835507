/**
 * Annotated Services (the service-expose and service-target DecoratorControllers): one condition,
 * `Exposed`, written back on the Service as the label `tailnet.internal/<role>-state` (the reason),
 * the annotation `tailnet.internal/<role>-message`, and an Event whenever the reason changes. A
 * LoadBalancer Service of our class (service-loadbalancer) is an exposure and writes the same.
 */
import type { ReasonTable } from "../table.js";

export const SERVICE_REASONS = {
  Exposed: {
    Ready: ["True"],
    Pending: ["Unknown"],
    NotReady: ["False"],
    ConflictingAnnotations: ["False"],
    InvalidAnnotation: ["False"],
    UnsupportedPorts: ["False"],
    UnsupportedField: ["False"],
    NoTailnet: ["False"],
    AmbiguousTailnet: ["False"],
    NameTaken: ["False"],
    HostnameTaken: ["False"],
    HostnameReserved: ["False"],
    TagNotGranted: ["False"],
    TagInUse: ["False"],
    NamespaceNotAllowed: ["False"],
    ExternalNameMismatch: ["False"],
  },
} as const satisfies ReasonTable;
