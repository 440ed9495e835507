/**
 * finalize for a TailnetIngress: the agent goes (no children) and Headscale is cleaned — the nodes
 * registered with keys the ingress minted are deleted and those keys expired (cleanupIngress) — then
 * `finalized: true`. The status is kept as it was (finalize reports nothing new, publishes no metric).
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { objectsOf } from "../../../k8s/objects.js";
import { type Cleanup, runFinalize } from "../../../pipeline/finalize.js";
import { assembleStatus, previousStatus } from "../../../pipeline/status.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { observedKeys } from "../../shared/authkey.js";
import { admitObject } from "../../shared/tenancy.js";
import { effectiveTag, resolveWorkload } from "../../shared/workload.js";
import { cleanupIngress } from "./act.js";
import { ingressConditions } from "./conditions.js";
import { WAIT_RESYNC_SECONDS } from "./decide.js";
import { withdrawIngressMetrics } from "./metrics.js";

/** The previous status, unchanged. */
function keptStatus(req: HookRequest, deps: HookDeps): Record<string, unknown> {
  const prev = previousStatus(req.parent);
  const conditions = Array.isArray(prev.conditions) ? (prev.conditions as ConditionInput[]) : [];
  const kept = ingressConditions.types.flatMap((type) => {
    const c = conditions.find((x) => x?.type === type);
    return c ? [{ type, status: c.status, reason: c.reason, message: c.message }] : [];
  });
  const { conditions: _c, observedGeneration: _g, ...fields } = prev;
  return assembleStatus(req, deps, kept, fields, { publish: false });
}

const qualified = (req: HookRequest) => `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;

/**
 * Deletes the agent (no children) and cleans Headscale. Without a Tailnet or its credentials
 * nothing can be reached: the object is released (its ephemeral nodes and its keys expire on their
 * own) rather than blocking deletion forever. A Headscale failure retries.
 */
export function finalizeIngress(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const status = keptStatus(req, deps);
  return runFinalize(req, deps, {
    cleanup: () => cleanHeadscale(req, deps),
    status: () => status,
    // the sync's wait on Headscale (30 s) rather than FINALIZE_RESYNC_SECONDS, as the ingress always had
    resyncAfterSeconds: WAIT_RESYNC_SECONDS,
    waiting: (error) => deps.log.warn({ ingress: qualified(req), error }, "finalize: cleanup failed, retrying"),
    released: () => withdrawIngressMetrics(deps.metrics, req.parent),
  });
}

async function cleanHeadscale(req: HookRequest, deps: HookDeps): Promise<Cleanup> {
  const workload = resolveWorkload(req, deps, { cleanup: true });
  if (!workload.ok) {
    deps.log.warn(
      { ingress: qualified(req), reason: workload.reason },
      "finalize: Headscale not reachable, nothing cleaned",
    );
    return { done: true };
  }
  const tag = effectiveTag(req.parent, workload.settings.tagPrefix);
  const secretKeyIds = observedKeys(objectsOf(req.children, "v1", "Secret")).map((k) => k.keyId);
  // an explicit tag adopts older keys only while the Tailnet grants it (tenancy.ts ownKeyIds)
  const refused = admitObject(req.parent, workload.settings.tenancy, req.related);
  const granted = refused ? undefined : { ttlSeconds: workload.settings.authKeyTTLSeconds };
  const view = deps.views.view(workload.conn);
  const outcome = await cleanupIngress(view, req.parent, tag, secretKeyIds, granted, deps.now());
  if (outcome.deletedNodes.length || outcome.expiredKeys.length) {
    deps.log.info(
      { ingress: qualified(req), nodes: outcome.deletedNodes, keys: outcome.expiredKeys },
      "finalize: deleted nodes and expired keys",
    );
  }
  // the error is undefined only when cleanupIngress is done
  return outcome.done ? { done: true } : { done: false, waiting: outcome.error as string };
}
