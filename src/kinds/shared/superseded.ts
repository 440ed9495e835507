/**
 * Removing an agent's superseded nodes (see supersededNodes): a guarded Headscale write, made only
 * from a node list this sync read successfully. Outcomes are returned, never thrown; the node list
 * handed to decide no longer holds the nodes that were deleted, so status and the DNS records the
 * Tailnet publishes (from the online carrier of the tag) describe the current node.
 */
import { HeadscaleError } from "../../headscale/errors.js";
import type { HsNode } from "../../headscale/types.js";
import type { HeadscaleView, Obs } from "../../headscale/view.js";
import type { HookDeps } from "../types.js";
import { nodeLabel, supersededNodes } from "./agent.js";

export interface SupersededOutcome {
  /** The node list for decide: as read, minus the nodes deleted now. */
  nodes: Obs<HsNode[]>;
  deleted: string[];
  /** Failures, by node and Headscale's message (never a key). */
  errors: string[];
}

export async function removeSuperseded(
  view: HeadscaleView,
  nodes: Obs<HsNode[]>,
  input: { tag: string; replicas: number; now: Date },
): Promise<SupersededOutcome> {
  if (!nodes.ok) return { nodes, deleted: [], errors: [] };
  const stale = supersededNodes(nodes.value, input.tag, input.replicas, input.now);
  const gone = new Set<string>();
  const deleted: string[] = [];
  const errors: string[] = [];
  for (const n of stale) {
    try {
      await view.client.nodes.delete(n.id);
      gone.add(n.id);
      deleted.push(nodeLabel(n));
    } catch (e) {
      if (e instanceof HeadscaleError && (e.classification === "notFound" || e.status === 404)) gone.add(n.id);
      else errors.push(`${nodeLabel(n)}: ${e instanceof HeadscaleError ? e.message : "Headscale request failed"}`);
    }
  }
  if (stale.length) view.invalidate("nodes");
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
