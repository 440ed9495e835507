/**
 * The gateway's Headscale writes, each guarded by decide(): approve the gateway's own routes
 * (read-modify-write: approve_routes replaces the whole approved set), delete stale nodes of ours,
 * and on finalize delete every node of ours and expire the bootstrap key. Outcomes are returned,
 * never thrown, and fold back into status.
 */
import { HeadscaleError } from "../../headscale/errors.js";
import type { HeadscaleView } from "../../headscale/view.js";
import type { ActOutcomes, GatewayActions } from "./decide.js";
import { describeNode, isOurs } from "./nodes.js";

const message = (e: unknown) => (e instanceof HeadscaleError ? e.message : "unexpected error talking to Headscale");
const notFound = (e: unknown) => e instanceof HeadscaleError && (e.classification === "notFound" || e.status === 404);

async function approve(
  view: HeadscaleView,
  a: NonNullable<GatewayActions["approve"]>,
): Promise<ActOutcomes["approve"]> {
  // Read the node again right before the write: someone may have approved other routes since the
  // cached list, and approve_routes with a stale set would revoke them.
  view.invalidate("nodes");
  const nodes = await view.nodes();
  if (!nodes.ok) return { ok: false, error: nodes.error.message };
  const node = nodes.value.find((n) => n.id === a.nodeId);
  if (!node) return { ok: false, error: `node ${a.nodeId} is gone` };
  const adding = a.add.filter((r) => !node.approvedRoutes.includes(r));
  if (adding.length === 0) return { ok: true };
  const next = [...node.approvedRoutes, ...adding];
  try {
    await view.client.nodes.approveRoutes(a.nodeId, next);
    return { ok: true };
  } catch (e) {
    return { ok: false, error: message(e) };
  } finally {
    view.invalidate("nodes");
  }
}

export async function actGateway(view: HeadscaleView, actions: GatewayActions): Promise<ActOutcomes> {
  const outcomes: ActOutcomes = { deleted: [] };
  if (actions.approve) outcomes.approve = await approve(view, actions.approve);
  for (const d of actions.deleteNodes) {
    try {
      await view.client.nodes.delete(d.id);
      outcomes.deleted.push(d);
    } catch (e) {
      outcomes.deleted.push(notFound(e) ? d : { ...d, error: message(e) });
    }
  }
  if (actions.deleteNodes.length) view.invalidate("nodes");
  return outcomes;
}

export type CleanupResult = { ok: true; deleted: string[]; expired: string[] } | { ok: false; error: string };

/** Finalize: delete every node of ours (never one that is not ours) and expire our bootstrap keys. */
export async function cleanupGateway(
  view: HeadscaleView,
  input: { tag: string; ourKeyIds: string[]; secretKeyIds: string[]; now: Date },
): Promise<CleanupResult> {
  view.invalidate();
  const [nodes, keys] = await Promise.all([view.nodes(), view.preAuthKeys()]);
  if (!nodes.ok) return { ok: false, error: nodes.error.message };
  if (!keys.ok) return { ok: false, error: keys.error.message };
  const deleted: string[] = [];
  const expired: string[] = [];
  try {
    for (const n of nodes.value.filter((n) => isOurs(n, input.tag, input.ourKeyIds))) {
      try {
        await view.client.nodes.delete(n.id);
      } catch (e) {
        if (!notFound(e)) throw e;
      }
      deleted.push(describeNode(n));
    }
    for (const id of input.secretKeyIds) {
      const record = keys.value.find((k) => k.id === id);
      const live = record?.expiration && Date.parse(record.expiration) > input.now.getTime();
      if (!live) continue;
      await view.client.preAuthKeys.expire(id);
      expired.push(id);
    }
  } catch (e) {
    return { ok: false, error: message(e) };
  } finally {
    view.invalidate();
  }
  return { ok: true, deleted, expired };
}
