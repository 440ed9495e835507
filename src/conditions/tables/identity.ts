/**
 * NodeIdentity (issue 32): which tailnet node each replica is, from its state Secret's device_id
 * (src/kinds/shared/replica-nodes.ts nodeIdentityVerdict). One definition for every kind that runs replicas with
 * persistent state (egress, ingress, later the gateway). On an agent a False reason does not stop Ready: the data
 * plane works, and the alert TailnetNodeIdentityChanged reports it.
 */
import { WORKLOAD_NOT_EVALUATED } from "./shared.js";

export const NODE_IDENTITY = {
  Stable: ["True"],
  Registering: ["True"],
  Migrating: ["True"],
  IdentityChanged: ["False"],
  Reregistered: ["False"],
  StateLost: ["False"],
  ForeignNode: ["False"],
  NotObserved: ["Unknown"],
  ...WORKLOAD_NOT_EVALUATED,
} as const;
