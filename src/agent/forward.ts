// TCP forwarding: one listener per target port (egress) or tcp expose (ingress). Each accepted connection is
// dialled upstream and the two sockets are piped both ways. Memory stays bounded under floods and stuck
// peers: a shared connection budget, backpressure (a peer that never reads stops the other side from being
// read), an idle timeout per connection, and destroy-both on any error.
import { createServer, type Server, type Socket } from "node:net";
import type { Dialer, PendingDial } from "./dial.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";

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

/** One connection the sweep watches: its sockets' byte counts when they last moved. */
export interface IdleWatch {
  readonly sockets: Socket[];
  bytes: number;
  since: number;
  onIdle: () => void;
}

/**
 * Idle connections found by one periodic sweep (every idleMs/8) instead of a timer per socket: a socket's
 * own timer is re-armed on every read and write, which showed in the data path's profile. A connection is
 * idle when the bytes read and written on its sockets have not moved for idleMs; it is closed between idleMs
 * and 1.125 × idleMs after its last byte. The sweep's timer runs only while something is watched.
 */
export class IdleSweep {
  private readonly watched = new Set<IdleWatch>();
  private timer: NodeJS.Timeout | undefined;
  private readonly everyMs: number;

  constructor(readonly idleMs: number) {
    this.everyMs = Math.max(1, Math.floor(idleMs / 8));
  }

  watch(socket: Socket, onIdle: () => void): IdleWatch {
    const entry: IdleWatch = {
      sockets: [socket],
      bytes: socket.bytesRead + socket.bytesWritten,
      since: Date.now(),
      onIdle,
    };
    this.watched.add(entry);
    if (!this.timer) this.timer = setInterval(() => this.sweep(), this.everyMs).unref();
    return entry;
  }

  unwatch(entry: IdleWatch): void {
    this.watched.delete(entry);
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const entry of this.watched) {
      let bytes = 0;
      for (const socket of entry.sockets) bytes += socket.bytesRead + socket.bytesWritten;
      if (bytes !== entry.bytes) {
        entry.bytes = bytes;
        entry.since = now;
      } else if (now - entry.since >= this.idleMs) {
        this.unwatch(entry);
        entry.onIdle();
      }
    }
  }
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
  /**
   * The forwarder's idle sweep, already watching the client (`watch`): the relay adds the upstream to it and
   * stops the watch when both are closed. Without it each socket gets its own idleTimeoutMs timer.
   */
  idle?: { sweep: IdleSweep; watch: IdleWatch };
  metrics: AgentMetrics;
  log: AgentLogger;
}

/**
 * Pipes `client` and `upstream` both ways until both are closed, then calls `done` once.
 * - A FIN from one side ends the other side's writable only (half-close): the reverse direction keeps flowing.
 * - An error or reset on either side, or idleTimeoutMs without a byte on either socket, destroys both.
 * - A clean close of one side leaves the other to flush what it still holds, then closes it (what it would
 *   read has nowhere to go).
 * - Backpressure: a write the other side's buffer refuses pauses the reading side until that buffer drains
 *   (what socket.pipe does, without its per-connection listeners and unpipe bookkeeping: the profile of short
 *   connections had pipe/unpipe among the largest costs); a direction paused for stallTimeoutMs closes both.
 * Per connection this is plain listeners and at most one lazily created timer per paused direction, reused
 * (refresh) on the next pause: no promise, no timer per pause.
 */
export function relaySockets(client: Socket, upstream: Socket, opts: RelayOptions, done: () => void): void {
  const stallMs = Math.min(opts.stallTimeoutMs ?? 30_000, opts.idleTimeoutMs);
  let open = 2;
  // Per direction: paused because the other side's buffer is full, and the stall timer (created on the
  // first pause, refreshed on later ones; when it fires it acts only if that direction is still paused).
  let clientPaused = false;
  let upstreamPaused = false;
  let clientStall: NodeJS.Timeout | undefined;
  let upstreamStall: NodeJS.Timeout | undefined;
  const destroyBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  const onClientStall = () => {
    if (clientPaused) destroyBoth();
  };
  const onUpstreamStall = () => {
    if (upstreamPaused) destroyBoth();
  };
  const closed = () => {
    if (--open > 0) return;
    clearTimeout(clientStall);
    clearTimeout(upstreamStall);
    if (opts.idle) opts.idle.sweep.unwatch(opts.idle.watch);
    done();
  };
  // A side closed cleanly has read the other's FIN path to its end (or was destroyed here): the other side
  // then only flushes what it still has to write and closes, since nothing it reads could be delivered.
  const closeAfterFlush = (socket: Socket) => {
    if (socket.destroyed) return;
    if (socket.writableFinished) socket.destroy();
    else socket.once("finish", () => socket.destroy());
  };
  const onClientClose = (hadError: boolean) => {
    if (hadError) destroyBoth();
    else closeAfterFlush(upstream);
    closed();
  };
  const onUpstreamClose = (hadError: boolean) => {
    if (hadError) destroyBoth();
    else closeAfterFlush(client);
    closed();
  };
  const onClientData = (chunk: Buffer) => {
    if (upstream.write(chunk)) return;
    client.pause();
    clientPaused = true;
    if (clientStall) clientStall.refresh();
    else clientStall = setTimeout(onClientStall, stallMs).unref();
  };
  const onUpstreamData = (chunk: Buffer) => {
    if (client.write(chunk)) return;
    upstream.pause();
    upstreamPaused = true;
    if (upstreamStall) upstreamStall.refresh();
    else upstreamStall = setTimeout(onUpstreamStall, stallMs).unref();
  };
  // 'drain' on one side resumes the other, if the other was paused for it.
  const onUpstreamDrain = () => {
    if (!clientPaused) return;
    clientPaused = false;
    client.resume();
  };
  const onClientDrain = () => {
    if (!upstreamPaused) return;
    upstreamPaused = false;
    upstream.resume();
  };
  const onClientEnd = () => upstream.end();
  const onUpstreamEnd = () => client.end();
  if (opts.idle) {
    opts.idle.watch.sockets.push(upstream);
    opts.idle.watch.onIdle = destroyBoth;
  } else {
    client.setTimeout(opts.idleTimeoutMs);
    upstream.setTimeout(opts.idleTimeoutMs);
    client.on("timeout", destroyBoth);
    upstream.on("timeout", destroyBoth);
  }
  client.on("error", destroyBoth);
  upstream.on("error", destroyBoth);
  client.once("close", onClientClose);
  upstream.once("close", onUpstreamClose);
  client.once("end", onClientEnd);
  upstream.once("end", onUpstreamEnd);
  client.on("drain", onClientDrain);
  upstream.on("drain", onUpstreamDrain);
  client.on("data", onClientData);
  upstream.on("data", onUpstreamData);
  // a SOCKS5 upstream is handed over paused (src/agent/socks5.ts); a fresh socket is already flowing
  upstream.resume();
}

/** relaySockets as a promise: resolves when both sockets are closed. */
export function relay(client: Socket, upstream: Socket, opts: RelayOptions): Promise<void> {
  return new Promise((resolve) => relaySockets(client, upstream, opts, resolve));
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
    client.once("close", onEarlyClose);
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
        else client.once("close", release);
        return;
      }
      if (client.destroyed) {
        // destroyed, its close not emitted yet
        idle.unwatch(watch);
        upstream.destroy();
        if (client.closed) release();
        else client.once("close", release);
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
