/**
 * TailnetGateway: per condition (status order), its reasons (page order) and their statuses — exactly what
 * src/kinds/composite/gateway produces, including the "not evaluated" Unknown of NoTailnet / NoAPIKey / InvalidSpec /
 * ProxyClassMissing on
 * every condition but Ready, and every blocker reason Ready repeats.
 */
import { conditionNames, type ReasonTable, reasonNames } from "../table.js";
import { NODE_IDENTITY } from "./identity.js";
import { notEvaluated, notEvaluatedReady } from "./shared.js";

// TagInUse: its derived tag is one another object kept from before injective derivation (kept-tags.ts keptTagRefusal)
const NOT_EVALUATED = notEvaluated(
  "NoTailnet",
  "NoAPIKey",
  "InvalidSpec",
  "ProxyClassMissing",
  "NamespaceNotAllowed",
  "TagNotGranted",
  "TagInUse",
);

export const GATEWAY_REASONS = {
  Registered: {
    Provisioning: ["False"],
    FreshBlocked: ["False"],
    NotObserved: ["Unknown"],
    IdentityChanged: ["False"],
    FreshRuntimeReady: ["True"],
    ...NOT_EVALUATED,
  },
  RoutesInSync: {
    Approved: ["True"],
    NotApproved: ["False"],
    OverlapsReserved: ["False"],
    LeftOutOfPolicy: ["False"],
    NotObserved: ["Unknown"],
    ...NOT_EVALUATED,
  },
  ExitNode: {
    NotRequested: ["False"],
    ExitNodeNotAllowed: ["False"],
    PolicyDenied: ["False"],
    NotAdvertised: ["False"],
    NotApproved: ["False"],
    Approved: ["True"],
    NotObserved: ["Unknown"],
    ...NOT_EVALUATED,
  },
  DNSReady: { Serving: ["True"], ZoneNamesRefused: ["True"], NotServing: ["False"], ...NOT_EVALUATED },
  StaleNodes: {
    None: ["False", "Unknown"],
    NotObserved: ["Unknown"],
    Deleted: ["False", "True"],
    ExternallyManaged: ["True"],
    ...NOT_EVALUATED,
  },
  ClusterDNSForward: {
    Configured: ["True"],
    NotConfigured: ["False"],
    ExternallyManaged: ["True"],
    ...NOT_EVALUATED,
  },
  WorkloadCurrent: {
    PodCurrent: ["True"],
    PodTemplateStale: ["False"],
    ...NOT_EVALUATED,
  },
  ServiceReady: {
    ClusterIPAssigned: ["True", "Unknown"],
    LoadBalancerAssigned: ["True"],
    LBPending: ["False"],
    ...NOT_EVALUATED,
  },
  // issue 32: which node each replica is; a break also blocks the fresh writer (Registered), so not Ready's
  NodeIdentity: { ...NODE_IDENTITY, ...NOT_EVALUATED },
  Ready: {
    Suspended: ["False"],
    FreshRuntimeReady: ["True"],
    ...notEvaluatedReady(
      "NoTailnet",
      "NoAPIKey",
      "InvalidSpec",
      "ProxyClassMissing",
      "NamespaceNotAllowed",
      "TagNotGranted",
      "TagInUse",
    ),
    // the first blocker's reason, repeated
    Provisioning: ["False"],
    FreshBlocked: ["False"],
    NotObserved: ["False"],
    IdentityChanged: ["False"],
    NotApproved: ["False"],
    OverlapsReserved: ["False"],
    LeftOutOfPolicy: ["False"],
    ExitNodeNotAllowed: ["False"],
    PolicyDenied: ["False"],
    NotAdvertised: ["False"],
    NotServing: ["False"],
    PodTemplateStale: ["False"],
    ClusterIPAssigned: ["False"],
    LBPending: ["False"],
  },
} as const satisfies ReasonTable;

export const GatewayCondition = conditionNames(GATEWAY_REASONS);
export const GatewayReason = reasonNames(GATEWAY_REASONS);
