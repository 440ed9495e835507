/** Tailnet: per condition (status order), its reasons (page order) and their statuses. */
import type { ReasonTable } from "../table.js";

export const TAILNET_REASONS = {
  ApiReachable: { Reachable: ["True"], Unreachable: ["False"], Unhealthy: ["False"], CannotVerify: ["Unknown"] },
  ApiKeyValid: { Valid: ["True"], Rejected: ["False"], Error: ["Unknown"], NoAPIKey: ["False"] },
  HeadscaleCompatible: {
    Compatible: ["True"],
    Incompatible: ["False"],
    CannotVerify: ["Unknown"],
    ProbeFailed: ["Unknown"],
  },
  PolicyMode: { Database: ["True"], File: ["False"], CannotVerify: ["Unknown"] },
  SplitDNS: { NotConfigured: ["True"], CannotVerify: ["Unknown"] },
  UsersUnique: { Unique: ["True"], Duplicate: ["False"], CannotVerify: ["Unknown"] },
  PolicyRendered: {
    Rendered: ["True"],
    BaseMissing: ["False"],
    BaseInvalid: ["False"],
    PolicyEmpty: ["False"],
    CannotVerify: ["Unknown"],
    InvalidSpec: ["False"],
  },
  PolicyApplied: {
    DryRun: ["True", "False", "Unknown"],
    InSync: ["True"],
    Applied: ["True"],
    PolicyModeFile: ["False"],
    PolicyRejected: ["False"],
    AdoptionRefused: ["False"],
    NothingToApply: ["False"],
    ApplyFailed: ["False", "Unknown"],
    NoAPIKey: ["False"],
  },
} as const satisfies ReasonTable;
