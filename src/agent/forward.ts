// TCP forwarding: one listener per target port (egress) or tcp expose (ingress). Each accepted connection is
// dialled upstream and the two sockets are piped both ways. Memory stays bounded under floods and stuck
// peers: a shared connection budget, socket.pipe backpressure (a peer that never reads stops the other side
// from being read), an idle timeout on both sockets, and destroy-both on any error.
import { createServer, type Server, type Socket } from "node:net";
import type { Dialer } from "./dial.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";

/** Open client connections across all listeners of one agent (limits.maxConnections). */
export interface ConnectionBudget {
  readonly max: number;
  active: number;
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

export interface RelayOptions {
  name: string;
  idleTimeoutMs: number;
  /**
   * A direction paused by backpressure (its reader does not read) for this long closes both sides.
   * While paused the agent does not read the other side, so it would not notice that side hang up,
   * and the slot would stay taken until the idle timeout. Default 30 s (at most the idle timeout).
   */
  stallTimeoutMs?: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

/**
 * Pipes `client` and `upstream` both ways until both are closed.
 * - A FIN from one side ends the other side's writable only (half-close): the reverse direction keeps flowing.
 * - An error or reset on either side, or idleTimeoutMs without a byte on a socket, destroys both.
 * - A clean close of one side leaves the other to flush what it still holds.
 * Resolves when both sockets are closed.
 */
export function relay(client: Socket, upstream: Socket, opts: RelayOptions): Promise<void> {
  return new Promise((resolve) => {
    let open = 2;
    const destroyBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    const onClose = (hadError: boolean) => {
      if (hadError) destroyBoth();
      if (--open === 0) resolve();
    };
    const stallMs = Math.min(opts.stallTimeoutMs ?? 30_000, opts.idleTimeoutMs);
    for (const socket of [client, upstream]) {
      socket.setTimeout(opts.idleTimeoutMs);
      socket.on("timeout", destroyBoth);
      socket.on("error", destroyBoth);
      socket.once("close", onClose);
      // pipe() pauses the source while the destination's buffer is full and resumes it on drain
      let stall: NodeJS.Timeout | undefined;
      socket.on("pause", () => {
        clearTimeout(stall);
        stall = setTimeout(destroyBoth, stallMs);
        stall.unref();
      });
      socket.on("resume", () => clearTimeout(stall));
      socket.once("close", () => clearTimeout(stall));
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
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

  const handle = async (client: Socket) => {
    const acquired = tryAcquire(opts.budget);
    if (!acquired) {
      metrics.connectionsRejected.inc({ name });
      client.resetAndDestroy(); // RST: the client sees a refusal, not an empty answer
      return;
    }
    metrics.connectionsActive.inc({ name });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      acquired();
      metrics.connectionsActive.dec({ name });
    };
    live.add(client);
    metrics.trackBytes(name, client);
    // Until the upstream exists the client is not read (its bytes wait in the kernel), but errors and
    // hang-ups must still be seen so a vanished client aborts the dial.
    const abort = new AbortController();
    const onEarlyEnd = () => abort.abort();
    client.on("error", onEarlyEnd);
    client.once("close", onEarlyEnd);
    client.once("close", () => live.delete(client));
    client.setTimeout(opts.idleTimeoutMs, () => client.destroy());
    const started = process.hrtime.bigint();
    let upstream: Socket;
    try {
      upstream = await opts.dial(abort.signal);
    } catch (err) {
      if (!abort.signal.aborted) {
        metrics.dialErrors.inc({ name });
        log.debug("dial failed", { name, error: (err as Error).message });
      }
      client.resetAndDestroy(); // RST, as the unreachable target would have answered
      if (client.closed) release();
      else client.once("close", release);
      return;
    }
    client.off("error", onEarlyEnd);
    client.off("close", onEarlyEnd);
    client.removeAllListeners("timeout");
    if (client.destroyed) {
      upstream.destroy();
      release();
      return;
    }
    metrics.dialDuration.observe({ name }, Number(process.hrtime.bigint() - started) / 1e9);
    live.add(upstream);
    upstream.once("close", () => live.delete(upstream));
    await relay(client, upstream, { name, idleTimeoutMs: opts.idleTimeoutMs, metrics, log });
    release();
  };

  const server: Server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    void handle(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(new Error(`listen ${opts.listenHost}:${opts.listenPort} for ${name}: ${err.code ?? err.message}`)),
    );
    server.listen(opts.listenPort, opts.listenHost, () => resolve());
  });
  server.on("error", (err) => log.error("listener error", { name, error: err.message }));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : opts.listenPort;
  log.info("listening", { name, port });

  return {
    name,
    port,
    close: (graceMs = 0) => closeServer(server, live, graceMs),
  };
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
