// Dialling a target or backend: directly (ingress backends, egress in tests) or through tailscaled's SOCKS5
// proxy (egress in a pod: only tailscaled can reach tailnet addresses from a userspace-networking container).
// Every failure becomes a DialError whose message names the target and the cause — never credentials
// (there are none on this path: the SOCKS5 proxy is unauthenticated on loopback).
import { connect, type Socket } from "node:net";
import type { AgentConfig } from "../contract/agent-config.js";
import { socks5Connect } from "./socks5.js";

export class DialError extends Error {
  /** Short cause, e.g. "ECONNREFUSED", "timed out after 5s", "SOCKS5 HostUnreachable". */
  readonly reason: string;
  constructor(address: string, reason: string) {
    super(`dial ${address}: ${reason}`);
    this.name = "DialError";
    this.reason = reason;
  }
}

/** How a started dial reports, once: the DialError, or the connected socket. */
export type DialDone = (err: DialError | undefined, socket: Socket | undefined) => void;

/** A dial under way: cancel() destroys a late socket, and `done` is not called after it. */
export interface PendingDial {
  cancel(): void;
}

/**
 * Starts a dial; `done` may be called before it returns (a dial refused at once). The forwarder's
 * per-connection form: no promise, AbortController or extra timer per connection.
 */
export type StartDial = (done: DialDone) => PendingDial;

/**
 * Opens a connected socket, or rejects with a DialError; aborting `signal` destroys a late socket.
 * `start` is the same dial in callback form.
 */
export interface Dialer {
  (signal?: AbortSignal): Promise<Socket>;
  readonly start: StartDial;
}

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

const settled: PendingDial = { cancel() {} };

/** A Dialer from its callback form: the promise form follows `signal` (aborted: a DialError "aborted"). */
export function dialerFrom(address: string, start: StartDial): Dialer {
  const dial = (signal?: AbortSignal) =>
    new Promise<Socket>((resolve, reject) => {
      if (signal?.aborted) return reject(abortedError(address));
      let pending: PendingDial | undefined;
      const onAbort = () => {
        pending?.cancel();
        reject(abortedError(address));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      pending = start((err, socket) => {
        signal?.removeEventListener("abort", onAbort);
        if (err || !socket) reject(err ?? new DialError(address, "no socket"));
        else resolve(socket);
      });
    });
  return Object.assign(dial, { start });
}

/** A dial that fails at once with `reason` (e.g. tailscaled not Running yet). */
export function refuseDial(address: string, reason: string, done: DialDone): PendingDial {
  done(new DialError(address, reason), undefined);
  return settled;
}

/**
 * A plain TCP dial with a timeout (the socket's own timer while it connects, cleared once connected). The
 * socket allows half-open connections (the forwarder relays FINs).
 */
export function directDialer(target: HostPort, timeoutMs: number): Dialer {
  const address = formatHostPort(target);
  const { host, port } = target;
  return dialerFrom(address, (done) => {
    const socket = connect({ host, port, allowHalfOpen: true, noDelay: true });
    let over = false;
    const settle = (err: DialError | undefined) => {
      if (over) return;
      over = true;
      socket.off("connect", onConnect);
      socket.off("error", onError);
      socket.off("timeout", onTimeout);
      socket.setTimeout(0);
      if (err) socket.destroy();
      done(err, err ? undefined : socket);
    };
    const onConnect = () => settle(undefined);
    const onError = (err: unknown) => settle(new DialError(address, errnoReason(err)));
    const onTimeout = () => settle(new DialError(address, `timed out after ${timeoutMs / 1000}s`));
    socket.setTimeout(timeoutMs);
    // `on`: settle removes all three, and once's wrappers cost per connection
    socket.on("timeout", onTimeout);
    socket.on("connect", onConnect);
    socket.on("error", onError);
    return {
      cancel() {
        if (over) return;
        over = true;
        socket.destroy();
      },
    };
  });
}

/**
 * Dials `target` through a SOCKS5 proxy (tailscaled `--socks5-server`, src/agent/socks5.ts). The host is sent
 * as a name when it is one, so tailscaled resolves MagicDNS names itself.
 */
export function socksDialer(proxy: HostPort, target: HostPort, timeoutMs: number): Dialer {
  const address = formatHostPort(target);
  return dialerFrom(address, (done) => {
    const cancel = socks5Connect(proxy, target, timeoutMs, (reason, socket) =>
      done(reason === undefined ? undefined : new DialError(address, reason), socket),
    );
    return { cancel };
  });
}

/**
 * The dialer of a target. Through SOCKS5 with a LocalAPI to ask, it dials only while tailscaled's last
 * known BackendState is Running: before that tailscaled has no netmap, and its SOCKS5 server hands a
 * dial to a tailnet IP or a subnet address to the system dialer (net/tsdial), i.e. into the pod
 * network — seen in test/real as a dial with no route out of the agent pod at boot.
 */
export function dialerFor(
  config: AgentConfig,
  host: string,
  port: number,
  tailnetDown: () => string | undefined,
): Dialer {
  const timeoutMs = config.limits.dialTimeoutSeconds * 1000;
  const socks = config.tailscale.socksAddr;
  if (!socks) return directDialer({ host, port }, timeoutMs);
  const dial = socksDialer(parseHostPort(socks), { host, port }, timeoutMs);
  if (!config.tailscale.localApiSocket) return dial;
  const address = formatHostPort({ host, port });
  return dialerFrom(address, (done) => {
    const down = tailnetDown();
    return down ? refuseDial(address, down, done) : dial.start(done);
  });
}
