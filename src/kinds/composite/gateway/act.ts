/**
 * The gateway's Headscale writes, each one the plan's and each through the view's write methods (which settle
 * into an Outcome and drop the cached part they changed): the bootstrap key (ensureAuthKey), the approval of
 * the gateway's own routes (read-modify-write: approve_routes replaces the whole approved set) and the deletion
 * of its stale nodes, then the renames back to each replica's name; a refused gateway (a withdrawn grant) has the keys it minted expired instead. Outcomes are
 * returned, never thrown, and decide folds them into status. Finalize's writes are in finalize.ts.
 */
import type { FastifyBaseLogger } from "fastify";
import type { HeadscaleError } from "../../../headscale/errors.js";
import type { HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { ensureAuthKey, observedKeys } from "../../shared/authkey.js";
import { withdrawRefusedKeys } from "../../shared/withdraw.js";
import { type GatewayObservation, type Seen, seen } from "./observe.js";
import type { BootstrapKey, GatewayApproval, GatewayCleanupPlan, GatewayPlan } from "./plan.js";
import type { GatewayRenamed } from "./renames.js";
import type { GatewaySpec } from "./spec.js";

export interface GatewayOutcome {
  /** The bootstrap key as the key work left it; absent when nothing is served. */
  key?: BootstrapKey;
  /** Set when a new key was minted in this sync: its id. The node writes then wait for the next sync. */
  minted?: string;
  /** Headscale's key list read again after the mint, so check 1 sees its record of the new key. */
  keys?: Seen<HsPreAuthKey[]>;
  approve?: { ok: true } | { ok: false; error: string };
  /** The exit pair's approvals (plan.writes.approveExit); failures named per node. */
  approveExit?: { ok: true } | { ok: false; error: string };
  deleted: { id: string; node: string; error?: string }[];
  /** The renames of plan.writes.renameNodes, each with Headscale's error when it refused. */
  renamed?: GatewayRenamed[];
  /** Older keys expired after the stable Secret proved it holds the new one; failures are retried next sync. */
  expired?: { id: string; error?: string }[];
}

/** What the plan's writes did, as decide folds them (act's GatewayOutcome; no writes: `{ deleted: [] }`). */
export type GatewayWriteOutcome = Pick<
  GatewayOutcome,
  "minted" | "approve" | "approveExit" | "deleted" | "expired" | "renamed"
>;

export const notFound = (e: HeadscaleError) => e.classification === "notFound" || e.status === 404;

async function approve(view: HeadscaleView, a: GatewayApproval): Promise<NonNullable<GatewayOutcome["approve"]>> {
  // Read the node again right before the write: someone may have approved other routes since the
  // cached list, and approve_routes with a stale set would revoke them.
  const nodes = await view.freshNodes();
  if (!nodes.ok) return { ok: false, error: nodes.error.message };
  const node = nodes.value.find((n) => n.id === a.nodeId);
  if (!node) return { ok: false, error: `node ${a.nodeId} is gone` };
  const adding = a.add.filter((r) => !node.approvedRoutes.includes(r));
  if (adding.length === 0) return { ok: true };
  const written = await view.approveRoutes(a.nodeId, [...node.approvedRoutes, ...adding]);
  return written.ok ? { ok: true } : { ok: false, error: written.error.message };
}

export async function actGateway(
  req: HookRequest,
  _spec: GatewaySpec,
  observed: GatewayObservation,
  plan: GatewayPlan,
  deps: HookDeps,
): Promise<GatewayOutcome> {
  if ("unserved" in observed) {
    // a withdrawn grant: the keys it minted are expired (shared/withdraw.ts)
    await withdrawRefusedKeys(req, deps, observed.unserved.reason);
    return { deleted: [] };
  }
  return actServed(deps.views.view(observed.conn), req.parent, observed.secrets, plan, deps.log);
}

/** The writes of a served gateway, through the view of its Tailnet's Headscale. */
async function actServed(
  view: HeadscaleView,
  parent: K8sObject,
  secrets: readonly K8sObject[],
  plan: GatewayPlan,
  log: FastifyBaseLogger,
): Promise<GatewayOutcome> {
  const work = plan.key;
  if (!work) return { deleted: [] };
  const who = `${parent.metadata.namespace ?? ""}/${parent.metadata.name}`;
  const ensured = await ensureAuthKey(work.auth, view, parent, work.mint);
  // An expired key that could not be replaced is still returned (never drop a child): name it.
  const [observed] = observedKeys(secrets);
  const kept = ensured.secret && !ensured.keyId ? observed : undefined;
  const key: BootstrapKey = kept ? { ...ensured, keyId: kept.keyId, expiresAt: kept.expiresAt } : ensured;
  if (key.keyId && key.keyId !== work.observedKeyId) {
    const why = work.auth.action === "create" ? work.auth.why : "";
    log.info({ gateway: who, keyId: key.keyId, why }, "gateway bootstrap key created");
    // createPreAuthKey dropped the cached key list: this reads Headscale's record of the new key
    return { key, minted: key.keyId, keys: seen(await view.preAuthKeys()), deleted: [] };
  }
  const outcome: GatewayOutcome = { key, deleted: [] };
  // publish first, expire after: the observed Secret proved the new key (bootstrap.ts); nodes stay logged in
  const expired: NonNullable<GatewayOutcome["expired"]> = [];
  for (const id of work.expire) {
    const done = await view.expirePreAuthKey(id);
    expired.push(done.ok || notFound(done.error) ? { id } : { id, error: done.error.message });
  }
  if (expired.length) outcome.expired = expired;
  if (plan.writes.approve) outcome.approve = await approve(view, plan.writes.approve);
  // replicas > 1: each other current node gets its own approve_routes; the failures are named per node
  const first = plan.writes.approve;
  const failed = first && outcome.approve && !outcome.approve.ok ? [`${first.node}: ${outcome.approve.error}`] : [];
  for (const a of plan.writes.moreApprovals ?? []) {
    const done = await approve(view, a);
    if (!done.ok) failed.push(`${a.node}: ${done.error}`);
  }
  if (plan.writes.moreApprovals?.length && failed.length) outcome.approve = { ok: false, error: failed.join("; ") };
  // The exit pair after the routes: each approve() re-reads the node, so the routes just approved are kept.
  const exitFailed: string[] = [];
  for (const a of plan.writes.approveExit ?? []) {
    const done = await approve(view, a);
    if (!done.ok) exitFailed.push(`${a.node}: ${done.error}`);
  }
  if (plan.writes.approveExit?.length) {
    outcome.approveExit = exitFailed.length ? { ok: false, error: exitFailed.join("; ") } : { ok: true };
  }
  for (const d of plan.writes.deleteNodes) {
    const deleted = await view.deleteNode(d.id);
    if (!deleted.ok && !notFound(deleted.error)) {
      outcome.deleted.push({ ...d, error: deleted.error.message });
      continue;
    }
    outcome.deleted.push(d);
    log.info({ gateway: who, node: d.node }, "deleted stale gateway node");
  }
  // after the deletions: the plan renames only a node whose predecessor was already gone when it was read
  const renamed: GatewayRenamed[] = [];
  for (const r of plan.writes.renameNodes ?? []) {
    const done = await view.renameNode(r.id, r.name);
    renamed.push(done.ok ? r : { ...r, error: done.error.message });
    if (done.ok) log.info({ gateway: who, node: r.id, from: r.from, name: r.name }, "renamed gateway node");
  }
  if (renamed.length) outcome.renamed = renamed;
  return outcome;
}

export type GatewayCleanupOutcome = { ok: true; deleted: string[]; expired: string[] } | { ok: false; error: string };

/** Deletes, then expires, in order; the first failure stops the rest (retried by the next finalize). */
export async function actGatewayCleanup(
  view: HeadscaleView | undefined,
  plan: GatewayCleanupPlan,
): Promise<GatewayCleanupOutcome> {
  if (plan.release) return { ok: true, deleted: [], expired: [] };
  if ("cannot" in plan) return { ok: false, error: plan.cannot };
  if (!view) return { ok: false, error: "no Headscale connection" };
  const deleted: string[] = [];
  for (const n of plan.deleteNodes) {
    const out = await view.deleteNode(n.id);
    if (!out.ok && !notFound(out.error)) return { ok: false, error: out.error.message };
    deleted.push(n.node);
  }
  const expired: string[] = [];
  for (const id of plan.expireKeys) {
    const out = await view.expirePreAuthKey(id);
    if (!out.ok) return { ok: false, error: out.error.message };
    expired.push(id);
  }
  return { ok: true, deleted, expired };
}
