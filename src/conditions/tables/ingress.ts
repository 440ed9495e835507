/** TailnetIngress: per condition (status order), its reasons (page order) and their statuses. */
import type { ReasonTable } from "../table.js";

export const INGRESS_REASONS = {
  TagKnown: {
    Known: ["True"],
    PolicyPending: ["False"],
    Unknown: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  PolicyGranted: { Granted: ["True"], PolicyDenied: ["False"], NoTailnet: ["Unknown"] },
  Registered: {
    Registered: ["True"],
    NotRegistered: ["False"],
    Unknown: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  BackendsReachable: { Reachable: ["True"], Unreachable: ["False"], ProbeFailed: ["Unknown"] },
  TLSReady: {
    Valid: ["True"],
    TLSNotRequired: ["True"],
    TLSSecretMissing: ["False"],
    TLSSecretInvalid: ["False"],
    TLSNameMismatch: ["False"],
    TLSExpired: ["False"],
    NoTailnet: ["Unknown"],
  },
  Ready: {
    Ready: ["True"],
    InvalidSpec: ["False"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    TagUnknown: ["False"],
    InvalidDNSName: ["False"],
    DNSNameConflict: ["False"],
  },
} as const satisfies ReasonTable;
