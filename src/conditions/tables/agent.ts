/**
 * The conditions both agent kinds (egress, ingress) derive from the same shared facts
 * (src/kinds/shared/agent.ts tagFact/registrationFact), with the same reasons: one definition for both tables.
 */

/** Not evaluated without a Tailnet, its credentials, the named proxy class, or a valid spec. */
export const AGENT_NOT_EVALUATED = {
  NoTailnet: ["Unknown"],
  NoAPIKey: ["Unknown"],
  ProxyClassMissing: ["Unknown"],
  InvalidSpec: ["Unknown"],
} as const;

export const AGENT_TAG_KNOWN = {
  Known: ["True"],
  PolicyPending: ["False"],
  Unknown: ["Unknown"],
  ...AGENT_NOT_EVALUATED,
} as const;

export const AGENT_REGISTERED = {
  Registered: ["True"],
  NotRegistered: ["False"],
  Unknown: ["Unknown"],
  ...AGENT_NOT_EVALUATED,
} as const;
