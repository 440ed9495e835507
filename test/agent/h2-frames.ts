// A tiny HTTP/2 frame writer and reader for the limit tests (RFC 9113 §4 frames, RFC 7541 literals without
// Huffman): a client that misbehaves on purpose, which node:http2's own client refuses to be.
import { connect, type TLSSocket } from "node:tls";

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;
export const Flag = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 } as const;
export const Setting = { MAX_CONCURRENT_STREAMS: 3, INITIAL_WINDOW_SIZE: 4 } as const;

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK integer with an n-bit prefix (RFC 7541 §5.1), first byte's high bits from `high`. */
function hpackInt(value: number, bits: number, high = 0): number[] {
  const max = (1 << bits) - 1;
  if (value < max) return [high | value];
  const out = [high | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

const hpackString = (s: string) => {
  const bytes = Buffer.from(s, "latin1");
  return Buffer.concat([Buffer.from(hpackInt(bytes.length, 7)), bytes]);
};

/** A header block of literals without indexing, new names (RFC 7541 §6.2.2). */
export function headerBlock(fields: readonly [string, string][]): Buffer {
  return Buffer.concat(fields.flatMap(([n, v]) => [Buffer.from([0]), hpackString(n), hpackString(v)]));
}

export const request = (authority: string, path = "/", extra: [string, string][] = []): [string, string][] => [
  [":method", "GET"],
  [":scheme", "https"],
  [":authority", authority],
  [":path", path],
  ...extra,
];

export const settings = (pairs: [number, number][] = []) => {
  const payload = Buffer.alloc(pairs.length * 6);
  pairs.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, payload);
};

export const rstStream = (stream: number, code: number) => {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(FrameType.RST_STREAM, 0, stream, payload);
};

export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** The error code of a RST_STREAM or GOAWAY frame. */
export const errorCode = (f: Frame) => f.payload.readUInt32BE(f.type === FrameType.GOAWAY ? 4 : 0);

/** A raw HTTP/2 client connection over TLS (ALPN h2): what it has read, and a wait on it. */
export interface RawH2 {
  socket: TLSSocket;
  frames: Frame[];
  closed: Promise<void>;
  /** Resolves with the first frame (already read or to come) that `match` accepts; rejects after `ms`. */
  waitFor(match: (f: Frame) => boolean, ms?: number): Promise<Frame>;
}

export async function rawH2(port: number, servername: string, ca: string, read = true): Promise<RawH2> {
  const socket = connect({ host: "127.0.0.1", port, servername, ca, ALPNProtocols: ["h2"] });
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", () => resolve());
    socket.once("error", reject);
  });
  socket.on("error", () => {});
  const frames: Frame[] = [];
  const listeners = new Set<() => void>();
  let pending = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      frames.push({
        type: pending[3],
        flags: pending[4],
        stream: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      });
      pending = pending.subarray(9 + length);
      const last = frames[frames.length - 1];
      // The server's SETTINGS is acknowledged as any client would (not before: an early ACK is an error).
      if (last.type === FrameType.SETTINGS && !(last.flags & Flag.ACK) && !socket.destroyed)
        socket.write(frame(FrameType.SETTINGS, Flag.ACK, 0));
    }
    for (const l of listeners) l();
  });
  if (!read) socket.pause();
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  closed.then(() => {
    for (const l of listeners) l();
  });
  const waitFor = (match: (f: Frame) => boolean, ms = 5000) =>
    new Promise<Frame>((resolve, reject) => {
      const check = () => {
        const found = frames.find(match);
        if (found) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`no such frame in ${ms} ms; got types ${frames.map((f) => f.type).join(",")}`));
      }, ms);
      listeners.add(check);
      check();
    });
  return { socket, frames, closed, waitFor };
}

/** Writes the preface and the client's SETTINGS, as every client does first. */
export function start(c: RawH2, initial: [number, number][] = []): void {
  c.socket.write(Buffer.concat([PREFACE, settings(initial)]));
}
