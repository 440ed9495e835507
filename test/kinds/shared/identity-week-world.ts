/**
 * The world of the simulated week (issue 32, design32 §4): the real hook server in process, driven by the
 * Metacontroller emulator (which runs the StatefulSets' Pods), against the fake Headscale, with the fake
 * containerboot acting as the kubelet of every agent Pod (test/fakes/pod-lifecycle.ts). Every proxy object is
 * one `ProxyObject` row, so a gateway is one more row. The server can be swapped for a new instance (an operator
 * restart) with another tailscale image (a template change).
 */
import type { TestContext } from "node:test";
import type { FastifyInstance } from "fastify";
import { OWNER_ANNOTATION } from "../../../src/emulator/metacontroller/workloads.js";
import { HeadscaleViews } from "../../../src/headscale/view.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { kindModules } from "../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../src/metrics/registry.js";
import { memoryEventRecorder } from "../../../src/server/events.js";
import { closedPort } from "../../fakes/agent/echo.js";
import type { PodStore } from "../../fakes/containerboot-kube.js";
import { type FakeHeadscale, type FakeNode, useFakeHeadscale } from "../../fakes/headscale/index.js";
import { skeletonTailnet } from "../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../fakes/metacontroller.js";
import { loopStore, type RunningPod, restartContainer, startPod } from "../../fakes/pod-lifecycle.js";
import { parentObject } from "../../fixtures/hooks.js";
import { build } from "../../helpers/server.js";
import { API, credentialsSecret } from "./world.js";

export const T0 = new Date("2026-11-29T10:00:00Z");
export const BASE_DOMAIN = "ts.example.com";

/** One proxy object of the week: its kind, where it lives, the tag its nodes carry, how its replicas are named. */
export interface ProxyObject {
  kind: string;
  name: string;
  namespace: string;
  tag: string;
  spec: Record<string, unknown>;
  /** The StatefulSet of replica i (`<name>-agent-<i>`; a gateway's `<name>-gateway-<i>`). */
  sts(i: number): string;
}

export const EGRESS: ProxyObject = {
  kind: "TailnetEgress",
  name: "db",
  namespace: "shop",
  tag: "tag:k8s-shop-db",
  spec: {
    tailnetRef: { name: "home" },
    replicas: 2,
    targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432 }] }],
  },
  sts: (i) => `db-agent-${i}`,
};

export const INGRESS: ProxyObject = {
  kind: "TailnetIngress",
  name: "grafana",
  namespace: "monitoring",
  tag: "tag:k8s-monitoring-grafana",
  spec: {
    tailnetRef: { name: "home" },
    hostname: "grafana",
    mode: "tcp",
    replicas: 1,
    allowFrom: ["group:eng"],
    exposes: [{ name: "postgres", port: 5432, backend: { service: "postgres", port: 5432 } }],
  },
  sts: (i) => `grafana-agent-${i}`,
};

/** A Pod the kubelet runs: the emulator's Pod (by uid) and the tailscale container in it. */
interface Kubelet {
  uid: string;
  sts: string;
  run: RunningPod;
}

export interface WeekWorld {
  fake: FakeHeadscale;
  mc: FakeMetacontroller;
  clock: { now: Date };
  proxies: ProxyObject[];
  /** Boot refusals the kubelet saw (containerboot's or Headscale's), with the time. */
  bootErrors: string[];
  /** Every start of a tailscale container, by StatefulSet: `login` (TS_AUTHKEY used) or `state` (reconnected). */
  starts: Map<string, ("login" | "state")[]>;
  /** Server instances built so far (1 + operator restarts). */
  servers: number;
  get(p: ProxyObject): (K8sObject & { status?: Record<string, unknown> }) | undefined;
  setSpec(p: ProxyObject, fields: Record<string, unknown>): void;
  /** Sync until nothing changes, the kubelet starting and stopping tailscale for the Pods the emulator runs. */
  settle(): Promise<void>;
  /** The node replica i's running tailscale is (undefined: no Pod runs it). */
  nodeOf(p: ProxyObject, i: number): FakeNode | undefined;
  /** The Pod of replica i's uid, as the emulator holds it. */
  podUid(p: ProxyObject, i: number): string | undefined;
  deletePod(p: ProxyObject, i: number): void;
  restartContainer(p: ProxyObject, i: number): void;
  /** A new server instance (new views and caches), optionally with another tailscale image. */
  restartOperator(tailscaleImage?: string): Promise<void>;
  store: PodStore;
}

const policyText = (tags: string[]) =>
  JSON.stringify({ tagOwners: Object.fromEntries(tags.map((t) => [t, []])), grants: [] });

export async function weekWorld(
  t: TestContext,
  proxies: ProxyObject[],
  opts: { authKeyTTL: string; parentCacheLag: boolean },
): Promise<WeekWorld> {
  const clock = { now: T0 };
  const now = () => clock.now;
  const fake = await useFakeHeadscale(t, { now, policy: policyText(proxies.map((p) => p.tag)) });
  fake.addNode({ name: "db-1" });
  const kinds = new Map(kindModules);
  kinds.set("tailnet", skeletonTailnet());

  let current: FastifyInstance;
  let servers = 0;
  const startServer = async (tailscaleImage?: string) => {
    const views = new HeadscaleViews({ timeoutMs: 500, cacheTTLSeconds: 0, retries: 0, now });
    t.after(() => views.close());
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    const { app } = await build(t, {
      config: { logLevel: "warn", ...(tailscaleImage ? { images: { tailscale: tailscaleImage } } : {}) },
      server: { deps: { views, now, metrics, events: memoryEventRecorder() }, kinds },
    });
    servers++;
    return app as unknown as FastifyInstance;
  };
  current = await startServer();
  // Metacontroller outlives the operator: it calls whichever server instance runs now
  const app = { inject: (o: unknown) => current.inject(o as never) } as unknown as FastifyInstance;
  const port = await closedPort();
  const mc = new FakeMetacontroller({
    app,
    agentPods: { metricsPort: () => port },
    parentCacheLag: opts.parentCacheLag,
  });
  const store = loopStore(mc);

  mc.apply(
    parentObject("Tailnet", "home", {
      headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      dns: { baseDomain: BASE_DOMAIN },
      authKeyTTL: opts.authKeyTTL,
    }),
  );
  mc.apply(credentialsSecret(fake));
  for (const p of proxies) mc.apply(parentObject(p.kind, p.name, p.spec, { namespace: p.namespace }));

  const running = new Map<string, Kubelet>();
  const bootErrors: string[] = [];
  const podKey = (ns: string | undefined, name: string) => `${ns}/${name}`;
  /** A workload of one of the proxies: `<name>-agent-<i>` (or the legacy `<name>-agent`). */
  const proxyWorkload = (o: K8sObject) =>
    proxies.some((p) => p.namespace === o.metadata.namespace && o.metadata.name.startsWith(p.sts(0).slice(0, -2)));

  const starts = new Map<string, ("login" | "state")[]>();
  const started = (sts: string, run: RunningPod) => {
    starts.set(sts, [...(starts.get(sts) ?? []), run.usedAuthKey ? "login" : "state"]);
    return run;
  };
  const boot = (sts: K8sObject) => {
    try {
      return started(sts.metadata.name, startPod(fake, store, sts, { baseDomain: BASE_DOMAIN }));
    } catch (e) {
      bootErrors.push(`${clock.now.toISOString()} ${sts.metadata.name}: ${(e as Error).message}`);
      return undefined;
    }
  };

  /** One pass of the kubelet over the emulator's Pods; true when it started or stopped anything. */
  function kubelet(): boolean {
    let changed = false;
    const seen = new Set<string>();
    for (const pod of mc.list("Pod")) {
      // a Deployment's Pods too: the shape before issue 32 (state on an emptyDir), so the week fails there
      const kind = Object.keys(OWNER_ANNOTATION).find((k) => pod.metadata.annotations?.[OWNER_ANNOTATION[k]]);
      const stsName = kind && pod.metadata.annotations?.[OWNER_ANNOTATION[kind]];
      if (!kind || !stsName) continue;
      const sts = mc.get("apps/v1", kind, stsName, pod.metadata.namespace);
      if (!sts || !proxyWorkload(sts)) continue;
      const k = podKey(pod.metadata.namespace, pod.metadata.name);
      seen.add(k);
      const live = running.get(k);
      if (live?.uid === pod.metadata.uid) continue;
      // a new Pod of the ordinal: the old one stopped first (the StatefulSet's at-most-one)
      if (live) fake.disconnect(live.run.node.id);
      running.delete(k);
      const run = boot(sts);
      if (run) running.set(k, { uid: pod.metadata.uid ?? "", sts: stsName, run });
      changed = true;
    }
    for (const [k, live] of running) {
      if (seen.has(k)) continue;
      fake.disconnect(live.run.node.id);
      running.delete(k);
      changed = true;
    }
    return changed;
  }

  const podName = (p: ProxyObject, i: number) => `${p.sts(i)}-0`;
  const world: WeekWorld = {
    fake,
    mc,
    clock,
    proxies,
    bootErrors,
    starts,
    get servers() {
      return servers;
    },
    store,
    get: (p) => mc.get(API, p.kind, p.name, p.namespace),
    setSpec(p, fields) {
      const live = mc.get(API, p.kind, p.name, p.namespace);
      if (!live) throw new Error(`${p.kind} ${p.namespace}/${p.name} is gone`);
      mc.apply({ ...live, spec: { ...(live.spec as Record<string, unknown>), ...fields } });
    },
    async settle() {
      for (let pass = 0; pass < 6; pass++) {
        await mc.settle(20);
        if (!kubelet()) return;
      }
      throw new Error("the kubelet and the operator did not settle within 6 passes");
    },
    nodeOf(p, i) {
      const live = running.get(podKey(p.namespace, podName(p, i)));
      return live && fake.state.nodes.get(live.run.node.id);
    },
    podUid: (p, i) => mc.get("v1", "Pod", podName(p, i), p.namespace)?.metadata.uid,
    deletePod(p, i) {
      if (!mc.deletePod(podName(p, i), p.namespace)) throw new Error(`no Pod ${podName(p, i)}`);
    },
    restartContainer(p, i) {
      const live = running.get(podKey(p.namespace, podName(p, i)));
      if (!live) throw new Error(`no tailscale running in ${podName(p, i)}`);
      live.run = started(live.sts, restartContainer(fake, store, live.run, { baseDomain: BASE_DOMAIN }));
    },
    async restartOperator(tailscaleImage) {
      const old = current;
      current = await startServer(tailscaleImage);
      await old.close();
    },
  };
  return world;
}
