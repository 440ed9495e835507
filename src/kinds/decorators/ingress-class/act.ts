/**
 * The one write of an Ingress's sync that is the operator's own: an Event on the Ingress when its
 * `Exposed` reason changes (Metacontroller writes the attachment, label, annotation and status). A
 * repeat records nothing, and an Ingress of another class gets none.
 */
import type { HookDeps } from "../../../pipeline/types.js";
import type { IngressClassPlan } from "./decide.js";
import type { IngressClassObservation } from "./observe.js";

export interface IngressClassOutcome {
  /** The Event reason recorded in this sync, if any. */
  recorded?: string;
}

export async function actIngressClass(
  plan: IngressClassPlan,
  observed: IngressClassObservation,
  deps: HookDeps,
): Promise<IngressClassOutcome> {
  if (!plan.exposed) return {};
  const { reason, status, message } = plan.exposed;
  if (observed.previousState === reason) return {};
  await deps.events.record({
    regarding: observed.ingress,
    reason,
    message: `tailnet ingress: ${message}`,
    type: status === "False" ? "Warning" : "Normal",
  });
  return { recorded: reason };
}
