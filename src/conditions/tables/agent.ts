/**
 * The conditions both agent kinds (egress, ingress) derive from the same shared facts
 * (src/kinds/shared/agent-conditions.ts tagFact/registrationFact), with the same reasons: one definition for both tables.
 */
import { WORKLOAD_NOT_EVALUATED } from "./shared.js";

export const AGENT_TAG_KNOWN = {
  Known: ["True"],
  PolicyPending: ["False"],
  Unknown: ["Unknown"],
  ...WORKLOAD_NOT_EVALUATED,
} as const;

export const AGENT_REGISTERED = {
  Registered: ["True"],
  NotRegistered: ["False"],
  Unknown: ["Unknown"],
  ...WORKLOAD_NOT_EVALUATED,
} as const;
