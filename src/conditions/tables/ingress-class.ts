/**
 * Ingresses of the IngressClass `tailnet` (the ingress-class DecoratorController): one condition,
 * `Exposed`, written back on the Ingress as the label `tailnet.internal/ingress-state` (the reason),
 * the annotation `tailnet.internal/ingress-message`, and an Event whenever the reason changes.
 */
import type { ReasonTable } from "../table.js";

export const INGRESS_CLASS_REASONS = {
  Exposed: {
    Ready: ["True"],
    Pending: ["Unknown"],
    NotReady: ["False"],
    InvalidAnnotation: ["False"],
    UnsupportedHost: ["False"],
    UnsupportedBackend: ["False"],
    UnsupportedPaths: ["False"],
    NoBackend: ["False"],
    UnresolvedPort: ["False"],
    TLSMissing: ["False"],
    NoTailnet: ["False"],
    AmbiguousTailnet: ["False"],
    NameTaken: ["False"],
    HostnameTaken: ["False"],
    HostnameReserved: ["False"],
    TagNotGranted: ["False"],
    TagInUse: ["False"],
    NamespaceNotAllowed: ["False"],
  },
} as const satisfies ReasonTable;
