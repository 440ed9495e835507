/**
 * The end-to-end world of the TailnetIngress tests: the Metacontroller emulator drives the real hook
 * server, which talks to the fake Headscale and scrapes real agents on loopback. The Tailnet kind
 * is a stub (the Tailnet is only looked up through `related`; its own sync is tested elsewhere and
 * would PUT policies here), so the policy is set on the fake directly.
 */
import { request } from "node:https";
import { connect as tlsConnect } from "node:tls";
import { type RunningAgent, startAgent } from "../../../../src/agent/main.js";
import { API_VERSION, type HookKind } from "../../../../src/api/schemas.js";
import type { AgentConfigInput } from "../../../../src/contract/agent-config.js";
import type { ControllerComponent } from "../../../../src/emulator/metacontroller/controllers.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { ingressAgentConfig } from "../../../../src/kinds/composite/ingress/children.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { ingressNames } from "../../../../src/kinds/shared/ingress-names.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { closedPort } from "../../../fakes/agent/echo.js";
import { type FakeHeadscale, type FakeNode, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { silentTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { type Endpoint, type ServeHandler, serveForward } from "../../../fakes/tailscaled-serve.js";
import { build } from "../../../helpers/server.js";
import { bootNode } from "../../shared/replica-boot.js";
import { pointPodsAt } from "../../shared/world.js";
import { BASE, credentials, TAG, tailnet } from "./fixtures.js";

type Ctx = { after: (fn: () => Promise<void> | void) => void };

export const policyText = (tags: string[]) =>
  JSON.stringify({ tagOwners: Object.fromEntries(tags.map((t) => [t, []])) }, null, 2);

export interface World {
  hs: FakeHeadscale;
  mc: FakeMetacontroller;
  app: Awaited<ReturnType<typeof build>>["app"];
  /** The clock the hook server decides with (tests may move it). */
  clock: { now: Date };
  /** Points every agent pod (now and later) at this metrics port. */
  pointPodsAt(port: number): void;
  ingress(name?: string, namespace?: string): K8sObject | undefined;
  condition(type: string, name?: string, namespace?: string): { status: string; reason: string; message: string };
  /**
   * Replica `replica`'s pod registers its node with the pre-auth key the operator put in the ingress's key Secret,
   * and writes its device_id into its state Secret as tailscaled's kube store would.
   */
  register(name?: string, namespace?: string, replica?: number): FakeNode;
  metrics(): Promise<string>;
}

export async function world(
  t: Ctx,
  opts: {
    tailnet?: boolean;
    credentials?: boolean;
    tags?: string[];
    tailnetSpec?: Record<string, unknown>;
    /** Status fields the stand-in Tailnet answers with (e.g. policy.leftOut). */
    tailnetStatus?: Record<string, unknown>;
    /** Kustomize components installed (manifests/components), e.g. cert-manager. */
    components?: ControllerComponent[];
  } = {},
): Promise<World> {
  const hs = await useFakeHeadscale(t, { policy: policyText(opts.tags ?? [TAG]) });
  const views = new HeadscaleViews({ timeoutMs: 400, cacheTTLSeconds: 0, retries: 0 });
  t.after(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const kinds = new Map<HookKind, KindModule>(kindModules);
  const extra = opts.tailnetStatus;
  kinds.set(
    "tailnet",
    extra
      ? {
          ...silentTailnet,
          sync: async (req, deps) => {
            const r = await silentTailnet.sync(req, deps);
            return { ...r, status: { ...r.status, ...extra } };
          },
        }
      : silentTailnet,
  );
  const clock = { now: new Date() };
  const { app } = await build(t, {
    server: { kinds, deps: { views, metrics, now: () => clock.now, events: memoryEventRecorder() } },
  });
  // Until a test starts an agent, pods point at a port nothing listens on (a scrape is refused).
  let port = await closedPort();
  const mc = new FakeMetacontroller({
    app,
    agentPods: { metricsPort: () => port },
    ...(opts.components ? { components: opts.components } : {}),
  });
  if (opts.tailnet !== false) {
    mc.apply(
      tailnet("home", {
        headscale: { url: hs.url, apiKeySecretRef: { namespace: "x", name: "y" } },
        ...opts.tailnetSpec,
      }),
    );
  }
  if (opts.credentials !== false) mc.apply(credentials(hs.url, hs.apiKey));

  const get = (name = "grafana", namespace = "monitoring") => mc.get(API_VERSION, "TailnetIngress", name, namespace);
  return {
    hs,
    mc,
    app,
    clock,
    pointPodsAt(next) {
      port = next;
      pointPodsAt(mc, next);
    },
    ingress: get,
    condition(type, name = "grafana", namespace = "monitoring") {
      const c = mc.condition("TailnetIngress", name, type, namespace);
      if (!c) throw new Error(`no ${type} condition on ${namespace}/${name}`);
      return c;
    },
    register(name = "grafana", namespace = "monitoring", replica = 0) {
      // the agent pod the emulator runs boots from its StatefulSet (fake containerboot, RBAC checked)
      return bootNode(mc, hs, namespace, `${name}-agent`, replica);
    },
    async metrics() {
      return (await app.inject({ method: "GET", url: "/metrics" })).body;
    },
  };
}

export interface AgentOptions {
  /** Backend port on 127.0.0.1 for every expose. */
  backendPort: number;
  /** http mode: the certificate pair files the agent serves (the mounted Secret in a cluster). */
  tls?: { certFile: string; keyFile: string };
  /** A (fake) tailscaled LocalAPI socket: the agent reads its netmap and asks its resolver there. */
  localApiSocket?: string;
}

/**
 * A real agent for an ingress, configured by the operator's own builder; only what the pod's
 * environment provides is rewritten: cluster DNS → 127.0.0.1, mounted Secret → PKI files, fixed
 * ports → ephemeral ones, no tailscaled. Probed once before it is returned.
 */
export async function ingressAgent(t: Ctx, parent: K8sObject, opts: AgentOptions): Promise<RunningAgent> {
  const base = ingressAgentConfig(parent, readIngressSpec(parent), ingressNames(parent, BASE).exposes);
  const config: AgentConfigInput = {
    ...base,
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    tailscale: opts.localApiSocket ? { localApiSocket: opts.localApiSocket } : {},
    exposes: (base.exposes ?? []).map((e) => ({
      ...e,
      listenPort: 0,
      backend: { host: "127.0.0.1", port: opts.backendPort },
      ...(e.tls && opts.tls ? { tls: opts.tls } : {}),
    })),
  };
  const agent = await startAgent(config, { timers: false, defaultMetrics: false });
  t.after(() => agent.close());
  await agent.refresh();
  return agent;
}

/** How the connection reaches the agent: as tailscaled forwards it for `serve` from `client` to `nodeIp`. */
export interface ViaTailscaled {
  serve: ServeHandler;
  client: Endpoint;
  nodeIp: string;
}

/**
 * One HTTPS GET through the agent's TLS listener, verified against the test CA for `servername`; `via`:
 * through the fake tailscaled serve forward (so with the PROXY header its handler asks for), the handler's
 * TCPForward pointed at `port`.
 */
export async function httpsGet(
  port: number,
  servername: string,
  ca: string,
  path: string,
  via?: ViaTailscaled,
): Promise<{ status: number; body: string }> {
  const raw = via
    ? await serveForward({ ...via.serve, TCPForward: `127.0.0.2:${port}` }, via.client, via.nodeIp)
    : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.2",
        port,
        servername,
        ca,
        path,
        headers: { host: servername },
        // no agent with createConnection: `agent: false` would make a fresh Agent that dials on its own
        ...(raw ? { createConnection: () => tlsConnect({ socket: raw, servername, ca }) } : { agent: false }),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The value of one sample in Prometheus text format (labels must match exactly), or undefined. */
export function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(",");
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (.+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2]
      .split(/,(?=[a-zA-Z_]+=")/)
      .sort()
      .join(",");
    if (have === want) return Number(m[3]);
  }
  return undefined;
}
