/** TailnetEgress: per condition (status order), its reasons (page order) and their statuses. */
import type { ReasonTable } from "../table.js";

export const EGRESS_REASONS = {
  TagKnown: {
    Known: ["True"],
    PolicyPending: ["False"],
    Unknown: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  Registered: {
    Registered: ["True"],
    NotRegistered: ["False"],
    Unknown: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  RoutesGranted: {
    RoutesGranted: ["True"],
    RoutesMissing: ["False"],
    ProbeFailed: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  TargetsReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    OutsideTailnet: ["False"],
    ProbeFailed: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  ServiceConflict: { NoConflict: ["False"], Conflict: ["True"] },
  Ready: {
    Ready: ["True"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    InvalidSpec: ["False"],
    TagUnknown: ["False"],
    NotRegistered: ["False"],
    Unknown: ["False"],
    RoutesMissing: ["False"],
    ProbeFailed: ["False"],
    Unreachable: ["False"],
    OutsideTailnet: ["False"],
    Conflict: ["False"],
  },
} as const satisfies ReasonTable;
