// The TLS listener of http exposes. Exposes that share a listen port share one listener: SNI chooses the
// expose (certificate and backend) among their names and aliases; a client without SNI, or with a name no
// expose serves, gets the first expose's certificate (and fails verification if it asked for another name).
// Bounded under floods and slowloris clients: the shared connection budget, a handshake and header timeout,
// an idle timeout, and piped bodies. ALPN offers h2 and http/1.1: an h2 connection goes to the listener's
// HTTP/2 side (h2.ts), the rest to the strict HTTP/1.1 pipe (pipe.ts).
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer, type Server, type TLSSocket } from "node:tls";
import type { AgentBackend, AgentExpose } from "../contract/agent-config.js";
import { type CertificateEntry, loadCertificate, normalizeName, selectByServerName } from "./certs.js";
import { closeServer, type HttpListenerCommon, listenOn, tryAcquire } from "./forward.js";
import { H2Front } from "./h2.js";
import type { H2Request } from "./h2-request.js";
import { isOwnedHeader } from "./http1.js";
import { type PipeTarget, pipeHttpConnection } from "./pipe.js";
import { readProxyHeader } from "./proxy-protocol.js";
import { exposeRouter, type RequestFacts } from "./routes.js";

type ExposeRouter = NonNullable<ReturnType<typeof exposeRouter>>;

export interface HttpsListenerOptions extends HttpListenerCommon {
  listenPort: number;
  /** The http exposes of this listen port, in config order (the first is the default). */
  exposes: AgentExpose[];
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
  /** Routed exposes: the per-request router both protocols use (routes.ts). */
  router?: ExposeRouter;
  /** Whether a request's host (normalised, no port) is a name of this expose (HTTP/2 :authority check). */
  servesName(host: string): boolean;
}

/** The exposes of one listener by name: SNI picks one, a missing or unknown name gets the first (fallback). */
interface ExposeRouting {
  routes: ExposeRoute[];
  fallback: ExposeRoute;
  routeFor(serverName: string | false | null | undefined): ExposeRoute;
}

/** A raw TCP connection until the TLS handshake says which expose it belongs to. */
interface PendingConnection {
  raw: Socket;
  release: () => void;
  clientIp?: string;
}

export async function startHttpsListener(opts: HttpsListenerOptions): Promise<HttpsListener> {
  const { log } = opts;
  const routing = exposeRouting(opts);
  const { routes, fallback } = routing;
  await Promise.all(routes.map((route) => loadCertificate(route.cert, log)));
  const server = tlsServer(routing, opts.headerTimeoutMs);
  const live = new Set<Socket>();
  const h2 = new H2Front(opts);
  const listener = acceptConnections(server, routing, live, h2, opts);
  const port = await listenOn(listener, opts.listenHost, opts.listenPort, fallback.expose.name, (err) =>
    log.error("listener error", { expose: fallback.expose.name, error: err.message }),
  );
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
      if (graceMs > 0) h2.drain();
      await closeServer(listener, live, graceMs);
      h2.close();
    },
  };
}

function exposeRouting(opts: HttpsListenerOptions): ExposeRouting {
  const routes: ExposeRoute[] = opts.exposes.map((expose) => {
    const router = exposeRouter(expose);
    const ownNames = new Map(expose.names.map((name) => [normalizeName(name), true]));
    return {
      expose,
      cert: { expose: expose.name, certFile: expose.tls?.certFile ?? "", keyFile: expose.tls?.keyFile ?? "" },
      router,
      servesName: (host: string) => selectByServerName(ownNames, host, false),
      target: {
        name: expose.name,
        backend: expose.backend,
        ...(router
          ? { route: (requestTarget: string, request?: RequestFacts) => router.route(requestTarget, request) }
          : {}),
        dialTimeoutMs: opts.dialTimeoutMs,
        idleTimeoutMs: opts.idleTimeoutMs,
        headerTimeoutMs: opts.headerTimeoutMs,
        metrics: opts.metrics,
        log: opts.log,
      },
    };
  });
  const byName = new Map<string, ExposeRoute>();
  for (const route of routes) for (const name of route.expose.names) byName.set(normalizeName(name), route);
  const fallback = routes[0];
  return {
    routes,
    fallback,
    routeFor: (serverName) => selectByServerName(byName, serverName || undefined, fallback),
  };
}

/**
 * The one call from HTTP/2 into the router: an h2 request's backend as routes.ts picks it, by :path, method and
 * the client's own fields (never the agent's identity or forwarding fields, as for HTTP/1.1). Unrouted exposes:
 * their backend.
 */
export function routeH2Request(route: Pick<ExposeRoute, "router" | "expose">, request: H2Request): AgentBackend {
  if (!route.router) return route.expose.backend;
  const fieldLines: string[] = [];
  for (const [name, value] of request.fields) if (!isOwnedHeader(name)) fieldLines.push(`${name}: ${value}`);
  return route.router.route(request.path, { method: request.method, fieldLines });
}

/** A TLS server whose connections are piped to the backend (pipe.ts): no Node HTTP server or client. */
function tlsServer({ fallback, routeFor }: ExposeRouting, headerTimeoutMs: number): Server {
  return createServer({
    ...(fallback.cert.pem ?? {}),
    SNICallback: (serverName, cb) => {
      const route = routeFor(serverName);
      if (route.cert.context) cb(null, route.cert.context);
      else cb(new Error(`no certificate loaded for expose ${route.expose.name}`));
    },
    ALPNProtocols: ["h2", "http/1.1"],
    handshakeTimeout: headerTimeoutMs,
    allowHalfOpen: true,
    noDelay: true,
  });
}

/**
 * Wires the connection path: each raw connection takes a budget slot and waits in `pending` (by remote
 * address) for its handshake, then is piped as the expose SNI chose. Returns the server to bind: `server`
 * itself, or with proxyProtocol a plain TCP listener that reads tailscaled's PROXY header first and hands the
 * connection on (the header's source is the client address for X-Forwarded-For).
 */
function acceptConnections(
  server: Server,
  { fallback, routeFor }: ExposeRouting,
  live: Set<Socket>,
  h2: H2Front,
  opts: HttpsListenerOptions,
): NetServer {
  const { metrics, log } = opts;
  const pending = new Map<string, PendingConnection>();
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
  let listener: NetServer = server;
  if (fallback.expose.proxyProtocol === true) {
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
    const route = routeFor(tls.servername);
    const name = route.expose.name;
    // Counted on the raw socket: the bytes are TLS bytes, handshake included.
    metrics.trackBytes(name, entry.raw);
    metrics.opened(name);
    entry.raw.once("close", () => metrics.closed(name));
    if (tls.alpnProtocol === "h2") {
      const clientIp = entry.clientIp ?? tls.remoteAddress?.replace(/^::ffff:/, "");
      h2.serve(tls, {
        name,
        context: { clientIp, servesName: route.servesName },
        route: (request) => routeH2Request(route, request),
      });
    } else void pipeHttpConnection(tls, route.target, entry.clientIp);
  });
  // A tls.Server with a tlsClientError listener leaves the socket to it (node lib/_tls_wrap.js
  // onSocketTLSError), handshake timeouts included: close it, or a silent client keeps its budget slot.
  server.on("tlsClientError", (err, socket) => {
    log.debug("tls handshake failed", { error: err.message });
    socket.destroy();
  });
  return listener;
}
