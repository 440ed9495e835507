/**
 * The StatefulSet controller for the pod runner (pods.ts), as kube-controller-manager v1.35 runs it
 * (k8s.io/kubernetes pkg/controller/statefulset/stateful_set_control.go, stateful_set_utils.go) for the
 * default podManagementPolicy OrderedReady:
 *
 * - replicas n runs pods `<sts>-0 … <sts>-(n-1)`, each labelled `controller-revision-hash: <sts>-<hash of the
 *   template>`, `apps.kubernetes.io/pod-index` and `statefulset.kubernetes.io/pod-name` (updateIdentity),
 *   with hostname = pod name and subdomain = serviceName;
 * - **at most one pod per ordinal**: a pod is created only when no pod of that name exists, and a pod the
 *   runner stops has exited before `stopPod` resolves, so a replacement never overlaps its predecessor
 *   (a deleted pod, `pods.deletePod`, comes back under the same name as a new process, host and uid);
 * - ordinal i is created only once every lower ordinal is running and ready; while any pod is not ready
 *   nothing is updated (OrderedReady's monotonic wait — a crash-looping pod blocks a rollout, as in Kubernetes);
 * - a changed template (RollingUpdate) deletes the highest-ordinal pod of an old revision, and the next
 *   pass creates it at the new one; `updateStrategy: OnDelete` leaves old pods until someone deletes them;
 * - scale-down stops the highest ordinals first;
 * - a pod naming a ServiceAccount that does not exist is refused (the ServiceAccount admission plugin:
 *   `FailedCreate`), and the StatefulSet waits;
 * - status: observedGeneration, replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas,
 *   currentRevision, updateRevision (completeRollingUpdate: current = update once every replica is updated
 *   and ready), zero counts left out as the API's omitempty does.
 */
import { createHash } from "node:crypto";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import type { PodRunner, PodSpec, RunningPod } from "./pods.js";

export interface StatefulSetSpec {
  replicas?: number;
  serviceName?: string;
  podManagementPolicy?: string;
  updateStrategy?: { type?: string };
  template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The ControllerRevision name of a template: `<sts>-<hash>` (the pods' controller-revision-hash label). */
export function revisionOf(sts: Obj): string {
  const spec = sts.spec as unknown as StatefulSetSpec;
  return `${sts.metadata.name}-${createHash("sha256").update(JSON.stringify(spec.template)).digest("hex").slice(0, 10)}`;
}

const ordinalOf = (p: RunningPod) => Number(p.labels["apps.kubernetes.io/pod-index"] ?? -1);

export function statefulSetUid(runner: PodRunner, pod: RunningPod): string {
  return runner.mc.get("apps/v1", "StatefulSet", pod.deployment, pod.namespace)?.metadata.uid ?? "";
}

let podSeq = 0;

/** One pass of the controller over every StatefulSet; `feedBack` writes their status after the kubelet pass. */
export async function syncStatefulSets(runner: PodRunner): Promise<{ feedBack(): void }> {
  const sets = runner.mc.list("StatefulSet");
  const live = new Set<string>();
  for (const sts of sets) {
    const ns = sts.metadata.namespace ?? "default";
    live.add(`${ns}/${sts.metadata.name}`);
    await syncOne(runner, sts);
  }
  for (const p of [...runner.pods])
    if (p.controllerKind === "StatefulSet" && !live.has(`${p.namespace}/${p.deployment}`)) await runner.stopPod(p);
  return {
    feedBack: () => {
      for (const sts of sets) writeStatus(runner, sts);
    },
  };
}

async function syncOne(runner: PodRunner, sts: Obj): Promise<void> {
  const ns = sts.metadata.namespace ?? "default";
  const name = sts.metadata.name;
  const spec = sts.spec as unknown as StatefulSetSpec;
  const replicas = spec.replicas ?? 1;
  const revision = revisionOf(sts);
  const hash = revision.slice(name.length + 1);
  const ordered = spec.podManagementPolicy !== "Parallel";
  const mine = () => runner.podsOf(ns, name, "StatefulSet").sort((a, b) => ordinalOf(b) - ordinalOf(a));
  // scale-down: the highest ordinals first
  for (const p of mine()) if (ordinalOf(p) >= replicas) await runner.stopPod(p);
  for (let i = 0; i < replicas; i++) {
    const podName = `${name}-${i}`;
    const existing = mine().find((p) => p.name === podName);
    if (existing) {
      if (ordered && !existing.ready) return;
      continue;
    }
    const sa = spec.template.spec.serviceAccountName ?? "default";
    if (!runner.mc.get("v1", "ServiceAccount", sa, ns)) {
      runner.failedCreate.set(
        `${ns}/${name}`,
        `create Pod ${podName} in StatefulSet ${name} failed error: pods "${podName}" is forbidden: ` +
          `error looking up service account ${ns}/${sa}: serviceaccount "${sa}" not found`,
      );
      return;
    }
    runner.failedCreate.delete(`${ns}/${name}`);
    await runner.createPod(
      sts,
      {
        ...spec.template,
        spec: {
          ...spec.template.spec,
          hostname: podName,
          ...(spec.serviceName ? { subdomain: spec.serviceName } : {}),
        },
      },
      hash,
      () => ({
        name: podName,
        kind: "StatefulSet",
        uid: `pod-uid-${podName}-${++podSeq}`,
        labels: {
          "controller-revision-hash": revision,
          "statefulset.kubernetes.io/pod-name": podName,
          "apps.kubernetes.io/pod-index": String(i),
        },
      }),
    );
    if (ordered) return; // the next ordinal once this one is running and ready
  }
  // RollingUpdate: every pod ready, then the highest ordinal of an old revision goes (recreated next pass)
  if (spec.updateStrategy?.type === "OnDelete") return;
  const pods = mine();
  if (ordered && pods.some((p) => !p.ready)) return;
  const outdated = pods.find((p) => p.templateHash !== hash);
  if (outdated) await runner.stopPod(outdated);
}

function writeStatus(runner: PodRunner, sts: Obj): void {
  const ns = sts.metadata.namespace ?? "default";
  const spec = sts.spec as unknown as StatefulSetSpec;
  const replicas = spec.replicas ?? 1;
  const updateRevision = revisionOf(sts);
  const pods = runner.podsOf(ns, sts.metadata.name, "StatefulSet");
  const rev = (p: RunningPod) => p.labels["controller-revision-hash"];
  const updated = pods.filter((p) => rev(p) === updateRevision).length;
  const ready = pods.filter((p) => p.ready).length;
  const before = sts.status as { currentRevision?: string } | undefined;
  let currentRevision = before?.currentRevision ?? updateRevision;
  if (
    spec.updateStrategy?.type !== "OnDelete" &&
    updated === replicas &&
    ready === replicas &&
    pods.length === replicas
  )
    currentRevision = updateRevision;
  const current = pods.filter((p) => rev(p) === currentRevision).length;
  const nonZero = (k: string, v: number) => (v ? { [k]: v } : {});
  const status = {
    ...(sts.metadata.generation ? { observedGeneration: sts.metadata.generation } : {}),
    replicas: pods.length,
    ...nonZero("readyReplicas", ready),
    ...nonZero("currentReplicas", current),
    ...nonZero("updatedReplicas", updated),
    currentRevision,
    updateRevision,
    collisionCount: 0,
    availableReplicas: ready,
  };
  if (JSON.stringify(sts.status) !== JSON.stringify(status)) {
    sts.status = status;
    runner.changed = true;
  }
}

/** Syncs until every ordinal runs a ready pod of the update revision; throws with the pods' logs. */
export async function waitStatefulSetReady(
  runner: PodRunner,
  namespace: string,
  name: string,
  timeoutMs: number,
): Promise<RunningPod[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await runner.sync();
    runner.check();
    const sts = runner.mc.get("apps/v1", "StatefulSet", name, namespace);
    if (sts) {
      const replicas = (sts.spec as unknown as StatefulSetSpec).replicas ?? 1;
      const revision = revisionOf(sts);
      const pods = runner
        .podsOf(namespace, name, "StatefulSet")
        .filter((p) => p.labels["controller-revision-hash"] === revision && p.ready)
        .sort((a, b) => ordinalOf(a) - ordinalOf(b));
      if (pods.length === replicas) return pods;
    }
    if (Date.now() > deadline) {
      const pods = runner.podsOf(namespace, name, "StatefulSet");
      const failed = runner.failedCreate.get(`${namespace}/${name}`);
      const why = pods.length
        ? pods.map((p) => `${p.name}: ${JSON.stringify(p.containers.map((c) => c.state()))}\n${p.logs()}`).join("\n")
        : (failed ?? (sts ? "no pod was started" : "no such StatefulSet"));
      throw new Error(`StatefulSet ${namespace}/${name} not ready within ${timeoutMs} ms: ${why}`);
    }
    await sleep(250);
  }
}
