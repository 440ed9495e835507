/**
 * TailnetIngress: per condition (status order), its reasons (page order) and their statuses — exactly
 * what the kind produces: decideIngress, and the "not evaluated" pairs of invalidSpecResult (every
 * condition but Ready is Unknown/InvalidSpec until a valid spec was evaluated). Ready carries its own
 * reasons and repeats the reason of the first blocking condition.
 */
import type { ReasonTable } from "../table.js";
import { AGENT_REGISTERED, AGENT_TAG_KNOWN, TENANCY_READY } from "./agent.js";

export const INGRESS_REASONS = {
  TagKnown: AGENT_TAG_KNOWN,
  PolicyGranted: {
    Granted: ["True"],
    PolicyDenied: ["False"],
    LeftOutOfPolicy: ["False"],
    NoTailnet: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  Registered: AGENT_REGISTERED,
  BackendsReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    ProbeFailed: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  TLSReady: {
    Valid: ["True"],
    TLSNotRequired: ["True"],
    TLSSecretMissing: ["False"],
    TLSSecretInvalid: ["False"],
    TLSNameMismatch: ["False"],
    TLSExpired: ["False"],
    NoTailnet: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  Ready: {
    Ready: ["True"],
    InvalidSpec: ["False"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    ProxyClassMissing: ["False"],
    ...TENANCY_READY,
    TagInUse: ["False"],
    TagUnknown: ["False"],
    InvalidDNSName: ["False"],
    DNSNameReserved: ["False"],
    DNSNameConflict: ["False"],
    NotRegistered: ["False"],
    NodesOffline: ["False"],
    PolicyDenied: ["False"],
    LeftOutOfPolicy: ["False"],
    TLSSecretMissing: ["False"],
    TLSSecretInvalid: ["False"],
    TLSNameMismatch: ["False"],
    TLSExpired: ["False"],
    Unreachable: ["False"],
    ProbeFailed: ["False"],
    Unknown: ["False"],
  },
} as const satisfies ReasonTable;
