// The agent's Prometheus families (docs/OPERATIONS.md, "Agent families"). Every series is labelled with a
// target or expose name only — never a peer, an IP or a certificate name — so cardinality is bounded by the
// config and nothing about the tailnet leaks through a scrape.
import type { Socket } from "node:net";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export type ByteDirection = "in" | "out";

export interface AgentMetrics {
  readonly registry: Registry;
  /** Client connections open now (accepted and not yet closed). */
  readonly connectionsActive: Gauge<"name">;
  /**
   * Bytes on the client-facing socket: "in" = read from the client, "out" = written to the client.
   * For http exposes these are TLS bytes (handshake and records included).
   */
  readonly bytesTotal: Counter<"name" | "direction">;
  /** Time to establish the upstream connection (through SOCKS5 or direct), successful dials only. */
  readonly dialDuration: Histogram<"name">;
  /** Dials (per client connection) that failed or timed out. */
  readonly dialErrors: Counter<"name">;
  /** Client connections closed at once because the agent was at limits.maxConnections. */
  readonly connectionsRejected: Counter<"name">;
  /**
   * Counts a socket's bytes under `name` until it closes. Totals are read from the socket's own
   * bytesRead/bytesWritten at each scrape and at close, so the data path carries no per-chunk work.
   */
  trackBytes(name: string, socket: Socket): void;
}

interface TrackedSocket {
  name: string;
  socket: Socket;
  countedIn: number;
  countedOut: number;
}

export function createAgentMetrics(names: readonly string[], opts: { defaultMetrics?: boolean } = {}): AgentMetrics {
  const registry = new Registry();
  const tracked = new Set<TrackedSocket>();

  const flush = (entry: TrackedSocket) => {
    const read = entry.socket.bytesRead;
    const written = entry.socket.bytesWritten;
    if (read > entry.countedIn) bytesTotal.inc({ name: entry.name, direction: "in" }, read - entry.countedIn);
    if (written > entry.countedOut) bytesTotal.inc({ name: entry.name, direction: "out" }, written - entry.countedOut);
    entry.countedIn = Math.max(entry.countedIn, read);
    entry.countedOut = Math.max(entry.countedOut, written);
  };

  const connectionsActive = new Gauge({
    name: "tailnet_agent_connections_active",
    help: "Client connections currently open, by target or expose name.",
    labelNames: ["name"] as const,
    registers: [registry],
  });
  const bytesTotal = new Counter({
    name: "tailnet_agent_bytes_total",
    help: "Bytes on client connections by target or expose name; in = from the client, out = to the client; TLS bytes included.",
    labelNames: ["name", "direction"] as const,
    registers: [registry],
    collect() {
      for (const entry of tracked) flush(entry);
    },
  });
  const dialDuration = new Histogram({
    name: "tailnet_agent_dial_duration_seconds",
    help: "Time to connect to the target or backend for a client connection, by target or expose name.",
    labelNames: ["name"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const dialErrors = new Counter({
    name: "tailnet_agent_dial_errors_total",
    help: "Failed or timed-out dials for client connections, by target or expose name.",
    labelNames: ["name"] as const,
    registers: [registry],
  });
  const connectionsRejected = new Counter({
    name: "tailnet_agent_connections_rejected_total",
    help: "Client connections closed because the agent was at its connection limit, by target or expose name.",
    labelNames: ["name"] as const,
    registers: [registry],
  });

  // Every configured name has its series from the start, so rate() and absent() behave before traffic.
  for (const name of names) {
    connectionsActive.set({ name }, 0);
    bytesTotal.inc({ name, direction: "in" }, 0);
    bytesTotal.inc({ name, direction: "out" }, 0);
    dialDuration.zero({ name });
    dialErrors.inc({ name }, 0);
    connectionsRejected.inc({ name }, 0);
  }
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  return {
    registry,
    connectionsActive,
    bytesTotal,
    dialDuration,
    dialErrors,
    connectionsRejected,
    trackBytes(name, socket) {
      const entry: TrackedSocket = { name, socket, countedIn: 0, countedOut: 0 };
      tracked.add(entry);
      socket.once("close", () => {
        flush(entry);
        tracked.delete(entry);
      });
    },
  };
}
