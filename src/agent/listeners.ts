// The agent's data listeners, bound together: egress one per target port (dialled through tailscaled's
// SOCKS5 proxy), ingress one per tcp and kube-api expose and one TLS listener per http listen port, plus the
// refusers on refuseHost. Any bind failure closes what was bound before it and rejects.
import type { AgentConfig, AgentExpose } from "../contract/agent-config.js";
import { dialerFor, directDialer } from "./dial.js";
import { type Forwarder, type ListenerCommon, startForwarder } from "./forward.js";
import { type HttpsListener, startHttpsListener } from "./https.js";
import { type KubeApiListener, startKubeApiListener } from "./kube-api.js";
import { type Refuser, startRefuser } from "./refuse.js";

export interface AgentPorts {
  /** Egress: bound listen port of every target port, in config order. */
  targets: { name: string; ports: { port: number; listenPort: number }[] }[];
  /** Ingress: bound listen port of every expose, in config order. */
  exposes: { name: string; listenPort: number }[];
}

export interface AgentListeners {
  ports: AgentPorts;
  /** The TLS listeners: http exposes, and kube-api exposes with tls (their certificates are reloaded on a timer). */
  https: (HttpsListener | KubeApiListener)[];
  /** Stops every listener; open connections get graceMs to finish. */
  close(graceMs: number): Promise<void>;
}

/** http exposes sharing a listen port share a TLS listener; port 0 (tests) never shares. */
function httpGroups(exposes: readonly AgentExpose[]): AgentExpose[][] {
  const groups = new Map<string, AgentExpose[]>();
  exposes.forEach((expose, i) => {
    if (expose.mode !== "http") return;
    const key = expose.listenPort === 0 ? `ephemeral-${i}` : String(expose.listenPort);
    groups.set(key, [...(groups.get(key) ?? []), expose]);
  });
  return [...groups.values()];
}

/** Every bound listen port and the name its bypass refusals count under (the first expose of a shared port). */
function boundPorts(ports: AgentPorts): Map<number, string> {
  const out = new Map<number, string>();
  for (const t of ports.targets) for (const p of t.ports) if (!out.has(p.listenPort)) out.set(p.listenPort, t.name);
  for (const e of ports.exposes) if (!out.has(e.listenPort)) out.set(e.listenPort, e.name);
  return out;
}

/** Binding again after EADDRINUSE, only with ephemeral ports: at most this many times in all. */
const EPHEMERAL_ATTEMPTS = 5;

/**
 * Binds every listener of the config. `tailnetDown` says why a target dial must wait (undefined while
 * tailscaled is Running). A listen port of 0 (tests) is whatever the kernel hands out on the listen host, and the
 * refuser then needs that same number on refuseHost, where an outgoing socket may hold it: then everything is
 * bound again with new ports. Configured ports are never retried.
 */
export async function startListeners(
  config: AgentConfig,
  common: ListenerCommon,
  tailnetDown: () => string | undefined,
): Promise<AgentListeners> {
  const ephemeral =
    config.targets.some((t) => t.ports.some((p) => p.listenPort === 0)) ||
    config.exposes.some((e) => e.listenPort === 0);
  for (let attempt = 1; ; attempt++) {
    try {
      return await bindListeners(config, common, tailnetDown);
    } catch (err) {
      const code = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code;
      if (!ephemeral || code !== "EADDRINUSE" || attempt >= EPHEMERAL_ATTEMPTS) throw err;
      common.log.warn("an ephemeral listen port is taken on the refuse host; binding again", { attempt });
    }
  }
}

async function bindListeners(
  config: AgentConfig,
  common: ListenerCommon,
  tailnetDown: () => string | undefined,
): Promise<AgentListeners> {
  const forwarders: Forwarder[] = [];
  const https: (HttpsListener | KubeApiListener)[] = [];
  const kubeListeners: KubeApiListener[] = [];
  const refusers: Refuser[] = [];
  const ports: AgentPorts = { targets: [], exposes: [] };
  const close = async (graceMs: number) => {
    await Promise.all([
      ...[...forwarders, ...https, ...kubeListeners].map((listener) => listener.close(graceMs)),
      ...refusers.map((refuser) => refuser.close()),
    ]);
  };
  try {
    for (const target of config.targets) {
      const bound: { port: number; listenPort: number }[] = [];
      for (const p of target.ports) {
        const forwarder = await startForwarder({
          ...common,
          name: target.name,
          listenPort: p.listenPort,
          dial: dialerFor(config, target.host, p.port, tailnetDown),
        });
        forwarders.push(forwarder);
        bound.push({ port: p.port, listenPort: forwarder.port });
      }
      ports.targets.push({ name: target.name, ports: bound });
    }
    const exposePorts = await startExposes(config, common, { forwarders, https, kubeListeners });
    ports.exposes = config.exposes.map((e) => ({ name: e.name, listenPort: exposePorts.get(e.name) ?? e.listenPort }));
    if (config.refuseHost) {
      const { metrics, log } = common;
      refusers.push(await startRefuser({ host: config.refuseHost, ports: boundPorts(ports), metrics, log }));
    }
  } catch (err) {
    await close(0);
    throw err;
  }
  return { ports, https, close };
}

/** The ingress listeners (tcp, kube-api, then http), pushed onto `into` as bound; expose name → bound port. */
async function startExposes(
  config: AgentConfig,
  common: ListenerCommon,
  into: { forwarders: Forwarder[]; https: (HttpsListener | KubeApiListener)[]; kubeListeners: KubeApiListener[] },
): Promise<Map<string, number>> {
  const { limits } = config;
  const exposePorts = new Map<string, number>();
  for (const expose of config.exposes) {
    if (expose.mode !== "tcp") continue;
    const forwarder = await startForwarder({
      ...common,
      name: expose.name,
      listenPort: expose.listenPort,
      dial: directDialer(expose.backend, limits.dialTimeoutSeconds * 1000),
    });
    into.forwarders.push(forwarder);
    exposePorts.set(expose.name, forwarder.port);
  }
  for (const expose of config.exposes) {
    if (expose.mode !== "kube-api" || !expose.kubeApi) continue;
    const listener = await startKubeApiListener({
      ...common,
      expose: { ...expose, kubeApi: expose.kubeApi },
      localApiSocket: config.tailscale.localApiSocket,
      headerTimeoutMs: limits.headerTimeoutSeconds * 1000,
      dialTimeoutMs: limits.dialTimeoutSeconds * 1000,
    });
    // with tls it is reloaded with the https listeners (and closed with them)
    (listener.tls ? into.https : into.kubeListeners).push(listener);
    exposePorts.set(expose.name, listener.port);
  }
  for (const group of httpGroups(config.exposes)) {
    const listener = await startHttpsListener({
      ...common,
      listenPort: group[0].listenPort,
      exposes: group,
      headerTimeoutMs: limits.headerTimeoutSeconds * 1000,
      dialTimeoutMs: limits.dialTimeoutSeconds * 1000,
    });
    into.https.push(listener);
    for (const name of listener.exposes) exposePorts.set(name, listener.port);
  }
  return exposePorts;
}
