/**
 * The emulator's StatefulSet controller (src/emulator/metacontroller/workloads.ts), modelled on kubernetes v1.35
 * pkg/controller/statefulset (stateful_set_utils.go newVersionedStatefulSetPod, stateful_set_control.go): status
 * fed back, Pods `<sts>-<i>` with the controller's labels, kept across syncs while their revision is current.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { objKey } from "../../../src/emulator/metacontroller/informer.js";
import { MetacontrollerLoop } from "../../../src/emulator/metacontroller/loop.js";
import type { LoopOptions, Obj } from "../../../src/emulator/metacontroller/types.js";
import { revisionOf } from "../../../src/emulator/metacontroller/workloads.js";

/** The loop's store without hooks: children written as Metacontroller's apply would hand them over. */
class Store extends MetacontrollerLoop {
  constructor(opts: Partial<LoopOptions> = {}) {
    super({ app: undefined as never, agentPods: { metricsPort: () => 9901 }, ...opts });
  }
  write(o: Obj): Promise<boolean> {
    const existing = this.objects.get(objKey(o));
    const copy = structuredClone(o);
    copy.metadata.generation = (existing?.metadata.generation ?? 0) + 1;
    copy.metadata.uid = existing?.metadata.uid ?? `uid-${o.metadata.name}`;
    return this.writeChild(copy, existing, `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
  }
  pods(): Obj[] {
    return this.list("Pod").sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  }
}

function sts(opts: { replicas?: number; image?: string; serviceName?: string } = {}): Obj {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db-agent-0", namespace: "shop" },
    spec: {
      replicas: opts.replicas ?? 1,
      serviceName: opts.serviceName ?? "db-agent-0",
      podManagementPolicy: "Parallel",
      selector: { matchLabels: { app: "db-agent", "tailnet.internal/replica": "0" } },
      template: {
        metadata: { labels: { app: "db-agent", "tailnet.internal/replica": "0" } },
        spec: {
          containers: [
            { name: "tailscale", image: opts.image ?? "tailscale:v1.102.5" },
            { name: "agent", ports: [{ name: "metrics", containerPort: 9090 }] },
          ],
        },
      },
    },
  } as Obj;
}

describe("emulated StatefulSet", () => {
  it("reports status as the controller does once its pod is ready", async () => {
    const store = new Store();
    assert.equal(await store.write(sts()), true);
    const live = store.get("apps/v1", "StatefulSet", "db-agent-0", "shop");
    const revision = revisionOf(live as Obj);
    assert.match(revision, /^db-agent-0-[0-9a-f]{10}$/);
    assert.deepEqual(live?.status, {
      observedGeneration: 1,
      replicas: 1,
      readyReplicas: 1,
      currentReplicas: 1,
      updatedReplicas: 1,
      availableReplicas: 1,
      currentRevision: revision,
      updateRevision: revision,
      collisionCount: 0,
    });
  });

  it("runs pod <sts>-0 with the template's labels plus the controller's, ready, metrics port rewritten", async () => {
    const store = new Store();
    await store.write(sts());
    const [pod, ...rest] = store.pods();
    assert.deepEqual(rest, []);
    assert.equal(pod.metadata.name, "db-agent-0-0");
    assert.equal(pod.metadata.namespace, "shop");
    assert.deepEqual(pod.metadata.labels, {
      app: "db-agent",
      "tailnet.internal/replica": "0",
      "controller-revision-hash": revisionOf(store.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as Obj),
      "apps.kubernetes.io/pod-index": "0",
      "statefulset.kubernetes.io/pod-name": "db-agent-0-0",
    });
    assert.deepEqual(pod.metadata.annotations, { "test/statefulset": "db-agent-0" });
    const live = store.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as Obj;
    assert.deepEqual(pod.metadata.ownerReferences, [
      { apiVersion: "apps/v1", kind: "StatefulSet", name: "db-agent-0", uid: live.metadata.uid, controller: true },
    ]);
    const agent = (pod.spec as { containers: { name: string; ports?: { containerPort: number }[] }[] }).containers[1];
    assert.equal(agent.ports?.[0].containerPort, 9901);
    assert.deepEqual(pod.status?.conditions, [{ type: "Ready", status: "True" }]);
  });

  it("a pod keeps its name and uid across syncs; a template change replaces it (same name, new uid)", async () => {
    const store = new Store();
    await store.write(sts());
    const first = store.pods()[0].metadata.uid;
    await store.write({ ...sts(), metadata: { ...sts().metadata, labels: { touched: "yes" } } });
    assert.equal(store.pods()[0].metadata.uid, first, "a metadata change keeps the pod");
    await store.write(sts({ image: "tailscale:v1.102.6" }));
    const [pod] = store.pods();
    assert.equal(pod.metadata.name, "db-agent-0-0");
    assert.notEqual(pod.metadata.uid, first);
    const live = store.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as Obj;
    assert.equal(pod.metadata.labels?.["controller-revision-hash"], revisionOf(live));
    assert.equal(live.status?.updateRevision, revisionOf(live));
    assert.equal(live.status?.observedGeneration, 3);
  });

  it("scales: 2 runs -0 and -1; 1 deletes -1 and keeps -0; 0 runs none", async () => {
    const store = new Store();
    await store.write(sts({ replicas: 2 }));
    assert.deepEqual(
      store.pods().map((p) => p.metadata.name),
      ["db-agent-0-0", "db-agent-0-1"],
    );
    const uid0 = store.pods()[0].metadata.uid;
    await store.write(sts({ replicas: 1 }));
    assert.deepEqual(
      store.pods().map((p) => [p.metadata.name, p.metadata.uid]),
      [["db-agent-0-0", uid0]],
    );
    await store.write(sts({ replicas: 0 }));
    assert.deepEqual(store.pods(), []);
    const status = store.get("apps/v1", "StatefulSet", "db-agent-0", "shop")?.status;
    assert.deepEqual([status?.replicas, status?.readyReplicas], [0, 0]);
  });

  it("a deleted pod comes back at once with the same name and a new uid; a bare pod is just gone", async () => {
    const store = new Store();
    await store.write(sts());
    const before = store.pods()[0].metadata.uid;
    assert.equal(store.deletePod("db-agent-0-0", "shop"), true);
    const [pod] = store.pods();
    assert.equal(pod.metadata.name, "db-agent-0-0");
    assert.notEqual(pod.metadata.uid, before);
    store.apply({ apiVersion: "v1", kind: "Pod", metadata: { name: "bare", namespace: "shop" } } as Obj);
    assert.equal(store.deletePod("bare", "shop"), true);
    assert.deepEqual(
      store.pods().map((p) => p.metadata.name),
      ["db-agent-0-0"],
    );
    assert.equal(store.deletePod("nope", "shop"), false);
  });

  it("a refused update (serviceName) changes nothing: no new pod, the error recorded", async () => {
    const store = new Store();
    await store.write(sts());
    const uid = store.pods()[0].metadata.uid;
    assert.equal(await store.write(sts({ serviceName: "other", image: "tailscale:v2" })), false);
    assert.equal(store.pods()[0].metadata.uid, uid);
    assert.equal(
      (store.get("apps/v1", "StatefulSet", "db-agent-0", "shop")?.spec as { serviceName?: string } | undefined)
        ?.serviceName,
      "db-agent-0",
    );
    assert.deepEqual(store.errors, [
      "update StatefulSet shop/db-agent-0: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    ]);
  });

  it("deleting the StatefulSet deletes its pods (garbage collector, ownerReferences)", async () => {
    const store = new Store();
    await store.write(sts({ replicas: 2 }));
    assert.equal(store.pods().length, 2);
    store.delete("apps/v1", "StatefulSet", "db-agent-0", "shop");
    assert.deepEqual(store.pods(), []);
  });

  it("with deploymentsAvailable false: no pod runs and none is ready", async () => {
    const store = new Store({ deploymentsAvailable: false });
    await store.write(sts());
    assert.deepEqual(store.pods(), []);
    const status = store.get("apps/v1", "StatefulSet", "db-agent-0", "shop")?.status;
    assert.deepEqual([status?.replicas, status?.readyReplicas, status?.availableReplicas], [1, 0, 0]);
  });

  it("a held rollout: the new pod runs unready and currentRevision stays behind until released", async () => {
    const store = new Store();
    await store.write(sts());
    const before = revisionOf(store.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as Obj);
    store.holdRollout("db-agent-0", "shop");
    await store.write(sts({ image: "tailscale:v1.102.6" }));
    const live = store.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as Obj;
    const after = revisionOf(live);
    assert.notEqual(after, before);
    const status = live.status ?? {};
    assert.deepEqual(
      [status.readyReplicas, status.currentRevision, status.updateRevision, status.currentReplicas],
      [0, before, after, 0],
    );
    const [pod] = store.pods();
    assert.equal(pod.metadata.labels?.["controller-revision-hash"], after, "the new pod runs");
    assert.deepEqual((pod.status as { conditions?: unknown }).conditions, [{ type: "Ready", status: "False" }]);
    store.releaseRollout("db-agent-0", "shop");
    assert.deepEqual(
      [live.status?.readyReplicas, live.status?.currentRevision, live.status?.updateRevision],
      [1, after, after],
    );
    const [ready] = store.pods();
    assert.equal(ready.metadata.uid, pod.metadata.uid, "the same pod got ready");
    assert.deepEqual((ready.status as { conditions?: unknown }).conditions, [{ type: "Ready", status: "True" }]);
  });
});
