/**
 * The reasons every decorator's `Exposed` shares (src/kinds/decorators: service, ingress-class), one set the
 * decorators' tables compose around their own spec refusals: how the attachment stands, an annotation it
 * could not take, and the refusals of the rest of the cluster.
 */
import { reasonNames } from "../table.js";

/** How the attachment (a TailnetIngress / TailnetEgress) stands: Exposed repeats its Ready. */
export const EXPOSURE_STATE = { Ready: ["True"], Pending: ["Unknown"], NotReady: ["False"] } as const;

/** A workload annotation has a value the attachment could not take (src/kinds/shared/annotations.ts). */
export const EXPOSURE_INVALID_ANNOTATION = { InvalidAnnotation: ["False"] } as const;

/**
 * Refused by the rest of the cluster: the Tailnet the annotations name (src/kinds/shared/annotations.ts), a
 * name or hostname another object holds, and the Tailnet's tenancy (src/kinds/shared/tenancy.ts).
 */
export const EXPOSURE_REFUSED = {
  NoTailnet: ["False"],
  AmbiguousTailnet: ["False"],
  NameTaken: ["False"],
  HostnameTaken: ["False"],
  HostnameReserved: ["False"],
  TagNotGranted: ["False"],
  TagInUse: ["False"],
  NamespaceNotAllowed: ["False"],
} as const;

/** The shared reasons as typed names (`R.Pending`): what the decorators' one planner and ladder build with. */
export const ExposureReason = reasonNames({
  Exposed: { ...EXPOSURE_STATE, ...EXPOSURE_INVALID_ANNOTATION, ...EXPOSURE_REFUSED },
});
