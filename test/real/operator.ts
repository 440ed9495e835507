/**
 * The operator side of a real-world scenario: the real hook server (every kind real, nothing
 * stubbed) driven by the tests' Metacontroller loop (FakeMetacontroller), talking HTTPS to the real
 * Headscale of a RealWorld with the test CA from the Tailnet's caSecretRef. The Tailnet "home" is in
 * Apply mode with the world's BASE_POLICY as its base ConfigMap, so every policy the operator renders
 * is checked and PUT on the real server.
 *
 * The test process is the operator's "pod": it reaches Headscale over the bridge (net.rootIp), the
 * only address outside loopback it ever dials.
 */

import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { FastifyInstance } from "fastify";
import type { HookKind } from "../../src/api/schemas.js";
import type { ControllerComponent } from "../../src/emulator/metacontroller/controllers.js";
import { HeadscaleViews } from "../../src/headscale/view.js";
import { reuseAllChildren } from "../../src/k8s/objects.js";
import { kindModules } from "../../src/kinds/composite/index.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import type { HookRequest, KindModule } from "../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../src/server/events.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { parentObject } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { Peer } from "./peers.js";
import { PodApi } from "./pod-api.js";
import { PodRunner, type RunningPod } from "./pods.js";
import { BASE_POLICY, type RealWorld } from "./world.js";

const run = promisify(execFile);

export const API = "tailnet.internal/v1alpha1";
export const OPS = "tailnet-system";

type Cond = { type: string; status: string; reason: string; message: string };

export interface RealOperatorOptions {
  /** Shallow overrides of the Tailnet's spec. */
  tailnet?: Record<string, unknown>;
  /**
   * Kinds whose objects are data only here: their hooks keep the status and the children as observed
   * (e.g. a TailnetEgress a gateway's derived zone reads, without running its agent pod).
   */
  stubKinds?: HookKind[];
  /** Kustomize components installed (manifests/components), e.g. cert-manager (Certificates as ingress children). */
  components?: ControllerComponent[];
}

function stubKind(hookKind: HookKind): KindModule {
  // children kept as observed: a test's Service controlled by a stub egress stands for the egress's own
  const keep = (req: HookRequest) => ({
    status: { ...((req.parent.status as Record<string, unknown>) ?? {}) },
    children: reuseAllChildren(req.children),
  });
  return {
    hookKind,
    customize: () => [],
    sync: async (req) => keep(req),
    finalize: async () => ({ status: {}, children: [], finalized: true }),
    invalid: (req) => keep(req),
  };
}

/** The Tailnet spec the scenarios share (Apply mode, base policy, CA, the world's base domain). */
export function tailnetSpec(world: RealWorld, overrides: Record<string, unknown> = {}) {
  return {
    headscale: {
      url: world.headscale.url,
      apiKeySecretRef: { namespace: OPS, name: "headscale-api-key" },
      caSecretRef: { namespace: OPS, name: "headscale-ca" },
    },
    policy: { mode: "Apply", baseConfigMapRef: { namespace: OPS, name: "tailnet-policy-base" } },
    allowedIngressSources: ["group:eng"],
    reservedNetworks: ["10.244.0.0/16"],
    dns: { baseDomain: BASE_DOMAIN },
    ...overrides,
  };
}

/** One run of the hook server process: its own Headscale views (cache), metrics, events and logs. */
async function startHookServer(
  ctx: { after: (fn: () => Promise<void> | void) => void },
  kinds: Map<HookKind, KindModule>,
) {
  // No cache and no retries: every sync reads the real server, as after a resync period.
  const views = new HeadscaleViews({ timeoutMs: 15_000, cacheTTLSeconds: 0, retries: 0 });
  ctx.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const events = memoryEventRecorder();
  const { app, logs } = await build(ctx, { server: { kinds, deps: { views, metrics, events } } });
  return { app, logs, metrics, events };
}

type HookServer = Awaited<ReturnType<typeof startHookServer>>;

/**
 * The loop's view of the operator: every call goes to the hook server running now, so the operator can be stopped
 * and started again under the same Metacontroller loop (as a restarted operator pod behind the same Service). While
 * it is stopped, a hook call fails as a connection refused would (the loop records the error and retries).
 */
function frontFor(current: () => HookServer | undefined): FastifyInstance {
  const inject = (async (opts: unknown) => {
    const server = current();
    if (!server) throw new Error("connect ECONNREFUSED: the operator is stopped");
    return server.app.inject(opts as never);
  }) as FastifyInstance["inject"];
  return new Proxy({} as FastifyInstance, {
    get: (_t, key) => {
      if (key === "inject") return inject;
      const server = current();
      const v = server ? Reflect.get(server.app, key) : undefined;
      return typeof v === "function" ? v.bind(server?.app) : v;
    },
  });
}

export async function startOperator(world: RealWorld, opts: RealOperatorOptions = {}) {
  const cleanups: (() => Promise<void> | void)[] = [];
  const kinds = new Map<HookKind, KindModule>(kindModules);
  for (const k of opts.stubKinds ?? []) kinds.set(k, stubKind(k));
  // the process's own cleanups run when it stops; the loop and the pod API outlive it
  let processCleanups: (() => Promise<void> | void)[] = [];
  const processCtx = { after: (fn: () => Promise<void> | void) => void processCleanups.push(fn) };
  const stopProcess = async () => {
    const fns = processCleanups.reverse();
    processCleanups = [];
    for (const fn of fns) await fn();
  };
  cleanups.push(stopProcess);
  let server: HookServer | undefined = await startHookServer(processCtx, kinds);
  const mc = new FakeMetacontroller({
    app: frontFor(() => server),
    ...(opts.components ? { components: opts.components } : {}),
  });
  // The Kubernetes API the agent pods reach (their state Secrets), served from the loop's store on the test
  // process's bridge leg with a certificate from the world's CA.
  const kubeApi = await PodApi.start(mc, { host: world.net.rootIp, pki: world.headscale.pki });
  cleanups.push(() => kubeApi.close());
  mc.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "headscale-api-key", namespace: OPS },
    data: { apiKey: b64(world.headscale.apiKey) },
  });
  mc.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "headscale-ca", namespace: OPS },
    data: { "ca.crt": b64(world.headscale.caPem) },
  });
  mc.apply({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "tailnet-policy-base", namespace: OPS },
    data: { "policy.hujson": BASE_POLICY },
  });
  mc.apply(parentObject("Tailnet", "home", tailnetSpec(world, opts.tailnet)));

  const conditions = (kind: string, name: string, namespace?: string): Cond[] =>
    ((mc.get(API, kind, name, namespace)?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).map(
      (c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message }),
    );
  return {
    mc,
    kubeApi,
    /** The hook server running now (a restart makes a new one). */
    get app() {
      return (server as HookServer).app;
    },
    get logs() {
      return (server as HookServer).logs;
    },
    get events() {
      return (server as HookServer).events;
    },
    get metrics() {
      return (server as HookServer).metrics;
    },
    /** Stops the operator process (hook server, its Headscale views); the loop, its store and the pods stay. */
    async stop(): Promise<void> {
      server = undefined;
      await stopProcess();
    },
    /** Starts a new operator process (fresh views, metrics, events, logs) under the same loop. */
    async start(): Promise<void> {
      if (server) throw new Error("the operator is running");
      server = await startHookServer(processCtx, kinds);
    },
    /** Condition type → reason of a parent. */
    reasons(kind: string, name: string, namespace?: string): Record<string, string> {
      return Object.fromEntries(conditions(kind, name, namespace).map((c) => [c.type, c.reason]));
    },
    condition(kind: string, name: string, type: string, namespace?: string): Cond | undefined {
      return conditions(kind, name, namespace).find((c) => c.type === type);
    },
    /** Hook answers that were not 200, and the last hook errors (for failure messages). */
    failures(): string {
      return mc.errors.slice(-5).join("\n");
    },
    async close(): Promise<void> {
      for (const fn of cleanups.reverse()) await fn();
    },
  };
}

export type RealOperator = Awaited<ReturnType<typeof startOperator>>;

/** The node list of the real server as `headscale nodes list-routes -o json` shows it. */
export interface RouteRow {
  id: string | number;
  given_name?: string;
  name?: string;
  approved_routes?: string[];
  available_routes?: string[];
  subnet_routes?: string[];
}

/** `headscale nodes list-routes -o json` (nodes with any route), keyed by given name. */
export async function listRoutes(world: RealWorld): Promise<Map<string, RouteRow>> {
  const rows = (await world.headscale.json<RouteRow[] | null>(["nodes", "list-routes"])) ?? [];
  return new Map(rows.map((r) => [r.given_name ?? r.name ?? String(r.id), r]));
}

export {
  type DnsAnswer,
  parseDnsAnswer,
  socksConnect,
  socksDns,
  socksEcho,
  socksKnock,
} from "./socks.js";

/**
 * Runs `fn` while `prefixes` fail fast inside a peer's own namespace (an `unreachable` route:
 * EHOSTUNREACH), then removes the routes again (TestNet's containment check allows no other routes
 * than its own). A tailscaled with no tailnet route for an address falls back to the host's own
 * network for a SOCKS5 dial (net/tsdial); in our namespaces that dial finds no route and counts as a
 * containment breach (Ip OutNoRoutes), although the address is one of our own namespaces' (a refusal
 * check is exactly that dial). With the route the fallback fails the same way, uncounted, for these
 * prefixes only. The tailnet path (netstack) never uses it. (Subnets made by TestNet.addSubnet get
 * such routes from TestNet itself.)
 */
export async function withUnreachable<T>(peer: Peer, prefixes: string[], fn: () => Promise<T>): Promise<T> {
  const added: string[] = [];
  try {
    for (const p of prefixes) {
      await run("/usr/sbin/ip", ["-n", peer.host.netns, "route", "add", "unreachable", p]);
      added.push(p);
    }
    return await fn();
  } finally {
    for (const p of added) await run("/usr/sbin/ip", ["-n", peer.host.netns, "route", "del", "unreachable", p]);
  }
}

/**
 * The pod runner of a scenario: the operator's Deployments and StatefulSets as processes on the world's network,
 * with the operator's pod API (its certificate from the world's CA, published as kube-root-ca.crt). REAL_ANY_IMAGE=1 runs whatever tailscale tag the product pins on the built
 * binaries (default: only the version built in .cache/real).
 */
export function podRunnerFor(world: RealWorld, op: RealOperator): PodRunner {
  // The agent pods keep their tailscaled state in a per-replica Secret through the pod API (issue 32): a runner
  // without it would leave containerboot failing its permission check.
  return new PodRunner({
    net: world.net,
    mc: op.mc,
    kubeApi: op.kubeApi,
    strictImages: process.env.REAL_ANY_IMAGE !== "1",
  });
}

/** The running pods of an agent's replicas (StatefulSets `<name>-agent-<i>`, issue 32), by ordinal. */
export function agentPods(pods: PodRunner, namespace: string, name: string): RunningPod[] {
  const sts = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-agent-(\\d+)$`);
  const ordinal = (p: RunningPod) => Number(sts.exec(p.deployment)?.[1]);
  return pods.pods
    .filter((p) => p.namespace === namespace && p.controllerKind === "StatefulSet" && sts.test(p.deployment))
    .sort((a, b) => ordinal(a) - ordinal(b));
}
