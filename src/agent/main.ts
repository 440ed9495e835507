// The agent process: `tailnet-operator agent --config <file>`. It binds the data listeners of its role
// (egress: one per target port, dialled through tailscaled's SOCKS5 proxy; ingress: one per tcp expose and
// one TLS listener per http listen port), probes targets/backends and reads tailscaled's netmap on a timer,
// and serves /healthz, /status and /metrics on the metrics port (listeners.ts binds, monitor.ts keeps the
// probe and netmap state). startAgent is the same thing without the process around it, for tests (listen
// ports 0 → ephemeral; the bound ports are reported).
import type { Registry } from "prom-client";
import {
  type AgentConfig,
  AgentConfigError,
  type AgentConfigInput,
  resolvePodIp,
  validateAgentConfig,
} from "../contract/agent-config.js";
import type { AgentStatus, NameAnswer } from "../contract/agent-status.js";
import { AGENT_CONFIG_PATH } from "../contract/ports.js";
import { loadAgentConfig } from "./config-file.js";
import { queryName } from "./dns-query.js";
import { createConnectionBudget } from "./forward.js";
import { type AgentListeners, type AgentPorts, startListeners } from "./listeners.js";
import { type AgentLogger, jsonLogger, type LogLevel, silentLogger } from "./log.js";
import { createAgentMetrics } from "./metrics.js";
import { type AgentMonitor, createMonitor } from "./monitor.js";
import { type MetricsServer, startMetricsServer } from "./server.js";

/**
 * How long /status waits for quad-100's answers: well inside the operator's scrape timeout (2 s by default),
 * so a stuck LocalAPI costs the names, never the rest of the status (the backends' reachability).
 */
export const NAME_QUERY_TIMEOUT_MS = 1000;

/** quad-100's answer for each name, or for each the reason it cannot be asked (no LocalAPI socket). */
function resolveNames(config: AgentConfig, names: readonly string[]): Promise<NameAnswer[]> {
  const socket = config.tailscale.localApiSocket;
  const timeoutMs = Math.min(config.limits.dialTimeoutSeconds * 1000, NAME_QUERY_TIMEOUT_MS);
  return Promise.all(
    names.map((name) =>
      socket ? queryName(socket, name, timeoutMs) : { name, addresses: [], error: "no LocalAPI socket configured" },
    ),
  );
}

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

export async function startAgent(
  input: AgentConfigInput | AgentConfig,
  opts: StartAgentOptions = {},
): Promise<RunningAgent> {
  const config = resolvePodIp(validateAgentConfig(input), opts.env);
  const log = opts.log ?? silentLogger;
  const { limits } = config;
  const names = [...config.targets.map((t) => t.name), ...config.exposes.map((e) => e.name)];
  const metrics = createAgentMetrics(names, { defaultMetrics: opts.defaultMetrics });
  const monitor = createMonitor(config, log);
  const common = {
    budget: createConnectionBudget(limits.maxConnections),
    idleTimeoutMs: limits.idleTimeoutSeconds * 1000,
    metrics,
    log,
    listenHost: config.listenHost,
  };
  const listeners = await startListeners(config, common, monitor.tailnetDown);
  const reloadCertificates = async () => {
    await Promise.all(listeners.https.map((listener) => listener.reloadCertificates()));
  };

  let metricsServer: MetricsServer;
  try {
    metricsServer = await startMetricsServer({
      host: config.metricsHost,
      port: config.metricsPort,
      registry: metrics.registry,
      status: monitor.status,
      resolveNames: (names) => resolveNames(config, names),
      healthy: () => monitor.listening,
      log,
    });
  } catch (err) {
    await listeners.close(0);
    throw err;
  }

  const stopTimers = opts.timers === false ? () => {} : startTimers(config, monitor, listeners, reloadCertificates);
  let closing: Promise<void> | undefined;
  return {
    config,
    metricsPort: metricsServer.port,
    ports: listeners.ports,
    registry: metrics.registry,
    status: monitor.status,
    refresh: monitor.refresh,
    reloadCertificates,
    close(graceMs = 0) {
      closing ??= (async () => {
        stopTimers();
        await listeners.close(graceMs);
        monitor.listening = false;
        await metricsServer.close();
      })();
      return closing;
    },
  };
}

/**
 * The probe/LocalAPI round every probeIntervalSeconds (the next one after the last finished) and, with http
 * exposes, the certificate reload. Returns the stop.
 */
function startTimers(
  config: AgentConfig,
  monitor: AgentMonitor,
  listeners: AgentListeners,
  reloadCertificates: () => Promise<void>,
): () => void {
  const { limits } = config;
  let probeTimer: NodeJS.Timeout | undefined;
  let reloadTimer: NodeJS.Timeout | undefined;
  let stopped = false;
  const probeLoop = () => {
    void monitor.refresh().finally(() => {
      if (stopped) return;
      probeTimer = setTimeout(probeLoop, limits.probeIntervalSeconds * 1000);
      probeTimer.unref();
    });
  };
  probeLoop();
  if (listeners.https.length > 0) {
    reloadTimer = setInterval(() => void reloadCertificates(), limits.tlsReloadIntervalSeconds * 1000);
    reloadTimer.unref();
  }
  return () => {
    stopped = true;
    clearTimeout(probeTimer);
    clearInterval(reloadTimer);
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
