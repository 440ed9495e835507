/**
 * Finalize, in the same words as sync: observe (the Tailnet, Headscale's nodes and keys) → plan (what is
 * left: the pre-auth keys the egress minted — recorded in status.preAuthKeyIds or named by its Secrets —
 * and the nodes registered with them; never a node or key merely carrying its tag) → act (expire, then delete) → decide `finalized: true` only
 * once a fresh read shows none left. A Headscale failure answers `finalized: false` with a resync; the key
 * Secrets stay until then, so their ids are not lost. Without a Tailnet or credentials there is nothing
 * reachable to clean: finalized at once.
 */
import type { HeadscaleView } from "../../../headscale/view.js";
import { type K8sObject, objectsOf, reuseObserved } from "../../../k8s/objects.js";
import { type Cleanup, runFinalize } from "../../../pipeline/finalize.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { observedKeys } from "../../shared/authkey.js";
import { isStateSecret, keptStateSecret } from "../../shared/replica.js";
import { admitObject, ownKeyIds } from "../../shared/tenancy.js";
import { effectiveTag, resolveWorkload } from "../../shared/workload.js";
import { actCleanup } from "./act.js";
import { withdrawEgressMetrics } from "./metrics.js";
import { type CleanupPlan, cleanupDone, planCleanup } from "./plan.js";

/** Observe and plan: what is left in Headscale for this tag, or why it could not be read. */
async function observeCleanup(
  view: HeadscaleView,
  parent: K8sObject,
  tag: string,
  keyIds: string[],
  granted: { ttlSeconds: number } | undefined,
  now: Date,
): Promise<{ plan: CleanupPlan } | { error: string }> {
  const [nodes, keys] = await Promise.all([view.nodes(), view.preAuthKeys()]);
  if (!nodes.ok) return { error: nodes.error.message };
  if (!keys.ok) return { error: keys.error.message };
  const own = ownKeyIds(parent, tag, keyIds, keys.value, granted);
  return { plan: planCleanup(nodes.value, keys.value, own, now) };
}

export function finalizeEgress(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const who = `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;
  const secrets = objectsOf(req.children, "v1", "Secret");
  return runFinalize(req, deps, {
    cleanup: () => removeFromHeadscale(req, deps, who, secrets),
    // the key Secrets stay until then, so their ids are not lost; the state Secrets stay too (a pod still running
    // keeps its node until it is deleted below), answered as metadata only: their data never travels back
    keep: secrets
      .filter((s) => !s.metadata.deletionTimestamp)
      .map((s) => (isStateSecret(s) ? keptStateSecret(s) : reuseObserved(s))),
    waiting: (error) => deps.log.warn({ egress: who, error }, "finalize waiting on Headscale"),
    released: () => withdrawEgressMetrics(deps.metrics, req.parent),
  });
}

async function removeFromHeadscale(
  req: HookRequest,
  deps: HookDeps,
  who: string,
  secrets: readonly K8sObject[],
): Promise<Cleanup> {
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) {
    deps.log.warn({ egress: who, reason: ctx.reason }, "finalized without Headscale cleanup: %s", ctx.message);
    return { done: true };
  }
  const tag = effectiveTag(req.parent, ctx.settings.tagPrefix);
  const keyIds = observedKeys(secrets).map((k) => k.keyId);
  const view = deps.views.view(ctx.conn);
  // an explicit tag adopts older keys only while the Tailnet grants it (tenancy.ts ownKeyIds)
  const refused = admitObject(req.parent, ctx.settings.tenancy, req.related);
  const granted = refused ? undefined : { ttlSeconds: ctx.settings.authKeyTTLSeconds };

  const first = await observeCleanup(view, req.parent, tag, keyIds, granted, deps.now());
  if (!("plan" in first)) return { done: false, waiting: first.error };
  if (cleanupDone(first.plan)) return { done: true };
  const errors = await actCleanup(first.plan, view);
  deps.log.info(
    { egress: who, keys: first.plan.expireKeys, nodes: first.plan.deleteNodes.map((n) => n.name) },
    "removing the egress from Headscale",
  );
  if (errors.length) return { done: false, waiting: errors[0] };
  // finalized only on what Headscale shows now, not on what was asked
  const second = await observeCleanup(view, req.parent, tag, keyIds, granted, deps.now());
  if (!("plan" in second)) return { done: false, waiting: second.error };
  return cleanupDone(second.plan) ? { done: true } : { done: false, waiting: "cleanup not visible in Headscale yet" };
}
