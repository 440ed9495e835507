/**
 * Every condition type and reason the operator writes, one `as const` object per kind, so a typo
 * fails `tsc`. test/conditions/reasons-doc.test.ts checks these against docs/reference/reasons.md
 * both ways.
 */

/** Reasons shared by the workload kinds. */
export const CommonReason = {
  InvalidSpec: "InvalidSpec",
  NoTailnet: "NoTailnet",
  NoAPIKey: "NoAPIKey",
  /** spec.proxyClassName names a TailnetProxyClass that does not exist (egress, ingress, gateway). */
  ProxyClassMissing: "ProxyClassMissing",
  /** The Tailnet's spec.tenancy refuses the object (src/kinds/shared/tenancy.ts): nothing minted or written. */
  NamespaceNotAllowed: "NamespaceNotAllowed",
  TagNotGranted: "TagNotGranted",
  TagInUse: "TagInUse",
  Ready: "Ready",
} as const;

export const TailnetCondition = {
  ApiReachable: "ApiReachable",
  ApiKeyValid: "ApiKeyValid",
  HeadscaleCompatible: "HeadscaleCompatible",
  PolicyMode: "PolicyMode",
  SplitDNS: "SplitDNS",
  UsersUnique: "UsersUnique",
  PolicyRendered: "PolicyRendered",
  PolicyApplied: "PolicyApplied",
} as const;

export const TailnetReason = {
  Reachable: "Reachable",
  Unreachable: "Unreachable",
  Unhealthy: "Unhealthy",
  Valid: "Valid",
  Rejected: "Rejected",
  Error: "Error",
  Compatible: "Compatible",
  Incompatible: "Incompatible",
  CannotVerify: "CannotVerify",
  ProbeFailed: "ProbeFailed",
  Database: "Database",
  File: "File",
  NotConfigured: "NotConfigured",
  Unique: "Unique",
  Duplicate: "Duplicate",
  Rendered: "Rendered",
  BaseMissing: "BaseMissing",
  BaseInvalid: "BaseInvalid",
  PolicyEmpty: "PolicyEmpty",
  InvalidSpec: "InvalidSpec",
  DryRun: "DryRun",
  InSync: "InSync",
  Applied: "Applied",
  PolicyModeFile: "PolicyModeFile",
  PolicyRejected: "PolicyRejected",
  AdoptionRefused: "AdoptionRefused",
  NothingToApply: "NothingToApply",
  ApplyFailed: "ApplyFailed",
  NoAPIKey: "NoAPIKey",
  NotDue: "NotDue",
  Renewed: "Renewed",
  AwaitingConfirmation: "AwaitingConfirmation",
  OldKeyExpired: "OldKeyExpired",
  CreateFailed: "CreateFailed",
  VerifyFailed: "VerifyFailed",
  ExpireFailed: "ExpireFailed",
  NewKeyRejected: "NewKeyRejected",
} as const;

export const EgressCondition = {
  TagKnown: "TagKnown",
  Registered: "Registered",
  RoutesGranted: "RoutesGranted",
  TargetsReachable: "TargetsReachable",
  ServiceConflict: "ServiceConflict",
  Ready: "Ready",
} as const;

export const EgressReason = {
  Known: "Known",
  Unknown: "Unknown",
  PolicyPending: "PolicyPending",
  TagUnknown: "TagUnknown",
  Registered: "Registered",
  NotRegistered: "NotRegistered",
  RoutesGranted: "RoutesGranted",
  RoutesMissing: "RoutesMissing",
  Reachable: "Reachable",
  Unreachable: "Unreachable",
  OutsideTailnet: "OutsideTailnet",
  ProbeFailed: "ProbeFailed",
  Conflict: "Conflict",
  NoConflict: "NoConflict",
  NoTailnet: "NoTailnet",
  NoAPIKey: "NoAPIKey",
  ProxyClassMissing: "ProxyClassMissing",
  InvalidSpec: "InvalidSpec",
  Ready: "Ready",
  LeftOutOfPolicy: "LeftOutOfPolicy",
} as const;

/** Per-target reasons in TailnetEgress.status.targets[].reason. */
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

export const IngressCondition = {
  TagKnown: "TagKnown",
  PolicyGranted: "PolicyGranted",
  Registered: "Registered",
  BackendsReachable: "BackendsReachable",
  TLSReady: "TLSReady",
  Ready: "Ready",
} as const;

export const IngressReason = {
  Known: "Known",
  Unknown: "Unknown",
  PolicyPending: "PolicyPending",
  TagUnknown: "TagUnknown",
  Granted: "Granted",
  PolicyDenied: "PolicyDenied",
  Registered: "Registered",
  NotRegistered: "NotRegistered",
  NodesOffline: "NodesOffline",
  Reachable: "Reachable",
  Unreachable: "Unreachable",
  ProbeFailed: "ProbeFailed",
  Valid: "Valid",
  TLSNotRequired: "TLSNotRequired",
  TLSSecretMissing: "TLSSecretMissing",
  TLSSecretInvalid: "TLSSecretInvalid",
  TLSNameMismatch: "TLSNameMismatch",
  TLSExpired: "TLSExpired",
  InvalidDNSName: "InvalidDNSName",
  DNSNameConflict: "DNSNameConflict",
  DNSNameReserved: "DNSNameReserved",
  NoTailnet: "NoTailnet",
  NoAPIKey: "NoAPIKey",
  ProxyClassMissing: "ProxyClassMissing",
  InvalidSpec: "InvalidSpec",
  Ready: "Ready",
  LeftOutOfPolicy: "LeftOutOfPolicy",
} as const;

export const SiteCondition = {
  RouteConflict: "RouteConflict",
  UnmanagedOverlap: "UnmanagedOverlap",
  Advertised: "Advertised",
  Approved: "Approved",
  Ready: "Ready",
} as const;

export const SiteReason = {
  NoConflict: "NoConflict",
  OverlapsReserved: "OverlapsReserved",
  OverlapsSite: "OverlapsSite",
  None: "None",
  Unmanaged: "Unmanaged",
  Advertised: "Advertised",
  NotAdvertised: "NotAdvertised",
  Approved: "Approved",
  NotApproved: "NotApproved",
  NotObserved: "NotObserved",
  /** Finalize: the site's route approvals wait for the live policy to drop its autoApprovers. */
  Withdrawing: "Withdrawing",
  NoTailnet: "NoTailnet",
  NoAPIKey: "NoAPIKey",
  InvalidSpec: "InvalidSpec",
  Ready: "Ready",
  LeftOutOfPolicy: "LeftOutOfPolicy",
} as const;

export const GatewayCondition = {
  Registered: "Registered",
  RoutesInSync: "RoutesInSync",
  ExitNode: "ExitNode",
  DNSReady: "DNSReady",
  StaleNodes: "StaleNodes",
  ClusterDNSForward: "ClusterDNSForward",
  WorkloadCurrent: "WorkloadCurrent",
  ServiceReady: "ServiceReady",
  Ready: "Ready",
} as const;

export const GatewayReason = {
  Suspended: "Suspended",
  ZoneNamesRefused: "ZoneNamesRefused",
  NotObserved: "NotObserved",
  Provisioning: "Provisioning",
  FreshBlocked: "FreshBlocked",
  IdentityChanged: "IdentityChanged",
  FreshRuntimeReady: "FreshRuntimeReady",
  Approved: "Approved",
  NotApproved: "NotApproved",
  Serving: "Serving",
  NotServing: "NotServing",
  None: "None",
  Deleted: "Deleted",
  ExternallyManaged: "ExternallyManaged",
  Configured: "Configured",
  NotConfigured: "NotConfigured",
  PodCurrent: "PodCurrent",
  PodTemplateStale: "PodTemplateStale",
  WorkloadUpdateBlocked: "WorkloadUpdateBlocked",
  LoadBalancerAssigned: "LoadBalancerAssigned",
  LBPending: "LBPending",
  ClusterIPAssigned: "ClusterIPAssigned",
  NoTailnet: "NoTailnet",
  NoAPIKey: "NoAPIKey",
  ProxyClassMissing: "ProxyClassMissing",
  InvalidSpec: "InvalidSpec",
  NotRequested: "NotRequested",
  ExitNodeNotAllowed: "ExitNodeNotAllowed",
  NotAdvertised: "NotAdvertised",
  OverlapsReserved: "OverlapsReserved",
  PolicyDenied: "PolicyDenied",
  LeftOutOfPolicy: "LeftOutOfPolicy",
} as const;

export const ALL_REASONS = {
  Tailnet: { conditions: TailnetCondition, reasons: TailnetReason },
  TailnetEgress: { conditions: EgressCondition, reasons: { ...EgressReason, ...TargetReason } },
  TailnetIngress: { conditions: IngressCondition, reasons: IngressReason },
  TailnetSite: { conditions: SiteCondition, reasons: SiteReason },
  TailnetGateway: { conditions: GatewayCondition, reasons: GatewayReason },
} as const;
