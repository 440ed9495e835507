// A SOCKS5 CONNECT (RFC 1928, no authentication) to tailscaled's `--socks5-server` on the pod's loopback, with
// the greeting and the request in one write. tailscaled reads them one after the other with io.ReadFull on the
// raw connection (tailscale.com net/socks5/socks5.go Conn.Run → parseClientGreeting, handleRequest →
// parseClientRequest), so nothing is lost by sending both at once, and each connection saves a round trip to
// tailscaled's goroutine and back (issue 36: the agent's connect p99 was 4× SOCKS5's own). Nothing of the
// target's stream is sent before the success reply, so a refused dial never carries client bytes.
import { isIP, connect as netConnect, type Socket } from "node:net";
import ipaddr from "ipaddr.js";

/** RFC 1928 §6 reply codes, named as the socks package named them (the reasons in docs and tests keep them). */
const REPLY_NAMES: Record<number, string> = {
  1: "GeneralFailure",
  2: "RuleFailure",
  3: "NetworkUnreachable",
  4: "HostUnreachable",
  5: "ConnectionRefused",
  6: "TTLExpired",
  7: "CommandNotSupported",
  8: "AddressNotSupported",
};

/** Greeting (version 5, one method: no authentication) and CONNECT request, one buffer. */
export function socks5ConnectRequest(host: string, port: number): Buffer {
  let address: Buffer;
  if (isIP(host)) {
    const bytes = ipaddr.parse(host).toByteArray();
    address = Buffer.from([bytes.length === 4 ? 0x01 : 0x04, ...bytes]);
  } else {
    const name = Buffer.from(host, "ascii");
    if (name.length === 0 || name.length > 255) throw new Error(`SOCKS5 host name of ${name.length} bytes`);
    address = Buffer.concat([Buffer.from([0x03, name.length]), name]);
  }
  const portBytes = Buffer.from([port >> 8, port & 0xff]);
  return Buffer.concat([Buffer.from([0x05, 0x01, 0x00, 0x05, 0x01, 0x00]), address, portBytes]);
}

/**
 * How many bytes of `buf` the method selection plus the CONNECT reply take, once complete: 0 while more is
 * needed. A malformed or refusing answer is an Error whose message is the short cause.
 */
export function socks5ReplyLength(buf: Buffer): number | Error {
  if (buf.length < 2) return 0;
  if (buf[0] !== 0x05) return new Error("SOCKS5 not a SOCKS5 proxy");
  if (buf[1] !== 0x00) return new Error("SOCKS5 no acceptable authentication method");
  if (buf.length < 4) return 0;
  if (buf[2] !== 0x05) return new Error("SOCKS5 malformed reply");
  if (buf[3] !== 0x00) return new Error(`SOCKS5 ${REPLY_NAMES[buf[3]] ?? `reply ${buf[3]}`}`);
  if (buf.length < 6) return 0;
  const type = buf[5];
  const addressLength =
    type === 0x01 ? 4 : type === 0x04 ? 16 : type === 0x03 ? (buf.length < 7 ? -1 : 1 + buf[6]) : -2;
  if (addressLength === -2) return new Error("SOCKS5 malformed reply");
  if (addressLength === -1) return 0;
  const total = 2 + 4 + addressLength + 2;
  return buf.length >= total ? total : 0;
}

/** The answer of socks5Connect: a connected socket past the reply, or the short cause. */
export type Socks5Done = (reason: string | undefined, socket: Socket | undefined) => void;

/**
 * Connects to `proxy`, asks it for `target` and calls `done` once. The socket handed over is paused (the reader
 * resumes it once it listens), allows half-open connections (the forwarder relays FINs) and carries any byte the
 * target sent right after the reply.
 * Returns a cancel function: a late socket is destroyed and `done` is not called after it.
 */
export function socks5Connect(
  proxy: { host: string; port: number },
  target: { host: string; port: number },
  timeoutMs: number,
  done: Socks5Done,
): () => void {
  let request: Buffer;
  try {
    request = socks5ConnectRequest(target.host, target.port);
  } catch (err) {
    done((err as Error).message, undefined);
    return () => undefined;
  }
  const socket = netConnect({ host: proxy.host, port: proxy.port, allowHalfOpen: true, noDelay: true });
  let over = false;
  let connected = false;
  let received: Buffer | undefined;
  const finish = (reason: string | undefined, rest?: Buffer) => {
    if (over) return;
    over = true;
    socket.off("data", onData);
    socket.off("error", onError);
    socket.off("timeout", onTimeout);
    socket.off("end", onEnd);
    socket.setTimeout(0);
    if (reason !== undefined) {
      socket.destroy();
      done(reason, undefined);
      return;
    }
    // Handed over paused, so no byte is emitted before the reader listens; bytes the target sent right behind the
    // reply go first.
    socket.pause();
    if (rest && rest.length > 0) socket.unshift(rest);
    done(undefined, socket);
  };
  const onData = (chunk: Buffer) => {
    received = received ? Buffer.concat([received, chunk]) : chunk;
    const length = socks5ReplyLength(received);
    if (length instanceof Error) finish(length.message);
    else if (length > 0) finish(undefined, received.subarray(length));
  };
  const onError = (err: NodeJS.ErrnoException) =>
    finish(connected ? `SOCKS5 ${err.code ?? err.message}` : `SOCKS5 proxy unreachable (${err.code ?? "error"})`);
  const onTimeout = () => finish("SOCKS5 timed out");
  const onEnd = () => finish("SOCKS5 proxy closed the connection");
  socket.setTimeout(timeoutMs);
  socket.once("connect", () => {
    connected = true;
    socket.write(request);
  });
  socket.on("data", onData);
  socket.once("error", onError);
  socket.once("timeout", onTimeout);
  socket.once("end", onEnd);
  return () => {
    if (over) return;
    over = true;
    socket.destroy();
  };
}
