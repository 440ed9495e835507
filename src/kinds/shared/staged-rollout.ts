/**
 * The staged rollout of a proxy's replica StatefulSets (issue 32: one StatefulSet of one pod per replica, so
 * Kubernetes' own RollingUpdate never orders them; the gateway and the agents share this rule). A template change
 * (an operator upgrade, a TailnetProxyClass edit, a new config hash) reaches one replica at a time: the lowest
 * stale replica gets the new template only while every other replica's StatefulSet is settled; the others are
 * answered with their observed template. So the other replicas keep serving (Headscale fails the gateway's routes
 * over; an ingress's names keep every online node's address) while one restarts, and a bad template stops at one
 * replica (its pod never gets ready, so nothing else rolls). Not blocked: a replica being created (nothing runs
 * yet), a removed one (its StatefulSet just goes), replicas 1 (a restart gap of the same node: its state Secret
 * keeps the identity), a suspended proxy (scaled to 0, nothing serves). Templates are compared by their stamp
 * (template-hash.ts), never as JSON: the observed template carries the API server's defaults.
 */
import { isRecord, type K8sObject, recordOf, reuseObserved } from "../../k8s/objects.js";
import { replicaIndexOf } from "./replica.js";
import { stampOf } from "./template-hash.js";

const num = (v: unknown) => (typeof v === "number" ? v : 0);
const stamp = (w: K8sObject | undefined) => stampOf(isRecord(w?.spec) ? w.spec.template : undefined);
const where = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/**
 * A StatefulSet the controller has caught up with: its one pod runs the current revision and is ready (kubernetes
 * pkg/controller/statefulset stateful_set_control.go sets currentRevision to updateRevision once every pod is
 * updated and ready).
 */
export function settled(sts: K8sObject): boolean {
  const status = recordOf(sts.status);
  const spec = recordOf(sts.spec);
  return (
    num(status.observedGeneration) >= (sts.metadata.generation ?? 0) &&
    num(status.readyReplicas) >= num(spec.replicas) &&
    status.currentRevision === status.updateRevision
  );
}

export interface StageOptions {
  /** The spec's replica count: an observed StatefulSet at or above it is being removed and holds nothing back. */
  replicas: number;
  /** Suspended: every StatefulSet scales to 0 at once (nothing serves, so nothing waits). */
  suspended?: boolean;
}

/** `want` with the observed template of `live` (its last-applied one when recorded, reuseObserved). */
function keepTemplate(want: K8sObject, live: K8sObject): K8sObject {
  const template = recordOf(reuseObserved(live).spec).template;
  return { ...want, spec: { ...recordOf(want.spec), template } };
}

/**
 * Pure: the answer with its replica StatefulSets staged. `answer` holds the StatefulSets as rendered now (among
 * other children, which pass through unchanged, in place); `observed` the live StatefulSets by replica index. A
 * rendered StatefulSet with no live one is a creation and goes as rendered.
 */
export function stageRollout(
  answer: readonly K8sObject[],
  observed: ReadonlyMap<number, K8sObject>,
  opts: StageOptions,
): K8sObject[] {
  const unsettled = [...observed].filter(([i, s]) => i < opts.replicas && !settled(s)).map(([i]) => i);
  const updates = answer
    .map((o, at) => ({ o, at, i: o.kind === "StatefulSet" ? replicaIndexOf(o) : undefined }))
    .filter((x): x is { o: K8sObject; at: number; i: number } => x.i !== undefined && observed.has(x.i))
    .sort((a, b) => a.i - b.i);
  const held = new Map<number, K8sObject>();
  let rolling = false;
  for (const { o, at, i } of updates) {
    const live = observed.get(i) as K8sObject;
    const stale = stamp(live) !== stamp(o);
    const othersBusy = rolling || unsettled.some((j) => j !== i);
    if (!stale || opts.suspended || !othersBusy) rolling ||= stale;
    else held.set(at, keepTemplate(o, live));
  }
  return answer.map((o, at) => held.get(at) ?? o);
}

/** How far the StatefulSets are from the templates rendered in this sync. */
export interface RolloutProgress {
  /** Rendered StatefulSets. */
  total: number;
  /** Those that exist, carry the rendered template and are settled. */
  current: number;
  /** Names of rendered StatefulSets that do not exist yet. */
  missing: string[];
  /** One sentence per existing StatefulSet that is not current. */
  problems: string[];
  /**
   * A template change is under way: a StatefulSet does not carry the rendered template yet, or its controller
   * has not finished rolling it (currentRevision behind updateRevision). A pod that is merely unready at its
   * current revision (an ingress whose backend is down fails /readyz) is a problem, not a rollout.
   */
  changing: boolean;
}

/** Pure: each rendered StatefulSet against its observed one (by name), by stamp and settledness. */
export function rolloutProgress(observed: readonly K8sObject[], rendered: readonly K8sObject[]): RolloutProgress {
  const byName = new Map(observed.map((o) => [o.metadata.name, o]));
  const missing = rendered.filter((r) => !byName.has(r.metadata.name)).map((r) => r.metadata.name);
  let current = 0;
  let changing = false;
  const problems: string[] = [];
  for (const want of rendered) {
    const live = byName.get(want.metadata.name);
    if (!live) continue;
    const liveStamp = stamp(live);
    const renderedStamp = stamp(want);
    const status = recordOf(live.status);
    changing ||= liveStamp !== renderedStamp || status.currentRevision !== status.updateRevision;
    if (liveStamp !== renderedStamp) {
      problems.push(
        `StatefulSet ${where(live)} does not carry the rendered pod template yet (live ${liveStamp ?? "unstamped"}, rendered ${renderedStamp})`,
      );
      continue;
    }
    if (!settled(live)) {
      problems.push(
        `StatefulSet ${where(live)} rollout in progress: ${num(status.readyReplicas)} of ${num(recordOf(live.spec).replicas)} pod ready at revision ${String(status.currentRevision ?? "unknown")}`,
      );
      continue;
    }
    current++;
  }
  return { total: rendered.length, current, missing, problems, changing };
}

/** The rollout in words (the gateway's WorkloadCurrent message, an agent's Ready note); undefined when none runs. */
export function rollingMessage(p: RolloutProgress): string | undefined {
  return p.problems.length ? `rolling ${p.current} of ${p.total} current: ${p.problems.join("; ")}` : undefined;
}
