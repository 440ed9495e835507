/**
 * TagKnown and Registered of the agent kinds (egress, ingress): both tables embed the same reasons
 * (src/conditions/tables/agent.ts), so one typed mapping from the shared facts serves both.
 */
import { conditionsOf, type TypedCondition } from "../../conditions/table.js";
import { AGENT_REGISTERED, AGENT_TAG_KNOWN } from "../../conditions/tables/agent.js";
import type { HsNode, HsPolicy } from "../../headscale/types.js";
import type { Obs } from "../../headscale/view.js";
import { registrationFact, tagFact } from "./agent.js";

const AGENT_CONDITIONS = { TagKnown: AGENT_TAG_KNOWN, Registered: AGENT_REGISTERED } as const;
const { cond } = conditionsOf(AGENT_CONDITIONS);

export type AgentCondition<T extends keyof typeof AGENT_CONDITIONS> = TypedCondition<typeof AGENT_CONDITIONS, T>;

/** TagKnown from the live policy: is the agent's tag owned? */
export function tagKnownCondition(policy: Obs<HsPolicy | null>, tag: string): AgentCondition<"TagKnown"> {
  const f = tagFact(policy, tag);
  if (f.state === "known") return cond("TagKnown", "True", "Known", f.message);
  if (f.state === "pending") return cond("TagKnown", "False", "PolicyPending", f.message);
  return cond("TagKnown", "Unknown", "Unknown", f.message);
}

/** Registered from the node list: does a node carry the agent's tag? */
export function registeredCondition(nodes: Obs<HsNode[]>, tag: string, keyNote?: string): AgentCondition<"Registered"> {
  const f = registrationFact(nodes, tag, keyNote);
  if (f.state === "registered") return cond("Registered", "True", "Registered", f.message);
  if (f.state === "absent") return cond("Registered", "False", "NotRegistered", f.message);
  return cond("Registered", "Unknown", "Unknown", f.message);
}
