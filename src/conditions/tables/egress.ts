/**
 * TailnetEgress: per condition (status order), its reasons (page order) and their statuses — exactly what
 * the kind produces: decideEgress (with a Tailnet, and the NoTailnet/NoAPIKey "not evaluated" path), and the
 * "not evaluated" pairs of invalidSpecResult (every condition but Ready is Unknown/InvalidSpec until a valid
 * spec was evaluated). Ready carries its own reasons and repeats the reason of the first blocking condition.
 */
import type { ReasonTable } from "../table.js";
import { AGENT_REGISTERED, AGENT_TAG_KNOWN, TENANCY_NOT_EVALUATED, TENANCY_READY } from "./agent.js";

export const EGRESS_REASONS = {
  TagKnown: AGENT_TAG_KNOWN,
  Registered: AGENT_REGISTERED,
  RoutesGranted: {
    RoutesGranted: ["True"],
    TargetNotAllowed: ["False"],
    RoutesMissing: ["False"],
    LeftOutOfPolicy: ["False"],
    ProbeFailed: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
    ProxyClassMissing: ["Unknown"],
    InvalidSpec: ["Unknown"],
    ...TENANCY_NOT_EVALUATED,
    TagInUse: ["Unknown"],
  },
  TargetsReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    OutsideTailnet: ["False"],
    ProbeFailed: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
    ProxyClassMissing: ["Unknown"],
    InvalidSpec: ["Unknown"],
    ...TENANCY_NOT_EVALUATED,
    TagInUse: ["Unknown"],
  },
  ServiceConflict: { NoConflict: ["False"], Conflict: ["True"], InvalidSpec: ["Unknown"] },
  Ready: {
    Ready: ["True"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    ProxyClassMissing: ["False"],
    InvalidSpec: ["False"],
    ...TENANCY_READY,
    TagInUse: ["False"],
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
