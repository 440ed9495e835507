/**
 * Finalize: remove the egress from Headscale — expire its pre-auth keys (the ones its Secrets
 * name, and any key tagged with exactly its tag) and delete its nodes (those carrying exactly its
 * tag) — and answer `finalized: true` only once a fresh read shows none left. A Headscale failure
 * answers `finalized: false` with a resync; the key Secrets stay until then, so their ids are not
 * lost. Without a Tailnet or credentials there is nothing reachable to clean: finalized at once.
 */
import type { HsNode, HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { objectsOf, reuseObserved } from "../../k8s/objects.js";
import { withdrawResource } from "../../metrics/resource.js";
import { previousStatus, resourceId } from "../common.js";
import { nodeLabel, nodesOwnedByTag } from "../shared/agent.js";
import { observedKeys } from "../shared/authkey.js";
import { effectiveTag, resolveWorkload } from "../shared/workload.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../types.js";
import { actCleanup } from "./act.js";
import { keyExpired } from "./keys.js";
import { withdrawEgressMetrics } from "./metrics.js";

/** While cleanup is waiting on Headscale. */
export const FINALIZE_RESYNC_SECONDS = 10;

export interface CleanupPlan {
  expireKeys: string[];
  deleteNodes: { id: string; name: string }[];
}

const sameTags = (tags: readonly string[], tag: string) => tags.length === 1 && tags[0] === tag;

/** Pure: what is left to clean up for this tag, given the keys the egress's Secrets name. */
export function planCleanup(
  tag: string,
  nodes: readonly HsNode[],
  keys: readonly HsPreAuthKey[],
  secretKeyIds: readonly string[],
  now: Date,
): CleanupPlan {
  const named = new Set(secretKeyIds);
  const byId = (a: { id: string }, b: { id: string }) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id);
  return {
    expireKeys: keys
      .filter((k) => (named.has(k.id) || sameTags(k.aclTags, tag)) && !keyExpired(k, now))
      .sort(byId)
      .map((k) => k.id),
    deleteNodes: nodesOwnedByTag(nodes, tag)
      .sort(byId)
      .map((n) => ({ id: n.id, name: nodeLabel(n) })),
  };
}

const isEmpty = (p: CleanupPlan) => p.expireKeys.length === 0 && p.deleteNodes.length === 0;

async function readPlan(view: HeadscaleView, tag: string, keyIds: string[], now: Date) {
  const [nodes, keys] = await Promise.all([view.nodes(), view.preAuthKeys()]);
  if (!nodes.ok) return { error: nodes.error.message };
  if (!keys.ok) return { error: keys.error.message };
  return { plan: planCleanup(tag, nodes.value, keys.value, keyIds, now) };
}

export async function finalizeEgress(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const status = previousStatus(req.parent);
  const who = `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;
  const done = (): FinalizeResult => {
    withdrawEgressMetrics(deps.metrics, req.parent);
    withdrawResource(deps.metrics, resourceId(req.parent));
    return { status, children: [], finalized: true };
  };
  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok) {
    deps.log.warn({ egress: who, reason: ctx.reason }, "finalized without Headscale cleanup: %s", ctx.message);
    return done();
  }
  const secrets = objectsOf(req.children, "v1", "Secret");
  const keepSecrets = secrets.filter((s) => !s.metadata.deletionTimestamp).map(reuseObserved);
  const waiting = (error: string): FinalizeResult => {
    deps.log.warn({ egress: who, error }, "finalize waiting on Headscale");
    return { status, children: keepSecrets, finalized: false, resyncAfterSeconds: FINALIZE_RESYNC_SECONDS };
  };
  const tag = effectiveTag(req.parent, ctx.settings.tagPrefix);
  const keyIds = observedKeys(secrets).map((k) => k.keyId);
  const view = deps.views.view(ctx.conn);
  const now = deps.now();

  const first = await readPlan(view, tag, keyIds, now);
  if (!first.plan) return waiting(first.error);
  if (isEmpty(first.plan)) return done();
  const errors = await actCleanup(first.plan, view);
  deps.log.info(
    { egress: who, keys: first.plan.expireKeys, nodes: first.plan.deleteNodes.map((n) => n.name) },
    "removing the egress from Headscale",
  );
  if (errors.length) return waiting(errors[0]);
  // finalized only on what Headscale shows now, not on what was asked
  const second = await readPlan(view, tag, keyIds, deps.now());
  if (!second.plan) return waiting(second.error);
  return isEmpty(second.plan) ? done() : waiting("cleanup not visible in Headscale yet");
}
