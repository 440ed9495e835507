/**
 * TailnetEgress: per condition (status order), its reasons (page order) and their statuses — exactly what
 * the kind produces: decideEgress (with a Tailnet, and the NoTailnet/NoAPIKey "not evaluated" path), and the
 * "not evaluated" pairs of invalidSpecResult (every condition but Ready is Unknown/InvalidSpec until a valid
 * spec was evaluated). Ready carries its own reasons and repeats the reason of the first blocking condition.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { AGENT_REGISTERED, AGENT_TAG_KNOWN } from "./agent.js";
import { NODE_IDENTITY } from "./identity.js";
import { notEvaluatedReady, WORKLOAD_NOT_EVALUATED } from "./shared.js";

export const EGRESS_REASONS = {
  TagKnown: AGENT_TAG_KNOWN,
  Registered: AGENT_REGISTERED,
  RoutesGranted: {
    RoutesGranted: ["True"],
    TargetNotAllowed: ["False"],
    RoutesMissing: ["False"],
    LeftOutOfPolicy: ["False"],
    ProbeFailed: ["Unknown"],
    ...WORKLOAD_NOT_EVALUATED,
  },
  TargetsReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    OutsideTailnet: ["False"],
    ProbeFailed: ["Unknown"],
    ...WORKLOAD_NOT_EVALUATED,
  },
  ServiceConflict: { NoConflict: ["False"], Conflict: ["True"], InvalidSpec: ["Unknown"] },
  NodeIdentity: NODE_IDENTITY,
  Ready: {
    Ready: ["True"],
    ...notEvaluatedReady(
      "NoTailnet",
      "NoAPIKey",
      "ProxyClassMissing",
      "InvalidSpec",
      "NamespaceNotAllowed",
      "TagNotGranted",
      "TagInUse",
    ),
    TagUnknown: ["False"],
    NotRegistered: ["False"],
    Unknown: ["False"],
    TargetNotAllowed: ["False"],
    RoutesMissing: ["False"],
    LeftOutOfPolicy: ["False"],
    ProbeFailed: ["False"],
    Unreachable: ["False"],
    OutsideTailnet: ["False"],
    Conflict: ["False"],
  },
} as const satisfies ReasonTable;

export const EgressCondition = conditionNames(EGRESS_REASONS);
export const EgressReason = reasonNames(EGRESS_REASONS);

/** Per-target reasons in TailnetEgress.status.targets[].reason (not a condition's: the page lists them by hand). */
export const TargetReason = {
  NotAdvertised: "NotAdvertised",
  NotApproved: "NotApproved",
  NoGrant: "NoGrant",
  /** The target is another object's agent node that does not admit this egress (node-owners.ts). */
  TargetNotAllowed: "TargetNotAllowed",
  ProbeFailed: "ProbeFailed",
  Unreachable: "Unreachable",
  OutsideTailnet: "OutsideTailnet",
} as const;
