/**
 * The conditions both agent kinds (egress, ingress) derive from the same shared facts
 * (src/kinds/shared/agent-conditions.ts tagFact/registrationFact), with the same reasons: one definition for both tables.
 */

/** The tenancy refusals (src/kinds/shared/tenancy.ts): the object is not evaluated, nothing is minted. */
export const TENANCY_NOT_EVALUATED = {
  NamespaceNotAllowed: ["Unknown"],
  TagNotGranted: ["Unknown"],
} as const;

/** Ready repeats a tenancy refusal. */
export const TENANCY_READY = { NamespaceNotAllowed: ["False"], TagNotGranted: ["False"] } as const;

/** Not evaluated without a Tailnet, its credentials, the named proxy class, a valid spec or the Tailnet's consent. */
export const AGENT_NOT_EVALUATED = {
  NoTailnet: ["Unknown"],
  NoAPIKey: ["Unknown"],
  ProxyClassMissing: ["Unknown"],
  InvalidSpec: ["Unknown"],
  ...TENANCY_NOT_EVALUATED,
  // a Headscale node this object did not register carries its tag: the tag is someone else's
  TagInUse: ["Unknown"],
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
