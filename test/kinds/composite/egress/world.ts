/**
 * The end-to-end world for the egress: the real hook server driven by the Metacontroller emulator,
 * the fake Headscale, and a real agent on loopback whose /status the emulator's pods point at.
 * The agent runs the config the operator renders (egressAgentConfig), with loopback listeners,
 * a SOCKS5 stand-in for tailscaled (every tailnet host → a TCP echo server on 127.0.0.1, or to
 * 127.0.0.2 where nothing listens for hosts marked unreachable) and the fake LocalAPI for its
 * netmap. The Tailnet kind is a no-op here, so only the egress writes to Headscale.
 */
import type { TestContext } from "node:test";
import { type RunningAgent, startAgent } from "../../../../src/agent/main.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { egressAgentConfig } from "../../../../src/kinds/composite/egress/children.js";
import { readEgressSpec } from "../../../../src/kinds/composite/egress/spec.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { type EchoServer, startEchoServer } from "../../../fakes/agent/echo.js";
import { type FakeLocalApi, type FakePeer, fakeStatus, startFakeLocalApi } from "../../../fakes/agent/localapi.js";
import { type Socks5Server, startSocks5Server } from "../../../fakes/agent/socks5.js";
import { type FakeHeadscale, type FakeNode, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { skeletonTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";
import { bootReplica, machineKeyIn } from "../../shared/replica-boot.js";
import { credentialsSecret } from "../../shared/world.js";

export const API = "tailnet.internal/v1alpha1";
export const TAG = "tag:k8s-shop-db";
export const T0 = new Date("2026-11-29T10:00:00Z");

export function policyText(tags: string[]): string {
  return JSON.stringify({
    tagOwners: Object.fromEntries(tags.map((t) => [t, []])),
    grants: [{ src: [TAG], dst: ["*"], ip: ["*"] }],
  });
}

type Ctx = { after: (fn: () => Promise<void> | void) => void };

/**
 * A real egress agent on loopback, running the config the operator renders for `parent`: it dials through
 * `socks` (the stand-in for tailscaled) and reads its netmap from `localApi`. 127.0.0.1 stands for the pod
 * IP here, which is where netstack's forward would land: no refuse listener. Closed after the test.
 */
export async function loopbackEgressAgent(
  t: Ctx,
  parent: K8sObject,
  socks: Socks5Server,
  localApi: FakeLocalApi,
): Promise<RunningAgent> {
  const { refuseHost: _refuse, ...rendered } = egressAgentConfig(readEgressSpec(parent));
  const agent = await startAgent(
    {
      ...rendered,
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      listenHost: "127.0.0.1",
      tailscale: { socksAddr: socks.address, localApiSocket: localApi.socketPath },
      limits: { dialTimeoutSeconds: 2 },
      targets: (rendered.targets ?? []).map((tg) => ({ ...tg, ports: tg.ports.map((p) => ({ ...p, listenPort: 0 })) })),
    },
    { timers: false, defaultMetrics: false },
  );
  t.after(() => agent.close());
  return agent;
}

export interface World {
  fake: FakeHeadscale;
  mc: FakeMetacontroller;
  app: Awaited<ReturnType<typeof build>>["app"];
  agent: RunningAgent;
  localApi: FakeLocalApi;
  socks: Socks5Server;
  echo: EchoServer;
  clock: { now: Date };
  /** Tailnet hosts the SOCKS5 stand-in cannot reach. */
  unreachable: Set<string>;
  db1: FakeNode;
  router: FakeNode;
  spec: Record<string, unknown>;
  egress(): K8sObject & { status?: Record<string, unknown> };
  cond(type: string): { status: string; reason: string; message: string } | undefined;
  /** Probe and read the netmap now, then let the emulator settle. */
  settle(): Promise<number>;
  /** The agent node registers with the key in the Secret child, and the netmap shows the peers. */
  register(): FakeNode;
  /**
   * Replica i's pod boots from its StatefulSet (fake containerboot), registers, and writes its device_id and
   * machine key into its state Secret as tailscaled's kube store would (a direct store write, not through
   * Metacontroller).
   */
  bindReplica(index: number): FakeNode;
  setPeers(peers: FakePeer[]): void;
  peers(): { db1: FakePeer; router: FakePeer };
  keySecret(): K8sObject | undefined;
  /** Every child of the egress, as JSON, sorted (to compare before/after a fault). */
  childrenSnapshot(): string;
  metricsText(): Promise<string>;
}

export interface WorldOptions {
  /** Extra targets beyond postgres and printer, given the echo server's port. */
  extraTargets?: (echoPort: number) => Record<string, unknown>[];
  /** Objects applied before the egress (e.g. a foreign Service). */
  before?: K8sObject[];
  /** Apply the egress right away (default true). */
  applyEgress?: boolean;
  /** A private Headscale CA in the Tailnet's credentials Secret (from its caSecretRef). */
  ca?: string;
  /** Spec fields over the default (replicas). */
  spec?: Record<string, unknown>;
}

/** The policy and the two nodes the egress targets: db-1, and a router with an approved subnet route. */
function seedHeadscale(fake: FakeHeadscale): { db1: FakeNode; router: FakeNode } {
  fake.setPolicy(policyText([TAG, "tag:router"]));
  const db1 = fake.addNode({ name: "db-1" });
  const router = fake.addNode({
    name: "router",
    tags: ["tag:router"],
    availableRoutes: ["192.168.1.0/24"],
    approvedRoutes: ["192.168.1.0/24"],
  });
  return { db1, router };
}

/**
 * What tailscaled gives the agent, on loopback: a SOCKS5 stand-in (every tailnet host → a TCP echo server
 * on 127.0.0.1, or 127.0.0.2 where nothing listens for hosts in `unreachable`) and the fake LocalAPI.
 */
async function loopbackTailscale(t: TestContext, unreachable: Set<string>) {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const socks = await startSocks5Server({ resolve: (host) => (unreachable.has(host) ? "127.0.0.2" : "127.0.0.1") });
  t.after(() => socks.close());
  const localApi = await startFakeLocalApi(
    fakeStatus({ HostName: "shop-db", TailscaleIPs: [], Online: false }, [], "NeedsLogin"),
  );
  t.after(() => localApi.close());
  return { echo, socks, localApi };
}

/** db-1 and the router as the agent's netmap shows them. */
function peersOf(db1: FakeNode, router: FakeNode): { db1: FakePeer; router: FakePeer } {
  return {
    db1: { HostName: "db-1", DNSName: "db-1.ts.example.com.", TailscaleIPs: [db1.ipv4], Online: true },
    router: {
      HostName: "router",
      DNSName: "router.ts.example.com.",
      TailscaleIPs: [router.ipv4],
      PrimaryRoutes: ["192.168.1.0/24"],
      Online: true,
    },
  };
}

export async function world(t: TestContext, opts: WorldOptions = {}): Promise<World> {
  const clock = { now: T0 };
  const now = () => clock.now;
  const fake = await useFakeHeadscale(t, { now });
  const { db1, router } = seedHeadscale(fake);
  const unreachable = new Set<string>();
  const { echo, socks, localApi } = await loopbackTailscale(t, unreachable);

  const spec: Record<string, unknown> = {
    tailnetRef: { name: "home" },
    targets: [
      { name: "postgres", host: "db-1", ports: [{ port: echo.port }] },
      { name: "printer", host: "192.168.1.10", ports: [{ port: echo.port }] },
      ...(opts.extraTargets?.(echo.port) ?? []),
    ],
    ...opts.spec,
  };
  const agent = await loopbackEgressAgent(
    t,
    parentObject("TailnetEgress", "db", spec, { namespace: "shop" }),
    socks,
    localApi,
  );

  const views = new HeadscaleViews({ timeoutMs: 300, cacheTTLSeconds: 0, retries: 0, now });
  t.after(() => views.close());
  const kinds = new Map(kindModules);
  kinds.set("tailnet", skeletonTailnet());
  // read straight from the registry: /metrics sweeps resource series by wall-clock age, and this
  // world's clock is fixed
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const { app } = await build(t, { server: { deps: { views, now, metrics, events: memoryEventRecorder() }, kinds } });
  const mc = new FakeMetacontroller({ app, agentPods: { metricsPort: () => agent.metricsPort } });

  mc.apply(
    parentObject("Tailnet", "home", {
      headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      dns: { baseDomain: "ts.example.com" },
    }),
  );
  mc.apply(credentialsSecret(fake, opts.ca));
  for (const o of opts.before ?? []) mc.apply(o);
  if (opts.applyEgress !== false) mc.apply(parentObject("TailnetEgress", "db", spec, { namespace: "shop" }));

  const egress = () => {
    const e = mc.get(API, "TailnetEgress", "db", "shop");
    if (!e) throw new Error("egress shop/db is gone");
    return e;
  };
  const peers = () => peersOf(db1, router);
  let self = { HostName: "shop-db", TailscaleIPs: [] as string[], Online: false };
  const keySecret = () => mc.list("Secret").find((s) => s.metadata.labels?.["tailnet.internal/authkey"] === "true");

  const world0 = {
    fake,
    mc,
    app,
    agent,
    localApi,
    socks,
    echo,
    clock,
    unreachable,
    db1,
    router,
    spec,
    egress,
    cond: (type: string) => mc.condition("TailnetEgress", "db", type, "shop"),
    async settle() {
      await agent.refresh();
      // the emulator runs the StatefulSets' Pods (agentPods); a test boots their tailscale (bindReplica)
      return await mc.settle();
    },
    register() {
      const node = bindReplica(0);
      self = { HostName: "shop-db", TailscaleIPs: [node.ipv4], Online: true };
      const p = peers();
      localApi.setStatus(fakeStatus(self, [p.db1, p.router]));
      return node;
    },
    bindReplica,
  };
  function bindReplica(index: number): FakeNode {
    // the agent pod boots from the StatefulSet the operator returned (fake containerboot), and
    // registers with what it reads there: its key, its host name, the tags it requests
    const { node, boot } = bootReplica(mc, fake, "shop", "db-agent", index);
    // tailscaled accepts the peers' subnet routes only when the pod spec says so
    localApi.setPrefs({ RouteAll: boot.acceptRoutes });
    return node;
  }
  return {
    ...world0,
    setPeers(list) {
      localApi.setStatus(fakeStatus(self, list));
    },
    peers,
    keySecret,
    childrenSnapshot() {
      return JSON.stringify(
        mc
          .childrenOf(egress())
          .map((c) => ({ ...c, status: undefined }))
          .sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`)),
      );
    },
    metricsText: () => metrics.registry.metrics(),
  };
}

/** Brings a fresh world to Ready: first sync (key created, NotRegistered), registration, netmap. */
export async function toReady(w: World): Promise<void> {
  await w.settle();
  w.register();
  await w.settle();
}

/** A Service someone else created (no owner, no labels of ours). */
export function foreignService(name: string): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "shop", labels: { app: "legacy" } },
    spec: { ports: [{ port: 80 }], selector: { app: "legacy" } },
  };
}

export type EgressStatus = {
  targets?: Record<string, string>[];
  tag?: string;
  conditions: { type: string; reason: string }[];
};

/** Condition type → reason of the egress, as Metacontroller wrote its status. */
export const reasons = (w: World) =>
  Object.fromEntries(
    (w.egress().status as EgressStatus).conditions
      // NodeIdentity is asserted by the identity tests (e2e-identity.test.ts), these rows are about the data path
      .filter((c) => c.type !== "NodeIdentity")
      .map((c) => [c.type, c.reason]),
  );
export const targetReasons = (w: World) =>
  Object.fromEntries(((w.egress().status as EgressStatus).targets ?? []).map((t) => [t.name, t.reason]));
export const kindsOf = (w: World) =>
  w.mc
    .childrenOf(w.egress())
    .map((c) => `${c.kind}/${c.metadata.name}`)
    .sort();
/** Replica i's machine key as its pod wrote it (tailscaled's kubestore `_machinekey`). */
export const machineKey = (w: World, i = 0) => machineKeyIn(w.mc, "shop", `db-agent-${i}-state`);

export const deploymentEnv = (w: World) => {
  const d = w.mc.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as K8sObject;
  const spec = d.spec as { template: { spec: { containers: { env?: { name: string; valueFrom?: unknown }[] }[] } } };
  return spec.template.spec.containers[0].env ?? [];
};

export const READY = {
  TagKnown: "Known",
  Registered: "Registered",
  RoutesGranted: "RoutesGranted",
  TargetsReachable: "Reachable",
  ServiceConflict: "NoConflict",
  Ready: "Ready",
};

/** An administrator's reusable key with `tag`, minted an hour before T0 through the CLI: not the egress's. */
export function adminKey(fake: FakeHeadscale, tag: string): string {
  const id = fake.state.nextKeyId();
  fake.state.preAuthKeys.set(id, {
    id,
    prefix: `admin${id}`,
    key: `hskey-auth-admin${id}-${"a".repeat(64)}`,
    userId: null,
    reusable: true,
    ephemeral: true,
    used: false,
    expiration: new Date("2026-12-29T10:00:00Z"),
    createdAt: new Date("2026-11-29T09:00:00Z"),
    aclTags: [tag],
  });
  return id;
}
