/**
 * The end-to-end world of the TailnetGateway tests: the Metacontroller emulator drives the real hook
 * server, which talks to the fake Headscale; one clock drives both. The Tailnet and TailnetEgress
 * kinds are stubs that keep the status the test sets and return no children, so these tests see only
 * the gateway's own Headscale traffic and the Services the test creates for egress targets (a real
 * Tailnet would PUT the policy, and Headscale's auto-approval would race the gateway's approvals).
 */
import type { HookKind } from "../../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import { type K8sObject, reuseAllChildren } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { wipeStateSecret } from "../../../fakes/containerboot-kube.js";
import { type FakeHeadscale, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { loopStore, type RunningPod, replacePod, startPod } from "../../../fakes/pod-lifecycle.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";
import { credentialsSecret } from "../../shared/world.js";

export const API = "tailnet.internal/v1alpha1";
export const TAG = "tag:k8s-infra-gw";
export const ROUTE = "10.96.0.0/12";
export const ZONE = "ts.example.com";
export const T0 = new Date("2026-11-29T10:00:00Z");
export const TYPES = [
  "Registered",
  "RoutesInSync",
  "DNSReady",
  "StaleNodes",
  "ClusterDNSForward",
  "WorkloadCurrent",
  "ServiceReady",
  "NodeIdentity",
  "Ready",
] as const;

const stub = (hookKind: HookKind): KindModule => ({
  hookKind,
  customize: () => [],
  // children kept as observed: a test's Service controlled by a stub egress stands for the egress's own
  sync: async (req) => ({
    status: { ...((req.parent.status as Record<string, unknown>) ?? {}) },
    children: reuseAllChildren(req.children),
  }),
  finalize: async () => ({ status: {}, children: [], finalized: true }),
  invalid: (req) => ({ status: { ...((req.parent.status as Record<string, unknown>) ?? {}) }, children: [] }),
});

export type Ctx = { after: (fn: () => Promise<void> | void) => void };

export interface WorldOpts {
  mode?: "Apply" | "DryRun";
  credentials?: boolean;
  tailnet?: boolean;
  baseDomain?: string | null;
  /** A private Headscale CA in the credentials Secret (the Tailnet's caSecretRef, republished). */
  ca?: string;
}

export async function world(t: Ctx, opts: WorldOpts = {}) {
  const clock = { now: T0 };
  const fake = await useFakeHeadscale(t, { now: () => clock.now });
  const views = new HeadscaleViews({ timeoutMs: 300, cacheTTLSeconds: 0, retries: 0, now: () => clock.now });
  t.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const kinds = new Map<HookKind, KindModule>(kindModules);
  kinds.set("tailnet", stub("tailnet"));
  kinds.set("egress", stub("egress"));
  const { app, logs } = await build(t, {
    server: { kinds, deps: { views, metrics, now: () => clock.now, events: memoryEventRecorder() } },
  });
  // agentPods: the emulator runs each StatefulSet's pod `<sts>-0` (src/emulator/metacontroller/workloads.ts);
  // mc.deploymentsAvailable = false leaves them unready
  const mc = new FakeMetacontroller({ app, agentPods: { metricsPort: () => undefined } });
  if (opts.tailnet !== false) {
    mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
        policy: { mode: opts.mode ?? "Apply" },
        ...(opts.baseDomain === null ? {} : { dns: { baseDomain: opts.baseDomain ?? ZONE } }),
      }),
    );
  }
  if (opts.credentials !== false) {
    mc.apply(credentialsSecret(fake, opts.ca));
  }
  /** The tailscale container running in each replica's pod (pod-lifecycle.ts), by replica. */
  const pods = new Map<number, RunningPod>();
  return { fake, mc, metrics, logs, clock, pods };
}

export type World = Awaited<ReturnType<typeof world>>;

export function applyGateway(
  mc: FakeMetacontroller,
  spec: Record<string, unknown> = {},
  opts: { annotations?: Record<string, string> } = {},
) {
  const existing = mc.get(API, "TailnetGateway", "gw", "infra");
  const p = parentObject(
    "TailnetGateway",
    "gw",
    { tailnetRef: { name: "home" }, hostname: "cluster-gw", routes: [ROUTE], dns: { zone: ZONE }, ...spec },
    { namespace: "infra" },
  );
  if (opts.annotations) p.metadata.annotations = opts.annotations;
  if (existing) p.metadata.uid = existing.metadata.uid;
  return mc.apply(p as never);
}

export const gw = (mc: FakeMetacontroller) => mc.get(API, "TailnetGateway", "gw", "infra");
export const cond = (mc: FakeMetacontroller, type: string) => mc.condition("TailnetGateway", "gw", type, "infra");
export const reasons = (mc: FakeMetacontroller) => Object.fromEntries(TYPES.map((t) => [t, cond(mc, t)?.reason]));
export const statusJson = (mc: FakeMetacontroller) => JSON.stringify(gw(mc)?.status);

export function child(mc: FakeMetacontroller, kind: string, name: string): K8sObject | undefined {
  return mc.list(kind).find((o) => o.metadata.name === name && o.metadata.namespace === "infra");
}

export function keySecrets(mc: FakeMetacontroller): K8sObject[] {
  return mc.list("Secret").filter((s) => s.metadata.labels?.["tailnet.internal/authkey"] === "true");
}

/** Replica i's names: its StatefulSet (and ServiceAccount, Role, RoleBinding) and its state Secret. */
export const replicaName = (i: number) => `gw-gateway-${i}`;
export const stateName = (i: number) => `gw-gateway-${i}-state`;
export const KEY_SECRET = "gw-gateway-authkey";

/** Someone with write access to Secrets in the namespace edits replica i's state Secret (not containerboot). */
export function editState(mc: FakeMetacontroller, i: number, data: Record<string, string>) {
  const secret = child(mc, "Secret", stateName(i));
  if (!secret) throw new Error(`no state Secret for replica ${i}`);
  const next = structuredClone(secret);
  next.data = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
  mc.apply(next);
}

/** Replica i's state lost (`kubectl edit` emptied its state Secret): its pod's next start logs in afresh. */
export function wipeState(w: World, i: number) {
  wipeStateSecret(loopStore(w.mc), stateName(i), "infra");
}

/**
 * Replica i's pod starting (or its container restarting in a new pod): the shared fake containerboot boots the
 * StatefulSet's tailscale container against the emulator's store (RBAC checked on the replica's Role and
 * RoleBinding), reconnects with the state it finds in the replica's state Secret or logs in with the stable
 * bootstrap key, and writes tailscaled's and containerboot's keys into that Secret (test/fakes/pod-lifecycle.ts).
 * A replica that ran before goes offline first. `deviceId: false` stops between tailscaled's login and
 * containerboot's storeDeviceID (cmd/containerboot/kube.go): the node exists, the Secret does not name it yet.
 */
export function registerReplica(w: World, i = 0, opts: { deviceId?: boolean } = {}) {
  const sts = child(w.mc, "StatefulSet", replicaName(i));
  if (!sts) throw new Error(`no StatefulSet for replica ${i} yet`);
  const store = loopStore(w.mc);
  const before = w.pods.get(i);
  const pod = before
    ? replacePod(w.fake, store, before, sts, { baseDomain: ZONE })
    : startPod(w.fake, store, sts, { baseDomain: ZONE });
  w.pods.set(i, pod);
  if (opts.deviceId === false) {
    const secret = structuredClone(child(w.mc, "Secret", stateName(i)) as K8sObject);
    const data = { ...(secret.data as Record<string, string>) };
    for (const k of ["device_id", "device_fqdn", "device_ips", "tailscale_capver"]) delete data[k];
    secret.data = data;
    store.write(secret);
  }
  return pod.node;
}

/** The gateway pod of replica 0 logging in (the single-replica tests). */
export function registerGateway(w: World) {
  return registerReplica(w, 0);
}

export function zoneText(mc: FakeMetacontroller): string {
  const data = child(mc, "ConfigMap", "gw-gateway-zone")?.data as Record<string, string> | undefined;
  return data?.["zone.db"] ?? "";
}

export function serviceIP(mc: FakeMetacontroller): string {
  return (child(mc, "Service", "gw-dns")?.spec as { clusterIP?: string } | undefined)?.clusterIP ?? "";
}

/** Replica 0's StatefulSet's replicas (1, or 0 while suspended). */
export function replicas(mc: FakeMetacontroller, i = 0): number | undefined {
  return (child(mc, "StatefulSet", replicaName(i))?.spec as { replicas?: number } | undefined)?.replicas;
}

export interface GatewayStatus {
  tag?: string;
  dnsServiceIP?: string;
  node?: { id: string; name: string; nodeKey: string; preAuthKeyId: string };
  nodes?: {
    replica: number;
    id: string;
    name: string;
    nodeKey: string;
    preAuthKeyId?: string;
    online: boolean;
    predecessorId?: string;
  }[];
  preAuthKeyIds?: string[];
}

export function statusOf(mc: FakeMetacontroller): GatewayStatus {
  return (gw(mc)?.status ?? {}) as GatewayStatus;
}

export function resyncOf(mc: FakeMetacontroller): number | undefined {
  return (lastSync(mc)?.response as { resyncAfterSeconds?: number } | undefined)?.resyncAfterSeconds;
}

/** The last sync answer for the gateway (what Metacontroller received). */
export function lastSync(mc: FakeMetacontroller) {
  return [...mc.calls].reverse().find((c) => c.hook === "sync" && c.parent === "infra/gw");
}

export async function syncAgain(mc: FakeMetacontroller) {
  const live = gw(mc);
  if (!live) throw new Error("no gateway");
  await mc.syncParent(live);
}

/** A registered, verified gateway whose route the operator approved and whose forward is configured. */
export async function readyGateway(t: Ctx, spec: Record<string, unknown> = {}, opts: WorldOpts = {}) {
  const w = await world(t, opts);
  applyGateway(w.mc, spec);
  await w.mc.settle();
  const node = registerGateway(w);
  for (let i = 1; i < ((spec.replicas as number | undefined) ?? 1); i++) registerReplica(w, i);
  const ip = serviceIP(w.mc);
  w.mc.apply({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "coredns", namespace: "kube-system" },
    data: { Corefile: `.:53 {\n    forward . /etc/resolv.conf\n}\n${ZONE}:53 {\n    forward . ${ip}\n}\n` },
  });
  await w.mc.settle();
  return { ...w, node, ip };
}

export const writesTo = (fake: FakeHeadscale, method: string, path: RegExp) =>
  fake.requests.filter((r) => r.method === method && path.test(r.path));
