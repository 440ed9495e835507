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
import { SocksClient } from "socks";
import { HeadscaleViews } from "../../src/headscale/view.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import { memoryEventRecorder } from "../../src/server/events.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { parentObject } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { Peer } from "./peers.js";
import { BASE_POLICY, type RealWorld } from "./world.js";

export const API = "tailnet.internal/v1alpha1";
export const OPS = "tailnet-system";

type Cond = { type: string; status: string; reason: string; message: string };

export interface RealOperatorOptions {
  /** Shallow overrides of the Tailnet's spec. */
  tailnet?: Record<string, unknown>;
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

export async function startOperator(world: RealWorld, opts: RealOperatorOptions = {}) {
  const cleanups: (() => Promise<void> | void)[] = [];
  const ctx = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) };
  // No cache and no retries: every sync reads the real server, as after a resync period.
  const views = new HeadscaleViews({ timeoutMs: 15_000, cacheTTLSeconds: 0, retries: 0 });
  cleanups.push(() => views.close());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const events = memoryEventRecorder();
  const { app, logs } = await build(ctx, { server: { deps: { views, metrics, events } } });
  const mc = new FakeMetacontroller({ app });
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
    app,
    logs,
    events,
    metrics,
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

/**
 * A TCP round trip through a peer's tailscaled SOCKS5 server (on the peer's bridge address): sends
 * `msg`, returns what came back, or "error: …" (tailscaled answers every failed dial with a SOCKS5
 * general failure, after its 5 s dial timeout at most).
 */
export async function socksEcho(peer: Peer, host: string, port: number, msg = "ping"): Promise<string> {
  try {
    const { socket } = await SocksClient.createConnection({
      proxy: { host: peer.socks5.host, port: peer.socks5.port, type: 5 },
      command: "connect",
      destination: { host, port },
      timeout: 8000,
    });
    return await new Promise<string>((resolve) => {
      let got = "";
      const timer = setTimeout(() => {
        socket.destroy();
        resolve(`error: no echo within 5 s (got ${JSON.stringify(got)})`);
      }, 5000);
      socket.on("data", (d) => {
        got += d.toString("utf8");
        if (got.length >= msg.length) {
          clearTimeout(timer);
          socket.destroy();
          resolve(got);
        }
      });
      socket.on("error", (e) => {
        clearTimeout(timer);
        resolve(`error: ${e.message}`);
      });
      socket.write(msg);
    });
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}
