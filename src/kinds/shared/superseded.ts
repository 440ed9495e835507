/**
 * An agent's superseded nodes (a pod replaced by a rollout, an eviction, a reschedule): which they are
 * (supersededNodes, pure, called in the kind's plan stage) and their removal (deleteSuperseded): a guarded
 * Headscale write through the view, made only from a node list this sync read successfully. Outcomes are
 * returned, never thrown; the node list handed to decide no longer holds the nodes that were deleted, so
 * status and the DNS records the Tailnet publishes (from the online carrier of the tag) describe the
 * current node.
 */

import type { Obs } from "../../headscale/errors.js";
import type { HsNode } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import type { HookDeps } from "../../pipeline/types.js";
import { nodeLabel } from "./node-names.js";

/** An offline node is superseded only after this long: a pod that merely reconnects keeps its node. */
export const SUPERSEDED_GRACE_SECONDS = 60;

/**
 * A node an agent pod of this object registered: with a key this object minted (`ownKeys`, see
 * tenancy.ts), exactly the tag, and a key of the agent shape (AGENT_KEY_FLAGS). Carrying the tag is never
 * enough: an admin's node may carry it too.
 */
function isAgentNode(n: HsNode, tag: string, ownKeys: ReadonlySet<string>): boolean {
  const k = n.preAuthKey;
  return (
    !!k &&
    ownKeys.has(k.id) &&
    n.tags.length === 1 &&
    n.tags[0] === tag &&
    k.reusable &&
    k.ephemeral &&
    k.aclTags.length === 1 &&
    k.aclTags[0] === tag
  );
}

/**
 * Our agent nodes a newer pod has replaced (pure). A restarted or rescheduled pod registers as a
 * new node while the old ephemeral one lingers offline (Headscale keeps it for
 * ephemeral_node_inactivity_timeout, 30 min by default) and names the new one `<host>-1`
 * (0.29 hscontrol/state: collisions get -1, -2 suffixes). Once at least `replicas` of our nodes are
 * online, every node of ours offline for SUPERSEDED_GRACE_SECONDS is one no pod will come back
 * to. Online nodes are never removed (a rollout surges one pod over `replicas`), nor anything
 * while fewer than `replicas` are online (an offline node may be a pod on its way back).
 */
export function supersededNodes(
  nodes: readonly HsNode[],
  tag: string,
  ownKeys: ReadonlySet<string>,
  replicas: number,
  now: Date,
): HsNode[] {
  const ours = nodes.filter((n) => isAgentNode(n, tag, ownKeys));
  if (ours.filter((n) => n.online).length < replicas) return [];
  const cutoff = now.getTime() - SUPERSEDED_GRACE_SECONDS * 1000;
  return ours
    .filter((n) => !n.online && (!n.lastSeen || Date.parse(n.lastSeen) <= cutoff))
    .sort((a, b) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id));
}

export interface SupersededOutcome {
  /** The node list for decide: as read, minus the nodes deleted now. */
  nodes: Obs<HsNode[]>;
  deleted: string[];
  /** Failures, by node and Headscale's message (never a key). */
  errors: string[];
}

/** Deletes the planned superseded nodes through the view (which drops its cached node list). */
export async function deleteSuperseded(
  view: HeadscaleView,
  nodes: Obs<HsNode[]>,
  stale: readonly HsNode[],
): Promise<SupersededOutcome> {
  if (!nodes.ok || !stale.length) return { nodes, deleted: [], errors: [] };
  const gone = new Set<string>();
  const deleted: string[] = [];
  const errors: string[] = [];
  for (const n of stale) {
    const outcome = await view.deleteNode(n.id);
    if (outcome.ok) {
      gone.add(n.id);
      deleted.push(nodeLabel(n));
    } else if (outcome.error.classification === "notFound" || outcome.error.status === 404) gone.add(n.id);
    else errors.push(`${nodeLabel(n)}: ${outcome.error.message}`);
  }
  return {
    nodes: gone.size ? { ...nodes, value: nodes.value.filter((n) => !gone.has(n.id)) } : nodes,
    deleted,
    errors,
  };
}

export function logSuperseded(deps: Pick<HookDeps, "log">, who: string, outcome: SupersededOutcome): void {
  if (outcome.deleted.length)
    deps.log.info({ workload: who, nodes: outcome.deleted }, "deleted superseded agent nodes");
  if (outcome.errors.length)
    deps.log.warn({ workload: who, errors: outcome.errors }, "superseded agent nodes not deleted");
}
