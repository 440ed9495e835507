/** TailnetGateway: per condition (status order), its reasons (page order) and their statuses. */
import type { ReasonTable } from "../table.js";

export const GATEWAY_REASONS = {
  Registered: {
    Provisioning: ["False"],
    FreshBlocked: ["False"],
    NotObserved: ["Unknown"],
    IdentityChanged: ["False"],
    FreshRuntimeReady: ["True"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  RoutesInSync: {
    Approved: ["True"],
    NotApproved: ["False"],
    NotObserved: ["Unknown"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  DNSReady: { Serving: ["True"], NotServing: ["False"], NoTailnet: ["Unknown"], NoAPIKey: ["Unknown"] },
  StaleNodes: {
    None: ["Unknown"],
    NotObserved: ["Unknown"],
    Deleted: ["True"],
    ExternallyManaged: ["True"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  ClusterDNSForward: {
    Configured: ["True"],
    NotConfigured: ["False"],
    ExternallyManaged: ["True"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  WorkloadCurrent: {
    PodCurrent: ["True"],
    PodTemplateStale: ["False"],
    WorkloadUpdateBlocked: ["False"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  ServiceReady: {
    ClusterIPAssigned: ["Unknown"],
    LoadBalancerAssigned: ["True"],
    LBPending: ["False"],
    NoTailnet: ["Unknown"],
    NoAPIKey: ["Unknown"],
  },
  Ready: {
    Suspended: ["False"],
    FreshRuntimeReady: ["True"],
    NoTailnet: ["False"],
    NoAPIKey: ["False"],
    InvalidSpec: ["False"],
  },
} as const satisfies ReasonTable;
