// Listeners that exist only to refuse. In userspace mode tailscaled's netstack hands a tailnet connection that
// serve does not handle to 127.0.0.1:<same port> in the pod (tailscale.com wgengine/netstack/netstack.go
// acceptTCP → forwardTCP). The agent's real listeners are elsewhere (src/contract/ports.ts POD_LOCAL_HOST, the
// pod IP), so such a connection would simply be reset; binding each listen port on 127.0.0.1 too turns the
// attempt into a count (a peer probing past serve, e.g. with a forged PROXY header) without reading a byte of it.
import { createServer, type Server, type Socket } from "node:net";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";

export interface RefuserOptions {
  host: string;
  /** Bound listen port → the target or expose name its refusals are counted under. */
  ports: ReadonlyMap<number, string>;
  metrics: AgentMetrics;
  log: AgentLogger;
}

export interface Refuser {
  close(): Promise<void>;
}

/** At most one warning per port and interval: a flood of probes is a count, not a flood of log lines. */
const LOG_INTERVAL_MS = 60_000;

export async function startRefuser(opts: RefuserOptions): Promise<Refuser> {
  const servers: Server[] = [];
  const lastLogged = new Map<number, number>();
  const refuse = (port: number, name: string) => (socket: Socket) => {
    // RST instead of FIN, and nothing read: the peer learns nothing but that the port is closed to it
    socket.on("error", () => undefined);
    socket.resetAndDestroy();
    opts.metrics.serveBypassRefused.inc({ name });
    const now = Date.now();
    if (now - (lastLogged.get(port) ?? -Infinity) < LOG_INTERVAL_MS) return;
    lastLogged.set(port, now);
    opts.log.warn("refused a tailnet connection that bypassed tailscaled serve", { name, port, host: opts.host });
  };
  const close = () =>
    Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => undefined);
  try {
    for (const [port, name] of opts.ports) {
      const server = createServer(refuse(port, name));
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once("error", (err: NodeJS.ErrnoException) =>
          reject(
            new Error(`listen ${opts.host}:${port} (refuse) for ${name}: ${err.code ?? err.message}`, { cause: err }),
          ),
        );
        server.listen(port, opts.host, () => resolve());
      });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { close };
}
