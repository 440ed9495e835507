/**
 * Which Headscale writes a TailnetIngress sync wants (pure); act (act.ts) carries them out: the pre-auth key
 * (shared/authkey.ts decideAuthKey) and the agent nodes a newer pod replaced.
 */
import type { HsNode } from "../../../headscale/types.js";
import { type AuthKeyPlan, decideAuthKey } from "../../shared/authkey.js";
import { supersededNodes } from "../../shared/superseded.js";
import { effectiveTag } from "../../shared/workload.js";
import { type IngressFacts, ingressOwnKeys, settingsOf } from "./facts.js";
import type { IngressSpec } from "./spec.js";

/** The Headscale writes a sync wants (pure, see planIngress); act carries them out. */
export interface IngressPlan {
  /** The effective tag, once the Tailnet's settings are known. */
  tag?: string;
  /** Headscale may be written for the key: the Tailnet resolved and this sync's reads succeeded. */
  write: boolean;
  authKey: AuthKeyPlan;
  /** Agent nodes a newer pod replaced (from a node list read in this sync), to delete. */
  superseded: HsNode[];
}

/**
 * The writes wanted (pure). The pre-auth key is written only when the Tailnet resolved and the reads of
 * this sync succeeded (a failed observation never writes); superseded nodes are deleted only from a node
 * list read in this sync, for a resolved Tailnet (the tag is known).
 */
export function planIngress(
  spec: IngressSpec,
  facts: Pick<IngressFacts, "parent" | "children" | "tailnet" | "policy" | "nodes" | "now" | "ownKeys">,
): IngressPlan {
  const { tailnet, nodes, now } = facts;
  const settings = settingsOf(tailnet);
  const tag = settings ? effectiveTag(facts.parent, settings.tagPrefix) : undefined;
  const write = tailnet.ok && facts.policy?.ok === true && nodes?.ok === true;
  const superseded =
    tailnet.ok && tag && nodes?.ok
      ? supersededNodes(
          nodes.value,
          tag,
          facts.ownKeys ?? ingressOwnKeys(facts.parent, facts.children, tag),
          spec.replicas,
          now,
        )
      : [];
  return { ...(tag ? { tag } : {}), write, authKey: decideAuthKey(facts.children, now), superseded };
}
