/**
 * DEPRECATED stand-in, kept only because test/hardening (another lane) still imports it: the emulator now runs
 * StatefulSet Pods itself (src/emulator/metacontroller/workloads.ts) and the fake containerboot boots them with the
 * replica's RBAC and kube state (test/fakes/pod-lifecycle.ts; for the kinds' tests test/kinds/shared/replica-boot.ts).
 * Its Pods collide with the emulator's and its boots skip the RBAC check: delete this file once test/hardening moves.
 */
import type { K8sObject } from "../../../src/k8s/objects.js";
import { registerPod } from "../../fakes/containerboot.js";
import type { FakeHeadscale, FakeNode } from "../../fakes/headscale/index.js";
import { FakeMetacontroller } from "../../fakes/metacontroller.js";

/**
 * The StatefulSet controller's part, until the emulator has it (branch fakes32): one running Pod `<sts>-0` per
 * StatefulSet of replicas 1, from its template, with the metrics port pointing at the loopback agent; Pods of a
 * StatefulSet that is gone go too. Returns whether anything changed.
 */
export function statefulSetPods(mc: FakeMetacontroller, metricsPort: (sts: K8sObject) => number | undefined): boolean {
  let changed = false;
  const sets = new Map(mc.list("StatefulSet").map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  for (const p of mc.list("Pod")) {
    const owner = p.metadata.annotations?.["test/statefulset"];
    if (owner && !sets.has(`${p.metadata.namespace}/${owner}`)) {
      mc.delete("v1", "Pod", p.metadata.name, p.metadata.namespace);
      changed = true;
    }
  }
  for (const sts of sets.values()) {
    const spec = sts.spec as {
      replicas?: number;
      template: {
        metadata?: { labels?: Record<string, string> };
        spec: { containers: { ports?: { name?: string; containerPort: number }[] }[] };
      };
    };
    const name = `${sts.metadata.name}-0`;
    const existing = mc.get("v1", "Pod", name, sts.metadata.namespace);
    if ((spec.replicas ?? 1) < 1) {
      if (existing) {
        mc.delete("v1", "Pod", name, sts.metadata.namespace);
        changed = true;
      }
      continue;
    }
    const tpl = structuredClone(spec.template);
    for (const c of tpl.spec.containers)
      for (const pt of c.ports ?? []) {
        const port = metricsPort(sts);
        if (pt.name === "metrics" && port) pt.containerPort = port;
      }
    // a new pod only for a new template (a rollout): a test may edit the running pod's spec
    const revision = JSON.stringify(spec.template);
    if (existing && existing.metadata.annotations?.["test/revision"] === revision) continue;
    mc.apply({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: sts.metadata.namespace,
        labels: tpl.metadata?.labels ?? {},
        annotations: { "test/statefulset": sts.metadata.name, "test/revision": revision },
      },
      spec: tpl.spec,
      status: {
        phase: "Running",
        podIP: "127.0.0.1",
        startTime: "2026-11-29T09:59:00Z",
        conditions: [{ type: "Ready", status: "True" }],
      },
    });
    changed = true;
  }
  return changed;
}

/** The planted value of every state Secret's machine key: it must never leave the hook (state-secret tests). */
export const MACHINE_KEY_MARKER = "privkey:PLANTED-MACHINE-KEY-0f1e2d";

/** What tailscaled's kube store and containerboot write into a state Secret (kube.go storeDeviceID). */
export function writeState(mc: FakeMetacontroller, namespace: string, name: string, deviceId: string): void {
  const secret = mc.get("v1", "Secret", name, namespace);
  if (!secret) throw new Error(`no state Secret ${namespace}/${name} yet`);
  const b64 = (v: string) => Buffer.from(v).toString("base64");
  secret.data = {
    ...(secret.data as Record<string, string> | undefined),
    _machinekey: b64(MACHINE_KEY_MARKER),
    device_id: b64(deviceId),
    device_fqdn: b64(`node-${deviceId}.ts.example.com.`),
  };
}

/** The emulator plus the StatefulSet controller's pods (statefulSetPods), settling until both are quiet. */
export class ReplicaMetacontroller extends FakeMetacontroller {
  constructor(
    opts: ConstructorParameters<typeof FakeMetacontroller>[0],
    private readonly metricsPort: (sts: K8sObject) => number | undefined,
  ) {
    super(opts);
  }
  override async settle(maxRounds = 10): Promise<number> {
    let rounds = await super.settle(maxRounds);
    for (let i = 0; i < 3 && statefulSetPods(this, this.metricsPort); i++) rounds += await super.settle(maxRounds);
    return rounds;
  }
}

/** Replica `replica` of an agent boots from its StatefulSet: the fake containerboot registers, the state is written. */
export function bootReplica(
  mc: FakeMetacontroller,
  hs: FakeHeadscale,
  namespace: string,
  agent: string,
  replica = 0,
): FakeNode {
  const sts = mc.get("apps/v1", "StatefulSet", `${agent}-${replica}`, namespace);
  if (!sts) throw new Error(`no agent StatefulSet ${namespace}/${agent}-${replica}`);
  const { node } = registerPod(hs, sts, [...mc.list("Secret"), ...mc.list("ConfigMap")]);
  writeState(mc, namespace, `${agent}-${replica}-state`, node.id);
  return node;
}
