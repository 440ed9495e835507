/**
 * Tailnet: per condition (status order), its reasons (page order) and their statuses — exactly what the
 * Tailnet produces. `InvalidSpec` is False on PolicyRendered (the field named) and Unknown on every other
 * condition ("not evaluated", src/pipeline/status.ts invalidSpecResult) until it was evaluated once.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { notEvaluated } from "./shared.js";

export const TAILNET_REASONS = {
  ApiReachable: {
    Reachable: ["True"],
    Unreachable: ["False"],
    Unhealthy: ["False"],
    CannotVerify: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
  },
  ApiKeyValid: {
    Valid: ["True"],
    Rejected: ["False"],
    Error: ["Unknown"],
    NoAPIKey: ["False"],
    ...notEvaluated("InvalidSpec"),
  },
  HeadscaleCompatible: {
    Compatible: ["True"],
    Incompatible: ["False"],
    CannotVerify: ["Unknown"],
    ProbeFailed: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
  },
  PolicyMode: { Database: ["True"], File: ["False"], CannotVerify: ["Unknown"], ...notEvaluated("InvalidSpec") },
  SplitDNS: { NotConfigured: ["True"], CannotVerify: ["Unknown"], ...notEvaluated("InvalidSpec") },
  UsersUnique: { Unique: ["True"], Duplicate: ["False"], CannotVerify: ["Unknown"], ...notEvaluated("InvalidSpec") },
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
    PolicyTooLarge: ["False"],
    ApplyFailed: ["False", "Unknown"],
    NoAPIKey: ["False"],
    ClusterNameTaken: ["False"],
    LegacyWriter: ["False"],
    WriteContended: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
  },
  // This cluster's section among the other clusters' sections of one Headscale policy (policy/sections.ts).
  SharedPolicy: {
    Exclusive: ["True"],
    ClaimsRefused: ["False"],
    ClaimsContested: ["False"],
    BaseHeldElsewhere: ["False"],
    ClusterNameTaken: ["False"],
    CannotVerify: ["Unknown"],
    ...notEvaluated("InvalidSpec"),
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
    ...notEvaluated("InvalidSpec"),
  },
} as const satisfies ReasonTable;

export const TailnetCondition = conditionNames(TAILNET_REASONS);
export const TailnetReason = reasonNames(TAILNET_REASONS);
