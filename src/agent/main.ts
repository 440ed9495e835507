// The agent process: `tailnet-operator agent --config <file>`. It binds the data listeners of its role
// (egress: one per target port, dialled through tailscaled's SOCKS5 proxy; ingress: one per tcp expose and
// one TLS listener per http listen port), probes targets/backends and reads tailscaled's netmap on a timer,
// and serves /healthz, /status and /metrics on the metrics port. startAgent is the same thing without the
// process around it, for tests (listen ports 0 → ephemeral; the bound ports are reported).
import type { Registry } from "prom-client";
import {
  type AgentConfig,
  AgentConfigError,
  type AgentConfigInput,
  type AgentExpose,
  resolvePodIp,
  validateAgentConfig,
} from "../contract/agent-config.js";
import type { AgentStatus, ProbeResult } from "../contract/agent-status.js";
import { AGENT_CONFIG_PATH } from "../contract/ports.js";
import { loadAgentConfig } from "./config-file.js";
import {
  type Dialer,
  dialerFrom,
  directDialer,
  formatHostPort,
  parseHostPort,
  refuseDial,
  socksDialer,
} from "./dial.js";
import { createConnectionBudget, type Forwarder, startForwarder } from "./forward.js";
import { type HttpsListener, startHttpsListener } from "./https.js";
import { type KubeApiListener, startKubeApiListener } from "./kube-api.js";
import { fetchNetmap, type Netmap } from "./localapi.js";
import { type AgentLogger, jsonLogger, type LogLevel, silentLogger } from "./log.js";
import { createAgentMetrics } from "./metrics.js";
import { type ProbeSpec, probeAll } from "./probe.js";
import { type Refuser, startRefuser } from "./refuse.js";
import { type MetricsServer, startMetricsServer } from "./server.js";
import { buildStatus } from "./status.js";

/** How long SIGTERM waits for open connections before closing them (below the pod's 30 s grace period). */
export const SHUTDOWN_GRACE_MS = 20_000;

export interface StartAgentOptions {
  /** Default: silent (tests); runAgent passes a JSON logger. */
  log?: AgentLogger;
  /** Register prom-client's default process metrics (default true). */
  defaultMetrics?: boolean;
  /** Run the probe/LocalAPI and certificate-reload timers (default true); tests may drive refresh() instead. */
  timers?: boolean;
  /** Where `pod-ip` in the config is read from (POD_IP); default process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface AgentPorts {
  /** Egress: bound listen port of every target port, in config order. */
  targets: { name: string; ports: { port: number; listenPort: number }[] }[];
  /** Ingress: bound listen port of every expose, in config order. */
  exposes: { name: string; listenPort: number }[];
}

export interface RunningAgent {
  readonly config: AgentConfig;
  readonly metricsPort: number;
  readonly ports: AgentPorts;
  readonly registry: Registry;
  /** The /status document as of the last refresh. */
  status(): AgentStatus;
  /** Runs one probe + LocalAPI round now and returns the resulting status. */
  refresh(): Promise<AgentStatus>;
  /** Re-reads the certificate files of http exposes now. */
  reloadCertificates(): Promise<void>;
  /** Stops listening; open connections get graceMs (default 0) to finish, then are closed. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The dialer of a target. Through SOCKS5 with a LocalAPI to ask, it dials only while tailscaled's last
 * known BackendState is Running: before that tailscaled has no netmap, and its SOCKS5 server hands a
 * dial to a tailnet IP or a subnet address to the system dialer (net/tsdial), i.e. into the pod
 * network — seen in test/real as a dial with no route out of the agent pod at boot.
 */
function dialerFor(config: AgentConfig, host: string, port: number, tailnetUp: () => string | undefined): Dialer {
  const timeoutMs = config.limits.dialTimeoutSeconds * 1000;
  const socks = config.tailscale.socksAddr;
  if (!socks) return directDialer({ host, port }, timeoutMs);
  const dial = socksDialer(parseHostPort(socks), { host, port }, timeoutMs);
  if (!config.tailscale.localApiSocket) return dial;
  const address = formatHostPort({ host, port });
  return dialerFrom(address, (done) => {
    const down = tailnetUp();
    return down ? refuseDial(address, down, done) : dial.start(done);
  });
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

export async function startAgent(
  input: AgentConfigInput | AgentConfig,
  opts: StartAgentOptions = {},
): Promise<RunningAgent> {
  const config = resolvePodIp(validateAgentConfig(input), opts.env);
  const log = opts.log ?? silentLogger;
  const { limits } = config;
  const names = [...config.targets.map((t) => t.name), ...config.exposes.map((e) => e.name)];
  const metrics = createAgentMetrics(names, { defaultMetrics: opts.defaultMetrics });
  const budget = createConnectionBudget(limits.maxConnections);
  const common = {
    budget,
    idleTimeoutMs: limits.idleTimeoutSeconds * 1000,
    metrics,
    log,
    listenHost: config.listenHost,
  };

  // Set once the state below exists: undefined while tailscaled is Running, else why a dial waits.
  let tailnetDown: () => string | undefined = () => "tailscaled status not read yet";
  const tailnetUp = () => tailnetDown();
  const forwarders: Forwarder[] = [];
  const httpsListeners: HttpsListener[] = [];
  const kubeListeners: KubeApiListener[] = [];
  const refusers: Refuser[] = [];
  const ports: AgentPorts = { targets: [], exposes: [] };
  const closeListeners = (graceMs: number) =>
    Promise.all([
      ...[...forwarders, ...httpsListeners, ...kubeListeners].map((listener) => listener.close(graceMs)),
      ...refusers.map((refuser) => refuser.close()),
    ]);
  try {
    for (const target of config.targets) {
      const bound: { port: number; listenPort: number }[] = [];
      for (const p of target.ports) {
        const forwarder = await startForwarder({
          ...common,
          name: target.name,
          listenPort: p.listenPort,
          dial: dialerFor(config, target.host, p.port, tailnetUp),
        });
        forwarders.push(forwarder);
        bound.push({ port: p.port, listenPort: forwarder.port });
      }
      ports.targets.push({ name: target.name, ports: bound });
    }
    const exposePorts = new Map<string, number>();
    for (const expose of config.exposes) {
      if (expose.mode !== "tcp") continue;
      const forwarder = await startForwarder({
        ...common,
        name: expose.name,
        listenPort: expose.listenPort,
        dial: directDialer(expose.backend, limits.dialTimeoutSeconds * 1000),
      });
      forwarders.push(forwarder);
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
      kubeListeners.push(listener);
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
      httpsListeners.push(listener);
      for (const name of listener.exposes) exposePorts.set(name, listener.port);
    }
    ports.exposes = config.exposes.map((e) => ({ name: e.name, listenPort: exposePorts.get(e.name) ?? e.listenPort }));
    if (config.refuseHost)
      refusers.push(await startRefuser({ host: config.refuseHost, ports: boundPorts(ports), metrics, log }));
  } catch (err) {
    await closeListeners(0);
    throw err;
  }

  const probeSpecs: ProbeSpec[] = [
    ...config.targets.map((t) => ({
      name: t.name,
      dials: t.ports.map((p) => dialerFor(config, t.host, p.port, tailnetUp)),
    })),
    ...config.exposes.map((e) => ({
      name: e.name,
      dials: [directDialer(e.backend, limits.dialTimeoutSeconds * 1000)],
    })),
  ];
  const state = {
    listening: true,
    netmap: undefined as Netmap | undefined,
    netmapFailed: false,
    probes: new Map<string, ProbeResult>(),
    round: 0,
    applied: 0,
  };
  tailnetDown = () => {
    const backend = state.netmap?.backendState;
    if (backend === "Running") return undefined;
    return backend ? `tailscaled is ${backend}, not Running` : "tailscaled status not read yet";
  };
  const status = () =>
    buildStatus({
      listening: state.listening,
      netmapConfigured: config.tailscale.localApiSocket !== undefined,
      netmap: state.netmap,
      netmapFailed: state.netmapFailed,
      targets: config.targets,
      exposes: config.exposes,
      probes: state.probes,
    });

  const refresh = async (): Promise<AgentStatus> => {
    const round = ++state.round;
    const socket = config.tailscale.localApiSocket;
    // The netmap first: a tailscaled that just reached Running lets this round's probes dial.
    const netmap = socket
      ? await fetchNetmap(socket, limits.dialTimeoutSeconds * 1000).catch((err: Error) => err)
      : undefined;
    if (round > state.applied && netmap && !(netmap instanceof Error)) state.netmap = netmap;
    const probes = await probeAll(probeSpecs);
    // Rounds may overlap (a test's refresh() during a timer round): only the newest result is kept.
    if (round > state.applied) {
      state.applied = round;
      for (const [name, result] of probes) {
        const before = state.probes.get(name);
        if (before?.reachable !== result.reachable) {
          log.info(result.reachable ? "reachable" : "unreachable", { name, error: result.error || undefined });
        }
      }
      state.probes = probes;
      if (netmap instanceof Error) {
        if (!state.netmapFailed) log.warn("tailscaled status unavailable", { error: netmap.message });
        state.netmapFailed = true;
      } else if (netmap) {
        state.netmap = netmap;
        state.netmapFailed = false;
      }
    }
    return status();
  };

  const reloadCertificates = async () => {
    await Promise.all(httpsListeners.map((listener) => listener.reloadCertificates()));
  };

  let metricsServer: MetricsServer;
  try {
    metricsServer = await startMetricsServer({
      host: config.metricsHost,
      port: config.metricsPort,
      registry: metrics.registry,
      status,
      healthy: () => state.listening,
      log,
    });
  } catch (err) {
    await closeListeners(0);
    throw err;
  }

  let probeTimer: NodeJS.Timeout | undefined;
  let reloadTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  let closing: Promise<void> | undefined;
  if (opts.timers !== false) {
    const probeLoop = () => {
      void refresh().finally(() => {
        if (stopped) return;
        probeTimer = setTimeout(probeLoop, limits.probeIntervalSeconds * 1000);
        probeTimer.unref();
      });
    };
    probeLoop();
    if (httpsListeners.length > 0) {
      reloadTimer = setInterval(() => void reloadCertificates(), limits.tlsReloadIntervalSeconds * 1000);
      reloadTimer.unref();
    }
  }

  return {
    config,
    metricsPort: metricsServer.port,
    ports,
    registry: metrics.registry,
    status,
    refresh,
    reloadCertificates,
    close(graceMs = 0) {
      closing ??= (async () => {
        stopped = true;
        clearTimeout(probeTimer);
        clearInterval(reloadTimer);
        await closeListeners(graceMs);
        state.listening = false;
        await metricsServer.close();
      })();
      return closing;
    },
  };
}

/** `--config <file>` / `--config=<file>`; default AGENT_CONFIG_PATH. */
export function parseAgentArgs(argv: readonly string[]): { configPath: string } {
  let configPath = AGENT_CONFIG_PATH;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--config" && i + 1 < argv.length) configPath = argv[++i];
    else if (arg.startsWith("--config=")) configPath = arg.slice("--config=".length);
    else throw new AgentConfigError("", `unknown argument ${arg} (usage: agent --config <file>)`, "agent");
  }
  return { configPath };
}

/**
 * Runs the agent until SIGTERM/SIGINT, then closes gracefully and resolves. An unreadable or invalid config
 * rejects with an AgentConfigError naming the field (the CLI prints its message and exits 1).
 */
export async function runAgent(argv: string[]): Promise<void> {
  const { configPath } = parseAgentArgs(argv);
  const level = (process.env.LOG_LEVEL ?? "info") as LogLevel;
  const log = jsonLogger(["debug", "info", "warn", "error"].includes(level) ? level : "info");
  const config = await loadAgentConfig(configPath);
  const agent = await startAgent(config, { log });
  const { metricsHost, listenHost, refuseHost } = agent.config;
  log.info("agent started", { role: config.role, metricsHost, metricsPort: agent.metricsPort, listenHost, refuseHost });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      log.info("shutting down", { signal, graceMs: SHUTDOWN_GRACE_MS });
      agent.close(SHUTDOWN_GRACE_MS).then(resolve, (err: Error) => {
        log.error("shutdown failed", { error: err.message });
        resolve();
      });
    };
    const onTerm = () => stop("SIGTERM");
    const onInt = () => stop("SIGINT");
    process.once("SIGTERM", onTerm);
    process.once("SIGINT", onInt);
  });
}
