// Reading a forwarded socket into one reused buffer instead of a new Buffer per read. Node's own form is the
// `onread: { buffer, callback }` option of net.Socket, but only for sockets it constructs from that option:
// the server's accepted sockets (lib/net.js onconnection) and sockets already open (a dial's, a SOCKS5
// handshake's) cannot be given one. The switch below does for an open socket what the constructor and
// initSocketHandle do with the option (nodejs/node lib/net.js: the kBuffer, kBufferCb, kBufferGen fields set
// to null in the Socket constructor; `_handle.useUserBuffer`), and onStreamRead (lib/internal/
// stream_base_commons.js) then calls the callback per read. Where this Node lacks those fields the caller
// keeps reading through 'data' (supportsReadBuffer says which; test/agent/read-buffer.test.ts asserts the fast
// path on the Node the image runs). Why: the agent's TCP forwarding profile (docs/OPERATIONS.md) spent a
// fifth of its CPU in V8's major GC and page faults for the fresh 64 KiB backing store of every read.
import { Socket } from "node:net";

/** What one read is read into: 64 KiB, the size Node allocates per read itself (src/stream_base.cc). */
export const READ_BUFFER_BYTES = 64 * 1024;

interface ReadFields {
  buffer: symbol;
  callback: symbol;
  next: symbol;
}

/** The Socket fields behind `onread`, found by their symbols' descriptions on a handle-less socket. */
function findReadFields(): ReadFields | undefined {
  const probe = new Socket();
  const symbols = Object.getOwnPropertySymbols(probe);
  probe.destroy();
  const named = (description: string) => symbols.find((s) => s.description === description);
  const buffer = named("kBuffer");
  const callback = named("kBufferCb");
  const next = named("kBufferGen");
  return buffer && callback && next ? { buffer, callback, next } : undefined;
}

const fields = findReadFields();

/** Whether this Node lets readIntoBuffers switch a socket (the fields above exist). */
export function supportsReadBuffer(): boolean {
  return fields !== undefined;
}

interface UserBufferHandle {
  useUserBuffer?: (buffer: Uint8Array) => void;
}

/**
 * Buffers of closed connections, for the next ones: a short connection then costs no 64 KiB allocation per
 * direction (the per-connection profile counts them; V8 accounts each as external memory, which brings major
 * GCs forward). At most POOL_SIZE are kept (4 MiB), which is what 32 connections closing at once leave.
 */
const POOL_SIZE = 64;
const pool: Buffer[] = [];

function takeBuffer(): Buffer {
  return pool.pop() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
}

/**
 * A socket's reads, one buffer reused: `onChunk` gets each read as a view of that buffer and says, by returning
 * false, that reading should stop (backpressure; `socket.resume()` starts it again). The view is only valid
 * during the call: a consumer that keeps it (a write the kernel did not take at once) calls `retain()`, and the
 * next read goes into a fresh buffer while the kept one stays with its holder.
 */
export class BufferReader {
  private buffer: Buffer | undefined;
  private retained = false;

  constructor(private readonly onChunk: (chunk: Buffer) => boolean) {}

  /** The buffer of the current read is still referenced: the next read must not overwrite it. */
  retain(): void {
    this.retained = true;
  }

  /**
   * Switches `socket` to this reader, reading at once unless `paused`. Bytes its stream already holds (read
   * before the switch, or put back by the SOCKS5 handshake) go to `onChunk` first. False, and nothing changed, when this Node cannot switch, the
   * socket has no handle, or it is a TLS socket (its cleartext comes from TLSWrap, not read here): the caller
   * reads through 'data'.
   */
  attach(socket: Socket, paused = false): boolean {
    const handle = (socket as unknown as { _handle?: UserBufferHandle | null })._handle;
    if (!fields || !handle || typeof handle.useUserBuffer !== "function") return false;
    if ((socket as { encrypted?: boolean }).encrypted) return false;
    // Everything the stream holds: read() hands out one chunk at a time while the stream flows (a switch from
    // inside a 'data' listener), and what is left would be emitted to no listener.
    const held: Buffer[] = [];
    while (socket.readableLength > 0) {
      const chunk = socket.read() as Buffer | null;
      if (!chunk) break;
      held.push(chunk);
    }
    const buffer = takeBuffer();
    this.buffer = buffer;
    const own = socket as unknown as Record<symbol, unknown>;
    own[fields.buffer] = buffer;
    own[fields.callback] = this.onRead;
    own[fields.next] = this.next;
    handle.useUserBuffer(buffer);
    let ok = !paused;
    for (const chunk of held) ok = this.onChunk(chunk) && ok;
    // backpressure (the caller's own, or on the held bytes): stopped until the caller resumes it
    if (ok) socket.resume();
    else socket.pause();
    return true;
  }

  /**
   * The socket is closed (its handle too, so no read or write of it touches the buffer again): the buffer goes
   * back to the pool. A retained one never does: Node asks for the next buffer right after each read, and
   * `next` has swapped it for a fresh one by then.
   */
  release(): void {
    const { buffer } = this;
    this.buffer = undefined;
    if (buffer && pool.length < POOL_SIZE) pool.push(buffer);
  }

  private readonly onRead = (nread: number, buffer: Buffer): boolean =>
    this.onChunk(nread === buffer.length ? buffer : buffer.subarray(0, nread));

  /** Called by Node after each read: the buffer the next read goes into. */
  private readonly next = (): Buffer => {
    if (this.retained || !this.buffer) {
      this.retained = false;
      this.buffer = takeBuffer();
    }
    return this.buffer;
  };
}
