/**
 * The `Exposed` condition every decorated object carries (src/conditions/tables/service.ts,
 * ingress-class.ts): the reasons both tables share, the state ladder that repeats an attachment's own
 * Ready on the object (Pending → Ready → HostnameReserved → a tenancy refusal → NotReady), and the
 * Event a change of reason records. Pure but for the Event.
 */
import type { ConditionInput } from "../../conditions/condition.js";
import type { ReasonOf, StatusOf } from "../../conditions/table.js";
import { ExposureReason as R } from "../../conditions/tables/exposure.js";
import type { INGRESS_CLASS_REASONS } from "../../conditions/tables/ingress-class.js";
import type { SERVICE_REASONS } from "../../conditions/tables/service.js";
import { jsonEqual } from "../../k8s/json-equal.js";
import { type K8sObject, LAST_APPLIED, reuseObserved } from "../../k8s/objects.js";
import type { HookDeps } from "../../pipeline/types.js";
import { isTenancyReason } from "../shared/tenancy.js";

type ServiceTable = typeof SERVICE_REASONS;
type IngressClassTable = typeof INGRESS_CLASS_REASONS;

/** The `Exposed` reasons both decorator tables carry: what the shared planner and ladder may say. */
export type SharedReason = ReasonOf<ServiceTable, "Exposed"> & ReasonOf<IngressClassTable, "Exposed">;

/** An `Exposed` condition of a shared reason: a condition of either decorator's table. */
export interface ExposedCondition extends ConditionInput {
  readonly type: "Exposed";
  readonly reason: SharedReason;
}

/** `cond` of the shared reasons: only a (status, reason) both tables allow compiles. */
export function exposed<R extends SharedReason>(
  status: StatusOf<ServiceTable, "Exposed", R> & StatusOf<IngressClassTable, "Exposed", R>,
  reason: R,
  message: string,
): ExposedCondition {
  return { type: "Exposed", status, reason, message };
}

export interface ReadyCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

type AttachmentStatus = { observedGeneration?: number; conditions?: ReadyCondition[] };

/** How a decorator words the ladder's rungs that name its object. */
export interface LadderWords {
  /** The Ready message, once the attachment is Ready. */
  ready(mine: K8sObject): string;
  /**
   * The attachment refuses a name a Headscale node holds (shared/dns-owners.ts): only the attachment
   * reads the node list, so it stays, publishing nothing under that name; the object says what fixes it.
   * `what` names the attachment, `why` adds its Ready reason and message.
   */
  reserved(detail: { what: string; why: string; ready: ReadyCondition }): string;
}

/**
 * The attachment's own Ready, repeated on the decorated object: Pending until it reports on what we
 * asked for. `what` names the attachment (`TailnetIngress <namespace>/<name>`).
 */
export function mirrorReady(
  what: string,
  desired: K8sObject,
  mine: K8sObject | undefined,
  words: LadderWords,
): ExposedCondition {
  if (!mine) return exposed("Unknown", R.Pending, `${what} is being created`);
  // What we asked for last time (Metacontroller's last-applied annotation; absent with server-side
  // apply, where the generation check below still catches an update once it is applied). Compared
  // as values: Metacontroller writes it with Go's sorted keys, never in the order we build it.
  if (mine.metadata.annotations?.[LAST_APPLIED] && !jsonEqual(reuseObserved(mine).spec, desired.spec)) {
    return exposed("Unknown", R.Pending, `${what} is being updated`);
  }
  const status = (mine.status ?? {}) as AttachmentStatus;
  const gen = mine.metadata.generation;
  const ready = (status.conditions ?? []).find((c) => c?.type === "Ready");
  if (!ready || (gen !== undefined && status.observedGeneration !== gen)) {
    return exposed("Unknown", R.Pending, `waiting for ${what} to report on its current spec`);
  }
  const why = `${what}: ${ready.reason ?? ""}${ready.message ? `: ${ready.message}` : ""}`;
  if (ready.status === "True") return exposed("True", R.Ready, words.ready(mine));
  if (ready.status === "False" && ready.reason === "DNSNameReserved") {
    return exposed("False", R.HostnameReserved, words.reserved({ what, why, ready }));
  }
  // a tenancy refusal (tenancy.ts) is the object's own: its annotations asked for the tag or the Tailnet
  if (ready.status === "False" && isTenancyReason(ready.reason)) {
    return exposed("False", ready.reason, `${what}: ${ready.message ?? ""}`);
  }
  if (ready.status === "False") return exposed("False", R.NotReady, why);
  return exposed("Unknown", R.Pending, why);
}

export interface ExposedOutcome {
  /** The Event reason recorded in this sync, if any. */
  recorded?: string;
}

/**
 * The one write of a decorator's sync that is the operator's own: an Event on the object when its
 * `Exposed` reason changes (Metacontroller writes the rest). A repeat of the state written last time
 * records nothing, so a resync every minute does not flood `kubectl describe`. `subject` opens the message.
 */
export async function recordExposed(
  regarding: K8sObject,
  previousState: string | undefined,
  condition: ConditionInput | undefined,
  subject: string,
  deps: HookDeps,
): Promise<ExposedOutcome> {
  if (!condition) return {};
  const { reason, status, message } = condition;
  if (previousState === reason) return {};
  await deps.events.record({
    regarding,
    reason,
    message: `${subject}: ${message}`,
    type: status === "False" ? "Warning" : "Normal",
  });
  return { recorded: reason };
}
