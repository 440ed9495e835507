/**
 * The one write of a Service's sync that is the operator's own: an Event on the Service when its
 * `Exposed` reason changes (Metacontroller writes the attachments, labels and annotations). A repeat
 * of the same state records nothing, so a resync every minute does not flood `kubectl describe svc`.
 */
import type { HookDeps } from "../../../pipeline/types.js";
import type { Role } from "./annotations.js";
import type { ServicePlan } from "./decide.js";
import type { ServiceObservation } from "./observe.js";

export interface ServiceOutcome {
  /** The Event reason recorded in this sync, if any. */
  recorded?: string;
}

export async function actService(
  role: Role,
  plan: ServicePlan,
  observed: ServiceObservation,
  deps: HookDeps,
): Promise<ServiceOutcome> {
  const { reason, status, message } = plan.exposed;
  if (observed.previousState === reason) return {};
  await deps.events.record({
    regarding: observed.service,
    reason,
    message: `${role === "expose" ? "tailnet exposure" : "tailnet egress"}: ${message}`,
    type: status === "False" ? "Warning" : "Normal",
  });
  return { recorded: reason };
}
