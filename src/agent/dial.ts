// Dialling a target or backend: directly (ingress backends, egress in tests) or through tailscaled's SOCKS5
// proxy (egress in a pod: only tailscaled can reach tailnet addresses from a userspace-networking container).
// Every failure becomes a DialError whose message names the target and the cause — never credentials
// (there are none on this path: the SOCKS5 proxy is unauthenticated on loopback).
import { connect, type Socket } from "node:net";
import { SocksClient } from "socks";

export class DialError extends Error {
  /** Short cause, e.g. "ECONNREFUSED", "timed out after 5s", "SOCKS5 HostUnreachable". */
  readonly reason: string;
  constructor(address: string, reason: string) {
    super(`dial ${address}: ${reason}`);
    this.name = "DialError";
    this.reason = reason;
  }
}

/** Opens a connected socket, or rejects with a DialError; aborting `signal` destroys a late socket. */
export type Dialer = (signal?: AbortSignal) => Promise<Socket>;

export interface HostPort {
  host: string;
  port: number;
}

/** "127.0.0.1:1055" / "[::1]:1055" → {host, port}. */
export function parseHostPort(value: string): HostPort {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):([0-9]{1,5})$/.exec(value);
  if (!match) throw new Error(`not host:port: ${value}`);
  return { host: match[1] ?? match[2], port: Number(match[3]) };
}

export function formatHostPort({ host, port }: HostPort): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function errnoReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === "string") return code;
  return err instanceof Error ? err.message : String(err);
}

function abortedError(address: string): DialError {
  return new DialError(address, "aborted");
}

/** A plain TCP dial with a timeout. The socket allows half-open connections (the forwarder relays FINs). */
export function directDialer(target: HostPort, timeoutMs: number): Dialer {
  const address = formatHostPort(target);
  return (signal) =>
    new Promise<Socket>((resolve, reject) => {
      if (signal?.aborted) return reject(abortedError(address));
      const socket = connect({ host: target.host, port: target.port, allowHalfOpen: true, noDelay: true });
      const settle = (err?: DialError) => {
        clearTimeout(timer);
        socket.off("connect", onConnect);
        socket.off("error", onError);
        signal?.removeEventListener("abort", onAbort);
        if (err) {
          socket.destroy();
          reject(err);
        } else resolve(socket);
      };
      const onConnect = () => settle();
      const onError = (err: unknown) => settle(new DialError(address, errnoReason(err)));
      const onAbort = () => settle(abortedError(address));
      const timer = setTimeout(() => settle(new DialError(address, `timed out after ${timeoutMs / 1000}s`)), timeoutMs);
      socket.once("connect", onConnect);
      socket.once("error", onError);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
}

/** Maps the socks package's error texts to a short cause. */
function socksReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const rejected = /rejected connection - (\w+)/.exec(message);
  if (rejected) return `SOCKS5 ${rejected[1]}`;
  if (/timed out/i.test(message)) return "SOCKS5 timed out";
  if (/^connect E[A-Z]+/.test(message)) return `SOCKS5 proxy unreachable (${message.split(" ")[1]})`;
  return `SOCKS5 ${message}`;
}

/**
 * Dials `target` through a SOCKS5 proxy (tailscaled `--socks5-server`). The host is sent as a name when
 * it is one, so tailscaled resolves MagicDNS names itself.
 */
export function socksDialer(proxy: HostPort, target: HostPort, timeoutMs: number): Dialer {
  const address = formatHostPort(target);
  return async (signal) => {
    if (signal?.aborted) throw abortedError(address);
    let socket: Socket;
    try {
      const info = await SocksClient.createConnection({
        proxy: { host: proxy.host, port: proxy.port, type: 5 },
        command: "connect",
        destination: { host: target.host, port: target.port },
        timeout: timeoutMs,
        set_tcp_nodelay: true,
      });
      socket = info.socket;
    } catch (err) {
      throw new DialError(address, socksReason(err));
    }
    if (signal?.aborted) {
      socket.destroy();
      throw abortedError(address);
    }
    // The socks package creates its socket without allowHalfOpen; the flag is read when the readable side
    // ends, so setting it now keeps the upstream writable after the target's FIN.
    socket.allowHalfOpen = true;
    return socket;
  };
}
