// The TLS listener of http exposes. Exposes that share a listen port share one listener: SNI chooses the
// expose (certificate and backend) among their names and aliases; a client without SNI, or with a name no
// expose serves, gets the first expose's certificate (and fails verification if it asked for another name).
// Bounded under floods and slowloris clients: the shared connection budget, a handshake and header timeout,
// an idle timeout, and piped bodies.
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer, type Server, type TLSSocket } from "node:tls";
import type { AgentExpose } from "../contract/agent-config.js";
import { type CertificateEntry, loadCertificate, normalizeName, selectByServerName } from "./certs.js";
import { type ConnectionBudget, closeServer, tryAcquire } from "./forward.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { type PipeTarget, pipeHttpConnection } from "./pipe.js";
import { readProxyHeader } from "./proxy-protocol.js";

export interface HttpsListenerOptions {
  listenHost: string;
  listenPort: number;
  /** The http exposes of this listen port, in config order (the first is the default). */
  exposes: AgentExpose[];
  budget: ConnectionBudget;
  idleTimeoutMs: number;
  headerTimeoutMs: number;
  dialTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

export interface HttpsListener {
  readonly port: number;
  readonly exposes: string[];
  /** Re-reads every certificate pair now (the agent also does this on a timer). */
  reloadCertificates(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

interface ExposeRoute {
  expose: AgentExpose;
  cert: CertificateEntry;
  target: PipeTarget;
}

export async function startHttpsListener(opts: HttpsListenerOptions): Promise<HttpsListener> {
  const { metrics, log } = opts;
  const routes: ExposeRoute[] = opts.exposes.map((expose) => ({
    expose,
    cert: { expose: expose.name, certFile: expose.tls?.certFile ?? "", keyFile: expose.tls?.keyFile ?? "" },
    target: {
      name: expose.name,
      backend: expose.backend,
      dialTimeoutMs: opts.dialTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      headerTimeoutMs: opts.headerTimeoutMs,
      metrics,
      log,
    },
  }));
  const byName = new Map<string, ExposeRoute>();
  for (const route of routes) for (const name of route.expose.names) byName.set(normalizeName(name), route);
  const fallback = routes[0];
  const routeFor = (serverName: string | false | null | undefined) =>
    selectByServerName(byName, serverName || undefined, fallback);

  await Promise.all(routes.map((route) => loadCertificate(route.cert, log)));

  // A TLS server whose connections are piped to the backend (pipe.ts): no Node HTTP server or client.
  const server: Server = createServer({
    ...(fallback.cert.pem ?? {}),
    SNICallback: (serverName, cb) => {
      const route = routeFor(serverName);
      if (route.cert.context) cb(null, route.cert.context);
      else cb(new Error(`no certificate loaded for expose ${route.expose.name}`));
    },
    ALPNProtocols: ["http/1.1"],
    handshakeTimeout: opts.headerTimeoutMs,
    allowHalfOpen: true,
    noDelay: true,
  });

  // Raw TCP connections, by remote address, until the TLS handshake says which expose they belong to.
  const pending = new Map<string, { raw: Socket; release: () => void; clientIp?: string }>();
  const live = new Set<Socket>();
  const keyOf = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;
  /** Takes a budget slot for a new connection; false when the agent is full (the connection is closed). */
  const admit = (raw: Socket): boolean => {
    const release = tryAcquire(opts.budget);
    if (!release) {
      metrics.connectionsRejected.inc({ name: fallback.expose.name });
      raw.destroy();
      return false;
    }
    const key = keyOf(raw);
    live.add(raw);
    pending.set(key, { raw, release });
    raw.once("close", () => {
      live.delete(raw);
      if (pending.get(key)?.raw === raw) pending.delete(key);
      release();
    });
    return true;
  };
  // With proxyProtocol a plain TCP listener reads tailscaled's PROXY header first, then hands the
  // connection to the TLS server; the header's source is the client address for X-Forwarded-For.
  const proxyProtocol = fallback.expose.proxyProtocol === true;
  let listener: NetServer = server;
  if (proxyProtocol) {
    listener = createNetServer({ allowHalfOpen: true, noDelay: true }, (raw) => {
      if (!admit(raw)) return;
      readProxyHeader(raw, opts.headerTimeoutMs).then(
        (clientIp) => {
          const entry = pending.get(keyOf(raw));
          if (entry) entry.clientIp = clientIp;
          server.emit("connection", raw);
        },
        (err: Error) => {
          log.debug("bad PROXY header", { expose: fallback.expose.name, error: err.message });
          raw.destroy();
        },
      );
    });
  } else {
    server.on("connection", admit);
  }
  server.on("secureConnection", (tls: TLSSocket) => {
    const entry = pending.get(keyOf(tls));
    if (!entry) {
      tls.destroy();
      return;
    }
    pending.delete(keyOf(tls));
    const name = routeFor(tls.servername).expose.name;
    // Counted on the raw socket: the bytes are TLS bytes, handshake included.
    metrics.trackBytes(name, entry.raw);
    metrics.opened(name);
    entry.raw.once("close", () => metrics.closed(name));
    void pipeHttpConnection(tls, routeFor(tls.servername).target, entry.clientIp);
  });
  // A tls.Server with a tlsClientError listener leaves the socket to it (node lib/_tls_wrap.js
  // onSocketTLSError), handshake timeouts included: close it, or a silent client keeps its budget slot.
  server.on("tlsClientError", (err, socket) => {
    log.debug("tls handshake failed", { error: err.message });
    socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    listener.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `listen ${opts.listenHost}:${opts.listenPort} for ${fallback.expose.name}: ${err.code ?? err.message}`,
        ),
      ),
    );
    listener.listen(opts.listenPort, opts.listenHost, () => resolve());
  });
  listener.on("error", (err) => log.error("listener error", { expose: fallback.expose.name, error: err.message }));
  const address = listener.address();
  const port = typeof address === "object" && address ? address.port : opts.listenPort;
  log.info("listening", { exposes: routes.map((r) => r.expose.name).join(","), port, mode: "http" });

  return {
    port,
    exposes: routes.map((r) => r.expose.name),
    async reloadCertificates() {
      for (const route of routes) {
        const changed = await loadCertificate(route.cert, log);
        // Clients without SNI use the server's own context, which follows the first expose.
        if (changed && route === fallback && route.cert.pem) server.setSecureContext({ ...route.cert.pem });
      }
    },
    async close(graceMs = 0) {
      await closeServer(listener, live, graceMs);
    },
  };
}
