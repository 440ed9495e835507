// What the agent knows between rounds: tailscaled's last netmap and the last reachability probe of every
// target and backend. A round (refresh) reads the netmap, then probes; /status is built from the result.
import type { AgentConfig } from "../contract/agent-config.js";
import type { AgentStatus, ProbeResult } from "../contract/agent-status.js";
import { dialerFor, directDialer } from "./dial.js";
import { fetchNetmap, type Netmap } from "./localapi.js";
import type { AgentLogger } from "./log.js";
import { type ProbeSpec, probeAll } from "./probe.js";
import { buildStatus } from "./status.js";

export interface AgentMonitor {
  /** All listeners are bound (false once the agent closes them); /healthz and ready follow it. */
  listening: boolean;
  /** Undefined while tailscaled is Running, else why a target dial waits. */
  tailnetDown(): string | undefined;
  /** The /status document as of the last round. */
  status(): AgentStatus;
  /** Runs one probe + LocalAPI round now and returns the resulting status. */
  refresh(): Promise<AgentStatus>;
}

export function createMonitor(config: AgentConfig, log: AgentLogger): AgentMonitor {
  const { limits } = config;
  const state = {
    netmap: undefined as Netmap | undefined,
    netmapFailed: false,
    probes: new Map<string, ProbeResult>(),
    round: 0,
    applied: 0,
  };
  const tailnetDown = () => {
    const backend = state.netmap?.backendState;
    if (backend === "Running") return undefined;
    return backend ? `tailscaled is ${backend}, not Running` : "tailscaled status not read yet";
  };
  const probeSpecs: ProbeSpec[] = [
    ...config.targets.map((t) => ({
      name: t.name,
      dials: t.ports.map((p) => dialerFor(config, t.host, p.port, tailnetDown)),
    })),
    ...config.exposes.map((e) => ({
      name: e.name,
      dials: [directDialer(e.backend, limits.dialTimeoutSeconds * 1000)],
    })),
  ];
  const monitor: AgentMonitor = {
    listening: true,
    tailnetDown,
    status: () =>
      buildStatus({
        listening: monitor.listening,
        netmapConfigured: config.tailscale.localApiSocket !== undefined,
        netmap: state.netmap,
        netmapFailed: state.netmapFailed,
        targets: config.targets,
        exposes: config.exposes,
        probes: state.probes,
      }),
    async refresh() {
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
        logReachability(log, state.probes, probes);
        state.probes = probes;
        if (netmap instanceof Error) {
          if (!state.netmapFailed) log.warn("tailscaled status unavailable", { error: netmap.message });
          state.netmapFailed = true;
        } else if (netmap) {
          state.netmap = netmap;
          state.netmapFailed = false;
        }
      }
      return monitor.status();
    },
  };
  return monitor;
}

/** One line per name whose reachability changed. */
function logReachability(
  log: AgentLogger,
  before: ReadonlyMap<string, ProbeResult>,
  after: ReadonlyMap<string, ProbeResult>,
): void {
  for (const [name, result] of after) {
    if (before.get(name)?.reachable !== result.reachable) {
      log.info(result.reachable ? "reachable" : "unreachable", { name, error: result.error || undefined });
    }
  }
}
