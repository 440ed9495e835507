/**
 * The one finalize of every composite kind (docs/architecture.md "One shape"), in the words of its sync:
 * the kind's cleanup observes, plans, acts (its writes through the view) and decides whether the object
 * may go; this runner answers. Released: no children, the resource metrics and the kind's own withdrawn,
 * `finalized: true`. Waiting: the children that must outlive the wait (the key Secrets naming keys not
 * expired yet) and a resync — Metacontroller calls finalize again until it answers finalized
 * (metacontroller docs/src/api/compositecontroller.md, "Finalize Hook").
 */
import type { K8sObject } from "../k8s/objects.js";
import { withdrawResource } from "../metrics/resource.js";
import { previousStatus, resourceId } from "./status.js";
import type { FinalizeResult, HookDeps, HookRequest } from "./types.js";

/** While a finalize waits on Headscale (a read or write failed, or its effect is not visible yet). */
export const FINALIZE_RESYNC_SECONDS = 10;

/** What a kind's cleanup ended in: the object may go, or why it must wait. */
export type Cleanup = { done: true } | { done: false; waiting: string };

/** `C`: the cleanup's result, which may carry what the kind decided (for its status and last log lines). */
export interface Finalizer<C extends Cleanup = Cleanup> {
  /** observe → plan → act → decide of the kind's cleanup; failures are a `waiting`, never thrown. */
  cleanup(): Promise<C>;
  /** The status answered (default: the previous one, unchanged). */
  status?(cleanup: C): Record<string, unknown>;
  /** Children kept while waiting (default: none). */
  keep?: readonly K8sObject[];
  /** A kind whose wait is on something slower than a retried request overrides FINALIZE_RESYNC_SECONDS. */
  resyncAfterSeconds?: number;
  /** Says why the object waits (the log line). */
  waiting(why: string): void;
  /** Once released: the kind's own metrics and last log lines (the resource metrics are the runner's). */
  released?(cleanup: C): void;
}

export async function runFinalize<C extends Cleanup>(
  req: HookRequest,
  deps: HookDeps,
  f: Finalizer<C>,
): Promise<FinalizeResult> {
  const cleanup = await f.cleanup();
  const status = f.status ? f.status(cleanup) : previousStatus(req.parent);
  if (!cleanup.done) {
    f.waiting(cleanup.waiting);
    const resyncAfterSeconds = f.resyncAfterSeconds ?? FINALIZE_RESYNC_SECONDS;
    return { status, children: [...(f.keep ?? [])], finalized: false, resyncAfterSeconds };
  }
  f.released?.(cleanup);
  withdrawResource(deps.metrics, resourceId(req.parent));
  return { status, children: [], finalized: true };
}
