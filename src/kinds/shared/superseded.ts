/**
 * Removing an agent's superseded nodes (planned by supersededNodes in the kind's plan stage): a guarded
 * Headscale write through the view, made only from a node list this sync read successfully. Outcomes are
 * returned, never thrown; the node list handed to decide no longer holds the nodes that were deleted, so
 * status and the DNS records the Tailnet publishes (from the online carrier of the tag) describe the
 * current node.
 */
import type { HsNode } from "../../headscale/types.js";
import type { HeadscaleView, Obs } from "../../headscale/view.js";
import type { HookDeps } from "../../pipeline/types.js";
import { nodeLabel } from "./agent.js";

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
