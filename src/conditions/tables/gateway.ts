/**
 * TailnetGateway: per condition (status order), its reasons (page order) and their statuses — exactly what
 * src/kinds/composite/gateway produces, including the "not evaluated" Unknown of NoTailnet / NoAPIKey / InvalidSpec /
 * ProxyClassMissing on
 * every condition but Ready, and every blocker reason Ready repeats.
 */
import type { ReasonTable } from "../table.js";
import { TENANCY_NOT_EVALUATED, TENANCY_READY } from "./agent.js";

const NOT_EVALUATED = {
  NoTailnet: ["Unknown"],
  NoAPIKey: ["Unknown"],
  InvalidSpec: ["Unknown"],
  ProxyClassMissing: ["Unknown"],
  ...TENANCY_NOT_EVALUATED,
  // its derived tag is one another object kept from before injective derivation (kept-tags.ts keptTagRefusal)
  TagInUse: ["Unknown"],
} as const;

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
    WorkloadUpdateBlocked: ["False"],
    ...NOT_EVALUATED,
  },
  ServiceReady: {
    ClusterIPAssigned: ["True", "Unknown"],
    LoadBalancerAssigned: ["True"],
    LBPending: ["False"],
    ...NOT_EVALUATED,
  },
  Ready: {
    Suspended: ["False"],
    FreshRuntimeReady: ["True"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    InvalidSpec: ["False"],
    ProxyClassMissing: ["False"],
    ...TENANCY_READY,
    TagInUse: ["False"],
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
    WorkloadUpdateBlocked: ["False"],
    ClusterIPAssigned: ["False"],
    LBPending: ["False"],
  },
} as const satisfies ReasonTable;
