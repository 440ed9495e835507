/**
 * Finalize: expire the keys this object minted — status.preAuthKeyIds (editors cannot write status) and the
 * key its Secret is proven to hold with exactly this spec's shape (plan.ts) — and nothing else: no key merely
 * carrying its tags, and no machine (machines outside the cluster are not the operator's to delete; they keep
 * their node keys). finalized only once a fresh read shows none of them valid. A Headscale failure answers
 * finalized: false with a resync and keeps the Secret; without a Tailnet or credentials there is nothing
 * reachable to clean, so it is finalized at once.
 */
import type { HeadscaleView } from "../../../headscale/view.js";
import { findObject, reuseObserved } from "../../../k8s/objects.js";
import { type Cleanup, runFinalize } from "../../../pipeline/finalize.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { resolveWorkload } from "../../shared/workload.js";
import { expireInOrder } from "./act.js";
import { observedAuthKeySecret } from "./children.js";
import { withdrawAuthKeyMetrics } from "./metrics.js";
import { ownedForCleanup, planRetireAll } from "./plan.js";
import { readAuthKeySpec } from "./spec.js";

export function finalizeAuthKey(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const who = `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;
  const spec = readAuthKeySpec(req.parent);
  const raw = findObject(req.children, "v1", "Secret", spec.secretName, req.parent.metadata.namespace);
  return runFinalize(req, deps, {
    cleanup: () => expireOwnKeys(req, deps, who),
    // the Secret stays while its key may still be valid
    keep: raw && !raw.metadata.deletionTimestamp ? [reuseObserved(raw)] : [],
    waiting: (error) => deps.log.warn({ authkey: who, error }, "finalize waiting on Headscale"),
    released: () => withdrawAuthKeyMetrics(deps.metrics, req.parent),
  });
}

async function expireOwnKeys(req: HookRequest, deps: HookDeps, who: string): Promise<Cleanup> {
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) {
    deps.log.warn({ authkey: who, reason: ctx.reason }, "finalized without Headscale cleanup: %s", ctx.message);
    return { done: true };
  }
  const spec = readAuthKeySpec(req.parent);
  const view = deps.views.view(ctx.conn);
  const left = async (): Promise<{ ids: string[] } | { error: string }> => {
    const keys = await view.freshPreAuthKeys();
    if (!keys.ok) return { error: keys.error.message };
    // the Secret's key counts as minted here when the listing proves it and its shape is this spec's
    const secret = observedAuthKeySecret(req.children, req.parent, spec.secretName);
    const owned = ownedForCleanup(req.parent, spec, secret, keys.value);
    return { ids: planRetireAll(owned, keys.value, deps.now()) };
  };
  return cleanup(view, left, who, deps);
}

async function cleanup(
  view: HeadscaleView,
  left: () => Promise<{ ids: string[] } | { error: string }>,
  who: string,
  deps: Pick<HookDeps, "log">,
): Promise<Cleanup> {
  const first = await left();
  if ("error" in first) return { done: false, waiting: first.error };
  if (!first.ids.length) return { done: true };
  const expired = await expireInOrder(view, first.ids);
  if (expired.error !== undefined) return { done: false, waiting: expired.error };
  deps.log.info({ authkey: who, keys: first.ids }, "expired the pre-auth keys this object minted");
  // finalized only on what Headscale shows now, not on what was asked
  const second = await left();
  if ("error" in second) return { done: false, waiting: second.error };
  return second.ids.length ? { done: false, waiting: "expiry not visible in Headscale yet" } : { done: true };
}
