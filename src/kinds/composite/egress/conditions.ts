/**
 * The egress's own conditions over the target verdicts (pure): RoutesGranted, TargetsReachable, and the Ready
 * staircase over every decided condition (decide.ts assembles them; docs/reference/reasons/egress.md).
 */
import { conditionsOf, type ReasonOf, type TypedCondition } from "../../../conditions/table.js";
import {
  EgressCondition as C,
  EGRESS_REASONS,
  EgressReason as R,
  TargetReason,
} from "../../../conditions/tables/egress.js";
import { type AgentObservation, ROUTE_MISSING, type TargetVerdict } from "./targets.js";

const { cond, allows } = conditionsOf(EGRESS_REASONS);
type EgressType = keyof typeof EGRESS_REASONS & string;
/** A condition of the egress table: of type T (default: any type, each with its own reasons). */
export type EgressCond<T extends EgressType = EgressType> = {
  [K in T]: TypedCondition<typeof EGRESS_REASONS, K>;
}[T];
type ReadyReason = ReasonOf<typeof EGRESS_REASONS, "Ready">;

const MAX_LISTED_TARGETS = 10;

function listed(items: readonly string[]): string {
  if (items.length <= MAX_LISTED_TARGETS) return items.join("; ");
  return `${items.slice(0, MAX_LISTED_TARGETS).join("; ")}; and ${items.length - MAX_LISTED_TARGETS} more`;
}

export function routesGrantedCondition(
  agents: AgentObservation,
  verdicts: readonly TargetVerdict[],
): EgressCond<"RoutesGranted"> {
  const type = "RoutesGranted";
  const refused = verdicts.filter((v) => v.route.reason === TargetReason.TargetNotAllowed);
  if (refused.length) {
    return cond(type, "False", R.TargetNotAllowed, listed(refused.map((v) => `${v.name}: ${v.route.message}`)));
  }
  if (!agents.ok) return cond(type, "Unknown", R.ProbeFailed, agents.message);
  const missing = verdicts.filter((v) => ROUTE_MISSING.has(v.route.reason));
  if (missing.length) {
    return cond(
      type,
      "False",
      R.RoutesMissing,
      listed(missing.map((v) => `${v.name} ${v.route.reason}: ${v.route.message}`)),
    );
  }
  const unknown = verdicts.filter((v) => v.route.reason === TargetReason.ProbeFailed);
  if (unknown.length) {
    return cond(type, "Unknown", R.ProbeFailed, listed(unknown.map((v) => `${v.name}: ${v.route.message}`)));
  }
  const n = verdicts.length;
  return cond(type, "True", R.RoutesGranted, `${n} ${n === 1 ? "target is" : "targets are"} in the agent's netmap`);
}

export function targetsReachableCondition(
  agents: AgentObservation,
  all: readonly TargetVerdict[],
): EgressCond<"TargetsReachable"> {
  const type = "TargetsReachable";
  if (!agents.ok) return cond(type, "Unknown", R.ProbeFailed, agents.message);
  // a refused target is RoutesGranted's to report: the agent is never granted it
  const verdicts = all.filter((v) => v.reason !== TargetReason.TargetNotAllowed);
  const down = verdicts.flatMap((v) => (v.dial.state === "unreachable" ? [`${v.name}: ${v.dial.error}`] : []));
  if (down.length) return cond(type, "False", R.Unreachable, listed(down));
  const outside = verdicts.flatMap((v) => (v.dial.state === "outside" ? [`${v.name}: ${v.dial.message}`] : []));
  if (outside.length) return cond(type, "False", R.OutsideTailnet, listed(outside));
  const unknown = verdicts.flatMap((v) => (v.dial.state === "unknown" ? [`${v.name}: ${v.dial.message}`] : []));
  if (unknown.length) return cond(type, "Unknown", R.ProbeFailed, listed(unknown));
  const n = verdicts.length;
  return cond(type, "True", R.Reachable, `${n} ${n === 1 ? "target answers" : "targets answer"} the agent's probe`);
}

const isReadyReason = (reason: string): reason is ReadyReason => allows(C.Ready, "False", reason);

/**
 * The Ready staircase over already decided conditions (exported for the staircase test): TagUnknown while
 * TagKnown is not True, then the first of Registered, RoutesGranted, TargetsReachable that is not True, then
 * ServiceConflict=True, each repeated with its reason and message.
 */
export function egressReady(conditions: {
  tagKnown: EgressCond<"TagKnown">;
  registered: EgressCond<"Registered">;
  routesGranted: EgressCond<"RoutesGranted">;
  targetsReachable: EgressCond<"TargetsReachable">;
  serviceConflict: EgressCond<"ServiceConflict">;
}): EgressCond<"Ready"> {
  const { tagKnown, registered, routesGranted, targetsReachable, serviceConflict } = conditions;
  if (tagKnown.status !== "True") return cond(C.Ready, "False", R.TagUnknown, tagKnown.message);
  const blocker = [registered, routesGranted, targetsReachable].find((c) => c.status !== "True");
  const first = blocker ?? (serviceConflict.status !== "False" ? serviceConflict : undefined);
  if (!first) return cond(C.Ready, "True", R.Ready, "every target is reachable through the agent");
  if (!isReadyReason(first.reason)) throw new Error(`Ready cannot repeat ${first.type}=${first.reason}`);
  return cond(C.Ready, "False", first.reason, first.message);
}
