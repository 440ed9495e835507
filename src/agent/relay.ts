// Relaying bytes between the two sockets of a forwarded TCP connection, and the idle sweep that closes the
// connections nothing moves on. Each direction writes what it reads on, from its first bulk read on out of one
// reused buffer (read-buffer.ts); backpressure pauses the reading side until the other drains.
import type { Socket } from "node:net";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { BufferReader, supportsReadBuffer } from "./read-buffer.js";

/** A read this large means bulk: the direction switches to a reused buffer (read-buffer.ts). */
const BULK_READ = 16 * 1024;

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
 * One direction of a relay: reads `from` and writes each chunk to `to`. A write `to` refuses (its buffer is
 * past its high-water mark) stops reading `from` until `to` drains; a direction paused for stallMs calls
 * onStall. A chunk `to` did not hand to the kernel at once is still referenced by its pending write, so the
 * reader's buffer is retained (the next read gets a fresh one); otherwise the same buffer serves every read.
 */
class Direction {
  private paused = false;
  /** Created on the first pause, refreshed on later ones; when it fires it acts only if still paused. */
  private stall: NodeJS.Timeout | undefined;
  /** Once the direction carries bulk (a read of BULK_READ bytes or more): reads go into one reused buffer. */
  private reader: BufferReader | undefined;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly stallMs: number,
    private readonly onStall: () => void,
  ) {}

  start(): void {
    this.to.on("drain", this.onDrain);
    this.from.on("data", this.onData);
    this.from.resume();
  }

  /** Both sockets are closed. */
  stop(): void {
    clearTimeout(this.stall);
    this.reader?.release();
  }

  /**
   * Node's own Buffer per read until a read is large: switching costs more than a short exchange's few small
   * reads (the setup bench's CPU per connection rose by a tenth when every connection switched at once).
   */
  private readonly onData = (chunk: Buffer): void => {
    const ok = this.write(chunk);
    if (chunk.length >= BULK_READ && supportsReadBuffer()) {
      const reader = new BufferReader((c) => this.onChunk(c));
      this.from.off("data", this.onData);
      if (reader.attach(this.from, !ok)) {
        this.reader = reader;
        return;
      }
      this.from.on("data", this.onData); // not switched after all: keep reading here
    }
    if (!ok) this.from.pause();
  };

  private onChunk(chunk: Buffer): boolean {
    const ok = this.write(chunk);
    if (this.to.writableLength > 0) this.reader?.retain();
    return ok;
  }

  /** Writes one chunk on; false when `to` wants no more until 'drain' (the caller stops reading). */
  private write(chunk: Buffer): boolean {
    if (this.to.write(chunk)) return true;
    this.paused = true;
    if (this.stall) this.stall.refresh();
    else this.stall = setTimeout(this.onStallTimer, this.stallMs).unref();
    return false;
  }

  private readonly onDrain = (): void => {
    if (!this.paused) return;
    this.paused = false;
    this.from.resume();
  };

  private readonly onStallTimer = (): void => {
    if (this.paused) this.onStall();
  };
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
 * Per connection this is plain listeners, a read buffer per direction and at most one lazily created timer per
 * paused direction, reused (refresh) on the next pause: no promise, no timer per pause.
 */
export function relaySockets(client: Socket, upstream: Socket, opts: RelayOptions, done: () => void): void {
  const stallMs = Math.min(opts.stallTimeoutMs ?? 30_000, opts.idleTimeoutMs);
  let open = 2;
  const destroyBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  const up = new Direction(client, upstream, stallMs, destroyBoth);
  const down = new Direction(upstream, client, stallMs, destroyBoth);
  const closed = () => {
    if (--open > 0) return;
    up.stop();
    down.stop();
    if (opts.idle) opts.idle.sweep.unwatch(opts.idle.watch);
    done();
  };
  // A side closed cleanly has read the other's FIN path to its end (or was destroyed here): the other side
  // then only flushes what it still has to write and closes, since nothing it reads could be delivered.
  const closeAfterFlush = (socket: Socket) => {
    if (socket.destroyed) return;
    if (socket.writableFinished) socket.destroy();
    else socket.on("finish", () => socket.destroy());
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
  // `on`, not `once`: a socket emits each of these once, and once's wrapper per listener showed in the profile
  // of short connections
  client.on("close", onClientClose);
  upstream.on("close", onUpstreamClose);
  client.on("end", () => upstream.end());
  upstream.on("end", () => client.end());
  // a SOCKS5 upstream is handed over paused (src/agent/socks5.ts); a fresh socket is already flowing
  up.start();
  down.start();
}

/** relaySockets as a promise: resolves when both sockets are closed. */
export function relay(client: Socket, upstream: Socket, opts: RelayOptions): Promise<void> {
  return new Promise((resolve) => relaySockets(client, upstream, opts, resolve));
}
