/**
 * The gateway's finalize in the same stages as its sync: observe (the Tailnet, then Headscale's node and key
 * lists read fresh) → plan (pure: every node of ours — bound, predecessor or unbound, online or not: the pods are
 * going away — never one that is not, and our live bootstrap keys) →
 * act (delete them, expire them, through the view) → decide (pure: release the object, or keep every child
 * and retry in 30 s). Without a Tailnet or its credentials Headscale cannot be reached: holding the object
 * forever would not clean anything up, so it is released.
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleConnection } from "../../../headscale/view.js";
import { isRecord, type K8sObject, objectsOf, reuseAllChildren } from "../../../k8s/objects.js";
import { withdrawResource } from "../../../metrics/resource.js";
import { type Cleanup, runFinalize } from "../../../pipeline/finalize.js";
import { assembleStatus, previousStatus, resourceId } from "../../../pipeline/status.js";
import type { FinalizeResult, HookDeps, HookRequest } from "../../../pipeline/types.js";
import { observedKeys } from "../../shared/authkey.js";
import { withoutStateData } from "../../shared/replica.js";
import { effectiveTag, resolveWorkload } from "../../shared/workload.js";
import { actGatewayCleanup, type GatewayCleanupOutcome } from "./act.js";
import { withdrawGatewayMetrics } from "./metrics.js";
import { describeNode, isOurs, recordedKeyIdsOf } from "./nodes.js";
import { type Seen, seen } from "./observe.js";
import type { GatewayCleanupPlan } from "./plan.js";

/** The gateway's cleanup is retried every 30 s, as it always was, rather than every FINALIZE_RESYNC_SECONDS. */
export const CLEANUP_RETRY_SECONDS = 30;

export type GatewayCleanupObservation =
  | { reachable: false }
  | {
      reachable: true;
      conn: HeadscaleConnection;
      tag: string;
      nodes: Seen<HsNode[]>;
      keys: Seen<HsPreAuthKey[]>;
      /** Key ids of the bootstrap Secrets among the children (the stable one and legacy ones). */
      secretKeyIds: string[];
      /** The key ids status names (status.node, status.nodes[], status.preAuthKeyIds). */
      recordedKeyIds?: string[];
      now: Date;
    };

export interface GatewayFinalizeDecision {
  conditions: ConditionInput[];
  /** Status fields besides conditions and observedGeneration, as the previous status had them. */
  fields: Record<string, unknown>;
  finalized: boolean;
  /** Why the cleanup must be retried. */
  error?: string;
}

export async function observeGatewayCleanup(req: HookRequest, deps: HookDeps): Promise<GatewayCleanupObservation> {
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) return { reachable: false };
  const view = deps.views.view(ctx.conn);
  const [nodes, keys] = await Promise.all([view.freshNodes(), view.freshPreAuthKeys()]);
  const recordedAll = recordedKeyIdsOf(previousStatus(req.parent));
  return {
    reachable: true,
    conn: ctx.conn,
    tag: effectiveTag(req.parent, ctx.settings.tagPrefix),
    nodes: seen(nodes),
    keys: seen(keys),
    secretKeyIds: observedKeys(objectsOf(req.children, "v1", "Secret")).map((k) => k.keyId),
    ...(recordedAll.length ? { recordedKeyIds: recordedAll } : {}),
    now: deps.now(),
  };
}

export function planGatewayCleanup(o: GatewayCleanupObservation): GatewayCleanupPlan {
  if (!o.reachable) return { release: true };
  if (!o.nodes.ok) return { release: false, cannot: o.nodes.error };
  if (!o.keys.ok) return { release: false, cannot: o.keys.error };
  const ourKeyIds = [...new Set([...o.secretKeyIds, ...(o.recordedKeyIds ?? [])])];
  const records = o.keys.value;
  const live = (id: string) => {
    const expiration = records.find((k) => k.id === id)?.expiration;
    return !!expiration && Date.parse(expiration) > o.now.getTime();
  };
  return {
    release: false,
    deleteNodes: o.nodes.value
      .filter((n) => isOurs(n, o.tag, ourKeyIds))
      .map((n) => ({ id: n.id, node: describeNode(n) })),
    expireKeys: ourKeyIds.filter(live).sort((a, b) => Number(a) - Number(b)),
  };
}

/** The status stays as it was (conditions and fields); the object goes once clean. */
export function decideGatewayCleanup(parent: K8sObject, outcome: GatewayCleanupOutcome): GatewayFinalizeDecision {
  const { conditions, observedGeneration: _g, ...fields } = previousStatus(parent);
  const kept: ConditionInput[] = (Array.isArray(conditions) ? conditions : [])
    .filter((c): c is ConditionInput => isRecord(c) && typeof c.type === "string")
    .map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message ?? "" }));
  const base = { conditions: kept, fields };
  if (outcome.ok) return { ...base, finalized: true };
  return { ...base, finalized: false, error: outcome.error };
}

type GatewayCleanup = Cleanup & { decision: GatewayFinalizeDecision };

async function cleanupGateway(req: HookRequest, deps: HookDeps): Promise<GatewayCleanup> {
  const observed = await observeGatewayCleanup(req, deps);
  const plan = planGatewayCleanup(observed);
  const view = observed.reachable ? deps.views.view(observed.conn) : undefined;
  const outcome = await actGatewayCleanup(view, plan);
  const decision = decideGatewayCleanup(req.parent, outcome);
  // out of the metrics from the first finalize on, cleaned or not: no alert fires for a gateway being deleted
  withdrawGatewayMetrics(deps.metrics, req.parent);
  withdrawResource(deps.metrics, resourceId(req.parent));
  return decision.error === undefined ? { done: true, decision } : { done: false, waiting: decision.error, decision };
}

/** Keeps every child and retries while the cleanup is incomplete (every 30 s, as the gateway always did). */
export function finalizeGateway(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  return runFinalize(req, deps, {
    cleanup: () => cleanupGateway(req, deps),
    status: ({ decision }) => assembleStatus(req, deps, decision.conditions, decision.fields, { publish: false }),
    // the StatefulSets (and a legacy Deployment) go first, so no pod re-registers a node being deleted; the
    // state Secrets stay (as metadata only) until the object is released
    keep: withoutStateData(
      reuseAllChildren(req.children).filter((c) => c.kind !== "StatefulSet" && c.kind !== "Deployment"),
    ),
    resyncAfterSeconds: CLEANUP_RETRY_SECONDS,
    waiting: (error) =>
      deps.log.warn(
        { gateway: `${req.parent.metadata.namespace}/${req.parent.metadata.name}`, error },
        "gateway cleanup failed; retrying",
      ),
  });
}
