/**
 * What the built-in workload controllers add to a Deployment or StatefulSet the loop writes: its status and,
 * with `agentPods`, its Pods. The StatefulSet side follows kubernetes v1.35 pkg/controller/statefulset
 * (stateful_set_utils.go newVersionedStatefulSetPod: pod `<sts>-<i>` with the `apps.kubernetes.io/pod-index`,
 * `statefulset.kubernetes.io/pod-name` and `controller-revision-hash` labels; a pod is replaced only when its
 * revision is no longer the update revision), done at once: every rollout completes within the write.
 */
import { createHash } from "node:crypto";
import { clone, objKey } from "./informer.js";
import type { LoopOptions, Obj } from "./types.js";

/** The store the simulation writes Pods into. */
export interface WorkloadStore {
  objects: Map<string, Obj>;
  nextUid: () => string;
  agentPods: LoopOptions["agentPods"];
  /** Deployments and StatefulSets report their replicas ready (LoopOptions.deploymentsAvailable). */
  available: boolean;
  /** StatefulSets whose Pods at the update revision are not ready yet (a test holding a rollout: loop.holdRollout). */
  held?: (o: Obj) => boolean;
}

interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: { ports?: { name?: string; containerPort: number }[] }[] } & Record<string, unknown>;
}

interface WorkloadSpec {
  replicas?: number;
  template: PodTemplate;
}

/** The annotation naming the workload on the Pods the emulator runs for it. */
export const OWNER_ANNOTATION: Record<string, string> = {
  Deployment: "test/deployment",
  StatefulSet: "test/statefulset",
};

export function simulateDeployment(store: WorkloadStore, o: Obj): void {
  const spec = o.spec as WorkloadSpec;
  const replicas = spec.replicas ?? 1;
  o.status = store.available
    ? {
        observedGeneration: o.metadata.generation,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
        conditions: [
          { type: "Available", status: "True" },
          { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
        ],
      }
    : { observedGeneration: o.metadata.generation, replicas, conditions: [{ type: "Available", status: "False" }] };
  if (!store.agentPods) return;
  for (const p of podsOf(store, o)) store.objects.delete(objKey(p));
  for (let i = 0; i < replicas && store.available; i++) {
    const pod = newPod(store, o, `${o.metadata.name}-${i}`, {});
    store.objects.set(objKey(pod), pod);
  }
}

/** `<sts>-<10 hex>`: a name for the template's revision, as controller-revision-hash labels it. */
export function revisionOf(o: Obj): string {
  const template = (o.spec as WorkloadSpec).template;
  return `${o.metadata.name}-${createHash("sha256").update(JSON.stringify(template)).digest("hex").slice(0, 10)}`;
}

/**
 * A StatefulSet's status and Pods: pod `<sts>-<i>` for each ordinal below `replicas`, kept (same uid) while its
 * revision is current and replaced (new uid) when the template changed; ordinals at or above `replicas` are
 * deleted. Without `available`, no Pods run and none is ready. A held StatefulSet (`held`) runs its Pods at the
 * update revision unready, and its status keeps the previous currentRevision, as the controller reports a rollout
 * whose new Pod is not ready yet (kubernetes pkg/controller/statefulset stateful_set_control.go
 * updateStatefulSetStatus completes a rollout only once every Pod is updated and ready).
 */
export function simulateStatefulSet(store: WorkloadStore, o: Obj, existing: Obj = o): void {
  const spec = o.spec as WorkloadSpec;
  const replicas = spec.replicas ?? 1;
  const revision = revisionOf(o);
  const held = store.held?.(o) ?? false;
  const running = store.available ? replicas : 0;
  const ready = held ? 0 : running;
  const previous = existing.status?.currentRevision;
  const current = held && typeof previous === "string" ? previous : revision;
  o.status = {
    observedGeneration: o.metadata.generation,
    replicas,
    readyReplicas: ready,
    currentReplicas: current === revision ? replicas : 0,
    updatedReplicas: replicas,
    availableReplicas: ready,
    currentRevision: current,
    updateRevision: revision,
    collisionCount: 0,
  };
  if (!store.agentPods) return;
  const wanted = new Set<string>();
  for (let i = 0; i < running; i++) {
    const name = `${o.metadata.name}-${i}`;
    wanted.add(name);
    const live = podsOf(store, o).find((p) => p.metadata.name === name);
    if (live?.metadata.labels?.["controller-revision-hash"] === revision) {
      live.status = podStatus(!held);
      continue;
    }
    if (live) store.objects.delete(objKey(live));
    const pod = newPod(store, o, name, {
      "controller-revision-hash": revision,
      "apps.kubernetes.io/pod-index": String(i),
      "statefulset.kubernetes.io/pod-name": name,
    });
    pod.status = podStatus(!held);
    store.objects.set(objKey(pod), pod);
  }
  for (const p of podsOf(store, o)) if (!wanted.has(p.metadata.name)) store.objects.delete(objKey(p));
}

/** A running Pod, ready or not (its readiness probe failing). */
function podStatus(ready: boolean): Record<string, unknown> {
  return {
    phase: "Running",
    podIP: "127.0.0.1",
    conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
  };
}

/**
 * The StatefulSet controller replacing a deleted Pod: the same name, a new uid, at once (the old Pod is gone
 * first, so two Pods of one ordinal never coexist). Other Pods are only deleted. False when there was no Pod.
 */
export function deletePod(store: WorkloadStore, name: string, namespace: string | undefined): boolean {
  const pod = [...store.objects.values()].find(
    (p) => p.kind === "Pod" && p.metadata.name === name && p.metadata.namespace === namespace,
  );
  if (!pod) return false;
  store.objects.delete(objKey(pod));
  const owner = pod.metadata.annotations?.[OWNER_ANNOTATION.StatefulSet];
  if (!owner) return true;
  const sts = [...store.objects.values()].find(
    (o) => o.kind === "StatefulSet" && o.metadata.name === owner && o.metadata.namespace === namespace,
  );
  if (sts) simulateStatefulSet(store, sts);
  return true;
}

function podsOf(store: WorkloadStore, o: Obj): Obj[] {
  const annotation = OWNER_ANNOTATION[o.kind];
  return [...store.objects.values()].filter(
    (p) =>
      p.kind === "Pod" &&
      p.metadata.namespace === o.metadata.namespace &&
      p.metadata.annotations?.[annotation] === o.metadata.name,
  );
}

/** A running, ready Pod of the workload's template; the port named "metrics" rewritten by `agentPods`. */
function newPod(store: WorkloadStore, o: Obj, name: string, labels: Record<string, string>): Obj {
  const tpl = clone((o.spec as WorkloadSpec).template);
  const port = store.agentPods?.metricsPort(o);
  for (const c of tpl.spec.containers)
    for (const pt of c.ports ?? []) if (pt.name === "metrics" && port) pt.containerPort = port;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: o.metadata.namespace,
      uid: store.nextUid(),
      labels: { ...(tpl.metadata?.labels ?? {}), ...labels },
      annotations: { [OWNER_ANNOTATION[o.kind]]: o.metadata.name },
      // the garbage collector deletes the Pods with their workload (a Deployment's own go through its
      // ReplicaSet; the emulator has none, so they point at the Deployment)
      ownerReferences: [
        {
          apiVersion: o.apiVersion,
          kind: o.kind,
          name: o.metadata.name,
          uid: o.metadata.uid ?? "",
          controller: true,
        },
      ],
    },
    spec: tpl.spec,
    status: podStatus(true),
  };
}
