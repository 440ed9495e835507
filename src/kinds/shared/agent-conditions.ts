/**
 * TagKnown and Registered of the agent kinds (egress, ingress): both tables embed the same reasons
 * (src/conditions/tables/agent.ts), so one typed mapping from the shared facts serves both.
 */
import { conditionNames, conditionsOf, reasonNames, type TypedCondition } from "../../conditions/table.js";
import { AGENT_REGISTERED, AGENT_TAG_KNOWN } from "../../conditions/tables/agent.js";
import type { Obs } from "../../headscale/errors.js";
import type { HsNode, HsPolicy } from "../../headscale/types.js";
import { parseHuJson } from "../../policy/hujson.js";
import { listNames, nodeLabel, nodesWithTag } from "./node-names.js";

const AGENT_CONDITIONS = { TagKnown: AGENT_TAG_KNOWN, Registered: AGENT_REGISTERED } as const;
const { cond } = conditionsOf(AGENT_CONDITIONS);
const C = conditionNames(AGENT_CONDITIONS);
const R = reasonNames(AGENT_CONDITIONS);

export type AgentCondition<T extends keyof typeof AGENT_CONDITIONS> = TypedCondition<typeof AGENT_CONDITIONS, T>;

/** TagKnown from the live policy: is the agent's tag owned? */
export function tagKnownCondition(policy: Obs<HsPolicy | null>, tag: string): AgentCondition<"TagKnown"> {
  const f = tagFact(policy, tag);
  if (f.state === "known") return cond(C.TagKnown, "True", R.Known, f.message);
  if (f.state === "pending") return cond(C.TagKnown, "False", R.PolicyPending, f.message);
  return cond(C.TagKnown, "Unknown", R.Unknown, f.message);
}

/** Registered from the node list: does a node carry the agent's tag? */
export function registeredCondition(nodes: Obs<HsNode[]>, tag: string, keyNote?: string): AgentCondition<"Registered"> {
  const f = registrationFact(nodes, tag, keyNote);
  if (f.state === "registered") return cond(C.Registered, "True", R.Registered, f.message);
  if (f.state === "absent") return cond(C.Registered, "False", R.NotRegistered, f.message);
  return cond(C.Registered, "Unknown", R.Unknown, f.message);
}

// ---- the facts behind TagKnown and Registered ----
// Neutral verdicts, no reason strings: the mappings above turn them into the typed reasons, so the wording
// stays shared and the reasons stay typed.

/** Whether the tag is a key of the live policy's tagOwners: known, pending, or unreadable (not read or not HuJSON). */
export interface TagFact {
  state: "known" | "pending" | "unreadable";
  message: string;
}

/**
 * From the live policy: known when the tag is a key of tagOwners; pending while it is not (Headscale
 * rejects an unowned tag at registration); unreadable when the policy was not read or not parsed.
 */
export function tagFact(policy: Obs<HsPolicy | null>, tag: string): TagFact {
  if (!policy.ok) {
    return { state: "unreadable", message: `the live policy could not be read: ${policy.error.message}` };
  }
  if (policy.value === null) {
    return { state: "pending", message: `no policy is stored in Headscale yet, so ${tag} is not in tagOwners` };
  }
  const owners = liveTagOwners(policy.value.policy);
  if (!owners.ok) return { state: "unreadable", message: `the live policy could not be parsed: ${owners.message}` };
  if (owners.tags.has(tag)) return { state: "known", message: `${tag} is in the live policy's tagOwners` };
  return {
    state: "pending",
    message: `${tag} is not in the live policy's tagOwners yet (the Tailnet adds it when it applies the policy; in DryRun it is never written)`,
  };
}

type TagOwners = { ok: true; tags: ReadonlySet<string> } | { ok: false; message: string };
let lastTagOwners: { text: string; owners: TagOwners } | undefined;

/**
 * The keys of the live policy's tagOwners, parsed once per policy text. Every agent's sync asks about the one
 * text the view holds, which grows with the objects (megabytes at thousands): parsing it per sync made a
 * resync round quadratic (issue 36: 55 % of the CPU at 5,000 objects). The last text is remembered; the view
 * caches the policy, so the next call usually gets the same string.
 */
export function liveTagOwners(text: string): TagOwners {
  if (lastTagOwners?.text === text) return lastTagOwners.owners;
  const parsed = parseHuJson(text);
  const map = parsed.ok ? parsed.value.tagOwners : undefined;
  const owners: TagOwners = !parsed.ok
    ? parsed
    : { ok: true, tags: new Set(map && typeof map === "object" && !Array.isArray(map) ? Object.keys(map) : []) };
  lastTagOwners = { text, owners };
  return owners;
}

/** Whether a Headscale node carries the tag: registered, absent, or unreadable (the node list was not read). */
export interface RegistrationFact {
  state: "registered" | "absent" | "unreadable";
  message: string;
}

/**
 * A Headscale node carrying the tag exists. `keyNote` explains a missing pre-auth key (e.g. Headscale
 * refused to create one); it is appended while no node is registered.
 */
export function registrationFact(nodes: Obs<HsNode[]>, tag: string, keyNote?: string): RegistrationFact {
  const note = keyNote ? `; ${keyNote}` : "";
  if (!nodes.ok) {
    return { state: "unreadable", message: `Headscale nodes could not be listed: ${nodes.error.message}${note}` };
  }
  const mine = nodesWithTag(nodes.value, tag);
  if (mine.length === 0) return { state: "absent", message: `no Headscale node carries ${tag} yet${note}` };
  const noun = mine.length === 1 ? "node carries" : "nodes carry";
  return { state: "registered", message: `${mine.length} ${noun} ${tag}: ${listNames(mine.map(nodeLabel))}` };
}
