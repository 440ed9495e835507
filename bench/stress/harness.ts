/**
 * The harness of the agent stress (bench/stress.ts): the upstreams the agent's exposes point at (an echo, a
 * backend that never reads, one that resets every connection, a keep-alive HTTP backend), the options and
 * report shapes, the open-files checks, and the monitor that polls the agent's /healthz, /metrics and RSS.
 * The load itself is in cases.ts.
 */
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { type AgentProcess, vmRssMiB } from "../agent.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const WEB_NAME = "web.stress.test";

/**
 * The heap Node 22 gives itself in the agent container: it sizes V8 from the cgroup memory limit (256Mi),
 * old generation = limit / 4 × 2 = 128 MiB. Outside a cgroup V8 would size from the host's RAM and let
 * garbage pile up far beyond what the pod would see, so the agent under stress gets the pod's heap.
 */
export const POD_HEAP = "--max-old-space-size=128";

export interface StressOptions {
  /** Flood connections to the echo expose, opened `batch` at a time and held for holdMs. */
  clients: number;
  batch: number;
  holdMs: number;
  /** The agent's limits.maxConnections. */
  maxConnections: number;
  /** The agent's limits.headerTimeoutSeconds (slowloris bound). */
  headerTimeoutSeconds: number;
  /**
   * The agent's limits.idleTimeoutSeconds: above holdMs plus the time to open the flood (held connections are
   * idle), and what bounds how long a connection stuck behind the never-reading backend keeps its slot.
   */
  idleTimeoutSeconds: number;
  /** TLS slowloris clients (half silent before the handshake, half dripping headers). */
  slowloris: number;
  /** Clients pushing into the never-reading backend. */
  stalled: number;
  /** Concurrent connect-send-get-reset loops against the resetting target. */
  resetters: number;
  /** Peak agent RSS must stay below this (the agent container's memory limit is 256Mi). */
  memoryLimitMiB: number;
  /** Run the agent from this bundle (bench/agent.ts bundleAgent) instead of src through tsx. */
  bundle?: string;
  /** Extra node arguments for the agent: [POD_HEAP] mimics the agent container's heap sizing. */
  agentNodeArgs?: string[];
}

export interface StressReport {
  options: StressOptions;
  fdLimit: { load: number; agent: number; needed: { load: number; agent: number } };
  /** Highest sum of tailnet_agent_connections_active seen while polling /metrics. */
  maxActiveSeen: number;
  rejected: { echo: number; total: number };
  flood: { echoed: number; refused: number; openMs: number };
  healthy: {
    tcpRoundTrips: number;
    tcpMismatches: number;
    tcpDuringFlood: number;
    httpsOk: number;
    httpsFailed: number;
    httpsDuringFlood: number;
  };
  healthz: { checks: number; failures: number; maxMs: number };
  slowloris: { total: number; closedByAgent: number };
  stalled: {
    clients: number;
    /** What the clients wrote (up to 8 MiB each, or until nothing drained for a second). */
    bytesPushedMiB: number;
    /** What the agent read from them (tailnet_agent_bytes_total{stall,in}): it went on into kernel buffers. */
    readByAgentMiB: number;
    /** connections_active{stall} right after the clients closed their end: the agent cannot see it while paused. */
    heldAfterClientsLeft: number;
    /** Time from the clients leaving until connections_active{stall} was 0 (the idle timeout reaps them). */
    releasedAfterMs: number;
  };
  resets: { attempts: number; completed: number };
  memory: {
    settledRssMiB: number;
    peakRssMiB: number;
    endRssMiB: number;
    peakHeapUsedMiB: number;
    /** Buffers outside the V8 heap (socket data, collected or not): would grow with a buffered stuck stream. */
    peakExternalMiB: number;
  };
  /** connections_active sum once every client closed. */
  activeAfter: number;
  /** After everything closed: maxConnections fresh connections all echoed, none rejected. */
  refill: { opened: number; echoed: number; newlyRejected: number };
  /** Lines the agent logged at warn/error. */
  agentProblems: string[];
}

/** The soft and hard open-files limits of a process, from /proc/<pid>/limits. */
export function fileLimits(pid: number | "self" = "self"): { soft: number; hard: number } {
  const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"));
  const n = (v: string | undefined) => (v === undefined || v === "unlimited" ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: n(match?.[1]), hard: n(match?.[2]) };
}

/** Descriptors each side needs: the load process holds every client plus the upstream ends; the agent two per slot. */
export function fdsNeeded(opts: StressOptions): { load: number; agent: number } {
  return {
    load: opts.clients + opts.maxConnections + opts.slowloris + opts.stalled + opts.resetters + 512,
    agent: 2 * opts.maxConnections + 256,
  };
}

export interface Upstreams {
  echo: number;
  stall: number;
  reset: number;
  web: number;
  close(): void;
}

export async function startUpstreams(): Promise<Upstreams> {
  const live = new Set<Socket>();
  const track = (socket: Socket) => {
    live.add(socket);
    socket.once("close", () => live.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const echo = createServer({ allowHalfOpen: true }, (s) => {
    track(s);
    s.pipe(s);
  });
  // Never reads: pauseOnConnect leaves every byte in the kernel, so the agent sees backpressure at once.
  const stall = createServer({ pauseOnConnect: true }, track);
  const reset = createServer((s) => {
    track(s);
    s.once("data", () => s.resetAndDestroy());
  });
  const web = createHttpServer((req, res) => {
    req.resume();
    res.end("ok\n");
  });
  web.keepAliveTimeout = 60_000;
  web.on("connection", track);
  const servers: (Server | HttpServer)[] = [echo, stall, reset, web];
  const ports = await Promise.all(
    servers.map(
      (server) =>
        new Promise<number>((resolve) =>
          server.listen(0, "127.0.0.1", 4096, () => resolve((server.address() as { port: number }).port)),
        ),
    ),
  );
  return {
    echo: ports[0],
    stall: ports[1],
    reset: ports[2],
    web: ports[3],
    close() {
      for (const socket of live) socket.destroy();
      for (const server of servers) server.close();
    },
  };
}

/** The value of every sample of a family in Prometheus text, summed over labels matching `labels`. */
export function sumOf(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || !line.includes(labels)) continue;
    const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match && match[1] === name) sum += Number(match[3]);
  }
  return sum;
}

/** Polls /healthz and /metrics of the agent and its VmRSS until stopped. */
export function monitor(agent: AgentProcess, everyMs: number) {
  const seen = { checks: 0, failures: 0, maxMs: 0, maxActive: 0, peakRss: 0, peakHeap: 0, peakExternal: 0 };
  let running = true;
  const base = `http://127.0.0.1:${agent.metricsPort}`;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(`${base}/healthz`);
        await res.text();
        if (res.status !== 200) seen.failures++;
      } catch {
        seen.failures++;
      }
      seen.checks++;
      seen.maxMs = Math.max(seen.maxMs, performance.now() - started);
      try {
        const text = await (await fetch(`${base}/metrics`)).text();
        seen.maxActive = Math.max(seen.maxActive, sumOf(text, "tailnet_agent_connections_active"));
        seen.peakHeap = Math.max(seen.peakHeap, sumOf(text, "nodejs_heap_size_used_bytes") / 2 ** 20);
        seen.peakExternal = Math.max(seen.peakExternal, sumOf(text, "nodejs_external_memory_bytes") / 2 ** 20);
      } catch {
        // /healthz failures are what count; a missed scrape only loses a sample
      }
      seen.peakRss = Math.max(seen.peakRss, vmRssMiB(agent.pid));
      await sleep(everyMs);
    }
  })();
  return {
    seen,
    async stop() {
      running = false;
      await loop;
    },
  };
}

export async function metrics(agent: AgentProcess): Promise<string> {
  return (await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`)).text();
}

export async function waitFor(predicate: () => boolean | Promise<boolean>, maxMs: number): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  while (performance.now() < deadline) {
    if (await predicate()) return true;
    await sleep(50);
  }
  return predicate();
}
