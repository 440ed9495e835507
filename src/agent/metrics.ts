// The agent's Prometheus families (docs/OPERATIONS.md, "Agent families"). Every series is labelled with a
// target or expose name only — never a peer, an IP or a certificate name — so cardinality is bounded by the
// config and nothing about the tailnet leaks through a scrape.
import type { Socket } from "node:net";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

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
  /** kube-api exposes: requests the API server answered, by status code (101 for an upgrade). */
  readonly kubeApiRequests: Counter<"name" | "code">;
  /** kube-api exposes: connections refused before anything was forwarded, by reason (KUBE_API_REFUSALS). */
  readonly kubeApiRefused: Counter<"name" | "reason">;
  /** Tailnet connections that arrived past tailscaled's serve (netstack's 127.0.0.1 forward), reset unread (refuse.ts). */
  readonly serveBypassRefused: Counter<"name">;
  /**
   * Counts a socket's bytes under `name` until it closes. Totals are read from the socket's own
   * bytesRead/bytesWritten at each scrape and at close, so the data path carries no per-chunk work.
   */
  trackBytes(name: string, socket: Socket): void;
  /**
   * One client connection of `name` opened / closed: connectionsActive as a plain count per name, set on
   * the gauge at each scrape (a labelled inc/dec per connection was a measurable part of its setup cost).
   */
  opened(name: string): void;
  closed(name: string): void;
}

interface TrackedSocket {
  name: string;
  socket: Socket;
  countedIn: number;
  countedOut: number;
}

/**
 * The connection path's counts as plain numbers: per name, open connections and the bytes of tracked sockets
 * not yet added to the counter. The prom-client series are brought up to date when scraped (`collect`).
 */
class ConnectionLedger {
  readonly tracked = new Set<TrackedSocket>();
  readonly active = new Map<string, number>();
  readonly unflushed = new Map<string, { in: number; out: number }>();

  pendingOf(name: string): { in: number; out: number } {
    let pending = this.unflushed.get(name);
    if (!pending) {
      pending = { in: 0, out: 0 };
      this.unflushed.set(name, pending);
    }
    return pending;
  }

  /** Moves what the socket read and wrote since it was last counted into its name's unflushed bytes. */
  take(entry: TrackedSocket): void {
    const read = entry.socket.bytesRead;
    const written = entry.socket.bytesWritten;
    if (read <= entry.countedIn && written <= entry.countedOut) return;
    const pending = this.pendingOf(entry.name);
    if (read > entry.countedIn) {
      pending.in += read - entry.countedIn;
      entry.countedIn = read;
    }
    if (written > entry.countedOut) {
      pending.out += written - entry.countedOut;
      entry.countedOut = written;
    }
  }
}

export function createAgentMetrics(names: readonly string[], opts: { defaultMetrics?: boolean } = {}): AgentMetrics {
  const registry = new Registry();
  const ledger = new ConnectionLedger();
  const families = createFamilies(registry, ledger);
  // Every configured name has its series from the start, so rate() and absent() behave before traffic.
  for (const name of names) {
    ledger.active.set(name, 0);
    families.connectionsActive.set({ name }, 0);
    families.bytesTotal.inc({ name, direction: "in" }, 0);
    families.bytesTotal.inc({ name, direction: "out" }, 0);
    families.dialDuration.zero({ name });
    families.dialErrors.inc({ name }, 0);
    families.connectionsRejected.inc({ name }, 0);
    families.serveBypassRefused.inc({ name }, 0);
  }
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const { active } = ledger;
  return {
    registry,
    ...families,
    trackBytes(name, socket) {
      const entry: TrackedSocket = { name, socket, countedIn: 0, countedOut: 0 };
      ledger.tracked.add(entry);
      socket.on("close", () => {
        ledger.take(entry);
        ledger.tracked.delete(entry);
      });
    },
    opened(name) {
      active.set(name, (active.get(name) ?? 0) + 1);
    },
    closed(name) {
      active.set(name, (active.get(name) ?? 0) - 1);
    },
  };
}

type Families = Omit<AgentMetrics, "registry" | "trackBytes" | "opened" | "closed">;

/** The families, registered in this order (the order of /metrics). */
function createFamilies(registry: Registry, ledger: ConnectionLedger): Families {
  const connectionsActive = new Gauge({
    name: "tailnet_agent_connections_active",
    help: "Client connections currently open, by target or expose name.",
    labelNames: ["name"] as const,
    registers: [registry],
    collect() {
      for (const [name, n] of ledger.active) this.set({ name }, n);
    },
  });
  const bytesTotal = new Counter({
    name: "tailnet_agent_bytes_total",
    help: "Bytes on client connections by target or expose name; in = from the client, out = to the client; TLS bytes included.",
    labelNames: ["name", "direction"] as const,
    registers: [registry],
    collect() {
      for (const entry of ledger.tracked) ledger.take(entry);
      for (const [name, pending] of ledger.unflushed) {
        if (pending.in > 0) this.inc({ name, direction: "in" }, pending.in);
        if (pending.out > 0) this.inc({ name, direction: "out" }, pending.out);
        pending.in = 0;
        pending.out = 0;
      }
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

  const kubeApiRequests = new Counter({
    name: "tailnet_agent_kube_api_requests_total",
    help: "kube-api exposes: requests forwarded to the API server, by expose name and the API server's status code.",
    labelNames: ["name", "code"] as const,
    registers: [registry],
  });
  const kubeApiRefused = new Counter({
    name: "tailnet_agent_kube_api_refused_total",
    help: "kube-api exposes: connections refused before anything was forwarded, by expose name and reason.",
    labelNames: ["name", "reason"] as const,
    registers: [registry],
  });

  const serveBypassRefused = new Counter({
    name: "tailnet_agent_serve_bypass_refused_total",
    help: "Tailnet connections to a listen port that did not come through tailscaled's serve (its netstack forward to the loopback address), reset unread, by target or expose name.",
    labelNames: ["name"] as const,
    registers: [registry],
  });
  return {
    connectionsActive,
    bytesTotal,
    dialDuration,
    dialErrors,
    connectionsRejected,
    kubeApiRequests,
    kubeApiRefused,
    serveBypassRefused,
  };
}
