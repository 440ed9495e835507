// TCP forwarding: one listener per target port (egress) or tcp expose (ingress). Each accepted connection is
// dialled upstream and the two sockets are piped both ways. Memory stays bounded under floods and stuck
// peers: a shared connection budget, backpressure (a peer that never reads stops the other side from being
// read), an idle timeout per connection, and destroy-both on any error.
import { createServer, type Server, type Socket } from "node:net";
import type { Dialer, PendingDial } from "./dial.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { IdleSweep, relaySockets } from "./relay.js";

export { IdleSweep, type IdleWatch, type RelayOptions, relay, relaySockets } from "./relay.js";

/** Open client connections across all listeners of one agent (limits.maxConnections). */
export interface ConnectionBudget {
  readonly max: number;
  active: number;
}

/** What every listener of one agent is given: where it binds, the shared budget, its idle bound, metrics and log. */
export interface ListenerCommon {
  listenHost: string;
  budget: ConnectionBudget;
  idleTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

/** A listener that reads HTTP heads and dials a backend (https, kube-api): the head and dial bounds too. */
export interface HttpListenerCommon extends ListenerCommon {
  headerTimeoutMs: number;
  dialTimeoutMs: number;
}

export function createConnectionBudget(max: number): ConnectionBudget {
  return { max, active: 0 };
}

/**
 * Takes one slot of the budget, or returns undefined when the agent is full (the caller closes the
 * connection and counts it as rejected). The returned release is idempotent.
 */
export function tryAcquire(budget: ConnectionBudget): (() => void) | undefined {
  if (budget.active >= budget.max) return undefined;
  budget.active++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    budget.active--;
  };
}

export interface ForwarderOptions {
  /** Target or expose name: the metric label and the log field. */
  name: string;
  listenHost: string;
  listenPort: number;
  dial: Dialer;
  budget: ConnectionBudget;
  idleTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

export interface Forwarder {
  readonly name: string;
  /** The bound port (the configured one, or the ephemeral one for listenPort 0). */
  readonly port: number;
  /** Stops accepting, waits up to graceMs for open connections to finish, then destroys the rest. */
  close(graceMs?: number): Promise<void>;
}

export async function startForwarder(opts: ForwarderOptions): Promise<Forwarder> {
  const { name, metrics, log } = opts;
  const live = new Set<Socket>();

  const idle = new IdleSweep(opts.idleTimeoutMs);
  const startDial = opts.dial.start;
  const ignore = () => {};

  // One accepted connection, all in callbacks: budget slot, dial, relay, release.
  const handle = (client: Socket): void => {
    const acquired = tryAcquire(opts.budget);
    if (!acquired) {
      metrics.connectionsRejected.inc({ name });
      client.resetAndDestroy(); // RST: the client sees a refusal, not an empty answer
      return;
    }
    metrics.opened(name);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      acquired();
      metrics.closed(name);
      live.delete(client);
    };
    live.add(client);
    metrics.trackBytes(name, client);
    // Until the upstream exists the client's bytes are not relayed (they wait in its read buffer and the
    // kernel), but errors and hang-ups must still be seen so a vanished client cancels the dial.
    let pending: PendingDial | undefined;
    let dialling = true;
    const onEarlyClose = () => {
      dialling = false;
      pending?.cancel();
      idle.unwatch(watch);
      release();
    };
    client.on("error", ignore); // the close that follows cancels the dial (kept: the relay adds its own)
    client.on("close", onEarlyClose); // removed once dialled; `on`: close comes once
    // Idle while dialling: the client is closed (the relay makes it close both once the upstream exists).
    const watch = idle.watch(client, () => client.destroy());
    const started = process.hrtime.bigint();
    pending = startDial((err, upstream) => {
      if (!dialling) {
        upstream?.destroy();
        return;
      }
      dialling = false;
      client.off("close", onEarlyClose);
      if (err || !upstream) {
        idle.unwatch(watch);
        metrics.dialErrors.inc({ name });
        log.debug("dial failed", { name, error: err?.message ?? "no socket" });
        client.resetAndDestroy(); // RST, as the unreachable target would have answered
        if (client.closed) release();
        else client.on("close", release);
        return;
      }
      if (client.destroyed) {
        // destroyed, its close not emitted yet
        idle.unwatch(watch);
        upstream.destroy();
        if (client.closed) release();
        else client.on("close", release);
        return;
      }
      metrics.dialDuration.observe({ name }, Number(process.hrtime.bigint() - started) / 1e9);
      live.add(upstream);
      const relayOptions = { name, idleTimeoutMs: opts.idleTimeoutMs, idle: { sweep: idle, watch }, metrics, log };
      relaySockets(client, upstream, relayOptions, () => {
        live.delete(upstream);
        release();
      });
    });
  };

  const server: Server = createServer({ allowHalfOpen: true, noDelay: true }, handle);
  const port = await listenOn(server, opts.listenHost, opts.listenPort, name, (err) =>
    log.error("listener error", { name, error: err.message }),
  );
  log.info("listening", { name, port });

  return {
    name,
    port,
    close: (graceMs = 0) => closeServer(server, live, graceMs),
  };
}

/**
 * Binds `server` to host:port; a failure rejects naming the address and `owner` (the target or expose the
 * listener serves). Resolves with the bound port (the ephemeral one for port 0); later server errors go to
 * `onError`.
 */
export async function listenOn(
  server: Server,
  host: string,
  port: number,
  owner: string,
  onError: (err: Error) => void,
): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(new Error(`listen ${host}:${port} for ${owner}: ${err.code ?? err.message}`)),
    );
    server.listen(port, host, () => resolve());
  });
  server.on("error", onError);
  const address = server.address();
  return typeof address === "object" && address ? address.port : port;
}

/** Stops accepting; after graceMs (0 = at once) destroys what is still open; resolves when all is closed. */
export async function closeServer(server: Server, live: Set<Socket>, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  if (graceMs > 0 && live.size > 0) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
  for (const socket of live) socket.destroy();
  await closed;
}
