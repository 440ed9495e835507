/**
 * Tailnet: per condition (status order), its reasons (page order) and their statuses — exactly what the
 * Tailnet produces. `InvalidSpec` is False on PolicyRendered (the field named) and Unknown on every other
 * condition ("not evaluated", src/pipeline/status.ts invalidSpecResult) until it was evaluated once.
 */
import type { ReasonTable } from "../table.js";

export const TAILNET_REASONS = {
  ApiReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    Unhealthy: ["False"],
    CannotVerify: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  ApiKeyValid: {
    Valid: ["True"],
    Rejected: ["False"],
    Error: ["Unknown"],
    NoAPIKey: ["False"],
    InvalidSpec: ["Unknown"],
  },
  HeadscaleCompatible: {
    Compatible: ["True"],
    Incompatible: ["False"],
    CannotVerify: ["Unknown"],
    ProbeFailed: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
  PolicyMode: { Database: ["True"], File: ["False"], CannotVerify: ["Unknown"], InvalidSpec: ["Unknown"] },
  SplitDNS: { NotConfigured: ["True"], CannotVerify: ["Unknown"], InvalidSpec: ["Unknown"] },
  UsersUnique: { Unique: ["True"], Duplicate: ["False"], CannotVerify: ["Unknown"], InvalidSpec: ["Unknown"] },
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
    InvalidSpec: ["Unknown"],
  },
  // Only while spec.headscale.apiKeyRotation.enabled (rotation.ts).
  ApiKeyRotation: {
    NotDue: ["True"],
    Renewed: ["True"],
    AwaitingConfirmation: ["Unknown"],
    OldKeyExpired: ["True"],
    CreateFailed: ["False"],
    VerifyFailed: ["False"],
    ExpireFailed: ["False"],
    NewKeyRejected: ["False"],
    CannotVerify: ["Unknown"],
    InvalidSpec: ["Unknown"],
  },
} as const satisfies ReasonTable;
