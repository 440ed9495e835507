// The kube-api expose: the cluster's API server on the tailnet, with the connecting peer's tailnet identity
// as its Kubernetes identity. tailscaled's serve config forwards each tailnet connection here behind a PROXY
// header (the peer's tailnet address); the agent asks tailscaled's LocalAPI WhoIs who that is
// (kube-identity.ts), refuses the connection with 403 when the answer is not a usable identity, and otherwise
// pipes it to the API server over TLS (the cluster CA) through the strict HTTP pipe (pipe.ts), which drops
// the client's Authorization, Impersonate-* and X-Remote-* fields and adds the agent's own ServiceAccount
// token and Impersonate-User/-Group to every request head. RBAC then decides as for that user.
// The PROXY header is trusted because only serve can connect: the listener is on 127.0.0.2 (ports.ts
// POD_LOCAL_HOST), where tailscaled's netstack never forwards a peer's own connection (it dials 127.0.0.1,
// where refuse.ts resets it). serve's TCPForward does not register its connection in tailscaled's proxymap
// (tailscale.com ipn/ipnlocal/serve.go: "TODO(bradfitz): do the RegisterIPPortIdentity"), so a WhoIs of the
// accepted socket's own address would name no one: the header is the only carrier of the peer's address.
import { readFile } from "node:fs/promises";
import { createServer, isIP, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { AgentExpose } from "../contract/agent-config.js";
import { type ConnectionBudget, closeServer, tryAcquire } from "./forward.js";
import type { OwnedHeaders } from "./http1.js";
import { identityFromWhoIs, type KubeIdentity, kubeVerb } from "./kube-identity.js";
import { fetchWhoIs } from "./localapi.js";
import type { AgentLogger } from "./log.js";
import type { AgentMetrics } from "./metrics.js";
import { pipeHttpConnection } from "./pipe.js";
import { readProxyHeader } from "./proxy-protocol.js";

export interface KubeApiListenerOptions {
  listenHost: string;
  expose: AgentExpose & { kubeApi: { caFile: string; tokenFile: string } };
  /** tailscaled's LocalAPI socket; without it every peer is refused (no one to ask). */
  localApiSocket?: string;
  budget: ConnectionBudget;
  idleTimeoutMs: number;
  headerTimeoutMs: number;
  dialTimeoutMs: number;
  metrics: AgentMetrics;
  log: AgentLogger;
}

export interface KubeApiListener {
  readonly port: number;
  close(graceMs?: number): Promise<void>;
}

/** Why a connection was refused: the `reason` label of tailnet_agent_kube_api_refused_total. */
export const KUBE_API_REFUSALS = [
  "no_peer_address",
  "whois_failed",
  "unknown_peer",
  "identity_refused",
  "credentials_unreadable",
] as const;
type Refusal = (typeof KUBE_API_REFUSALS)[number];

/** Client fields the kube-api expose owns: credentials and every impersonation or front-proxy identity. */
export function ownsKubeHeader(name: string): boolean {
  return (
    name === "authorization" ||
    name === "proxy-authorization" ||
    name.startsWith("impersonate-") ||
    name.startsWith("x-remote-")
  );
}

/** The agent's own fields on every forwarded head of one connection. */
export function kubeHeaders(identity: KubeIdentity, token: string): OwnedHeaders {
  return {
    drop: ownsKubeHeader,
    lines: [
      `authorization: Bearer ${token}`,
      `impersonate-user: ${identity.user}`,
      ...identity.groups.map((group) => `impersonate-group: ${group}`),
    ],
  };
}

/** A refusal kubectl prints as it prints the API server's own (a metav1.Status body). */
const forbidden = (message: string): string => statusResponse(403, "Forbidden", "Forbidden", message);

const unavailable = (message: string): string =>
  statusResponse(503, "Service Unavailable", "ServiceUnavailable", message);

function statusResponse(code: number, text: string, reason: string, message: string): string {
  const body = JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  });
  return `HTTP/1.1 ${code} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

export async function startKubeApiListener(opts: KubeApiListenerOptions): Promise<KubeApiListener> {
  const { expose, metrics, log } = opts;
  const name = expose.name;
  const live = new Set<Socket>();
  for (const reason of KUBE_API_REFUSALS) metrics.kubeApiRefused.inc({ name, reason }, 0);
  const refuse = (socket: Socket, answer: string, reason: Refusal) => {
    metrics.kubeApiRefused.inc({ name, reason });
    socket.end(answer);
    socket.resume(); // read (and drop) what the client sends until it closes
    socket.setTimeout(2000, () => socket.destroy()); // a client that does not close after the answer is cut
  };

  /** Identifies the peer, then pipes: the answer to any failure is a refusal, never a forwarded request. */
  const serve = async (socket: Socket, peer: string | undefined) => {
    if (!peer) {
      log.warn("kube-api refused", { expose: name, reason: "no peer address" });
      refuse(
        socket,
        forbidden("tailnet-operator kube-api proxy: the connection carries no tailnet address"),
        "no_peer_address",
      );
      return;
    }
    let whois: unknown;
    try {
      if (!opts.localApiSocket) throw new Error("no LocalAPI socket configured");
      whois = await fetchWhoIs(opts.localApiSocket, peer, opts.dialTimeoutMs);
    } catch (err) {
      log.warn("kube-api refused", { expose: name, peer, reason: `WhoIs failed: ${(err as Error).message}` });
      refuse(
        socket,
        forbidden(`tailnet-operator kube-api proxy: could not identify ${peer} (tailscaled WhoIs failed)`),
        "whois_failed",
      );
      return;
    }
    if (whois === undefined) {
      log.warn("kube-api refused", { expose: name, peer, reason: "unknown peer" });
      refuse(socket, forbidden(`tailnet-operator kube-api proxy: ${peer} is not a known tailnet peer`), "unknown_peer");
      return;
    }
    const verdict = identityFromWhoIs(whois);
    if ("refused" in verdict) {
      log.warn("kube-api refused", { expose: name, peer, reason: verdict.refused });
      refuse(
        socket,
        forbidden(`tailnet-operator kube-api proxy: ${peer} refused: ${verdict.refused}`),
        "identity_refused",
      );
      return;
    }
    const { identity } = verdict;
    // Read per connection: the kubelet rotates the projected token and the CA bundle in place.
    let token: string;
    let ca: string;
    try {
      [token, ca] = await Promise.all([
        readFile(expose.kubeApi.tokenFile, "utf8").then((t) => t.trim()),
        readFile(expose.kubeApi.caFile, "utf8"),
      ]);
      if (!token) throw new Error("empty token");
    } catch (err) {
      log.error("kube-api credentials unreadable", {
        expose: name,
        error: (err as NodeJS.ErrnoException).code ?? (err as Error).message,
      });
      refuse(
        socket,
        unavailable("tailnet-operator kube-api proxy: its ServiceAccount credentials are unreadable"),
        "credentials_unreadable",
      );
      return;
    }
    if (socket.destroyed) return; // the client left while it was being identified
    const { host, port } = expose.backend;
    const pending: { method: string; target: string }[] = [];
    void pipeHttpConnection(
      socket,
      {
        name,
        backend: expose.backend,
        dialTimeoutMs: opts.dialTimeoutMs,
        idleTimeoutMs: opts.idleTimeoutMs,
        headerTimeoutMs: opts.headerTimeoutMs,
        metrics,
        log,
        owned: kubeHeaders(identity, token),
        // HTTP/1.1 only: the pipe frames HTTP/1.1, and exec/port-forward upgrades need it.
        dial: () => ({
          socket: tlsConnect({
            host,
            port,
            ca,
            ...(isIP(host) ? {} : { servername: host }),
            ALPNProtocols: ["http/1.1"],
          }),
          event: "secureConnect",
        }),
        onRequest: (method, target) => pending.push({ method, target }),
        onStatus: (status) => {
          metrics.kubeApiRequests.inc({ name, code: String(status) });
          const request = pending.shift();
          if (!request) return;
          log.info("kube-api request", {
            expose: name,
            peer,
            tailnet: identity.tailnet,
            user: identity.user,
            groups: identity.groups.join(","),
            verb: kubeVerb(request.method, request.target),
            path: request.target.split("?", 1)[0],
            status,
          });
        },
      },
      peer,
    );
    socket.resume(); // paused while the peer was identified; the pipe's data listener is attached now
  };

  const server = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    const release = tryAcquire(opts.budget);
    if (!release) {
      metrics.connectionsRejected.inc({ name });
      socket.destroy();
      return;
    }
    live.add(socket);
    metrics.trackBytes(name, socket);
    metrics.opened(name);
    socket.once("close", () => {
      live.delete(socket);
      metrics.closed(name);
      release();
    });
    socket.on("error", () => socket.destroy());
    // Paused until the peer is identified (readProxyHeader pauses after the header itself).
    if (expose.proxyProtocol) {
      readProxyHeader(socket, opts.headerTimeoutMs).then(
        (peer) => void serve(socket, peer),
        (err: Error) => {
          log.debug("bad PROXY header", { expose: name, error: err.message });
          socket.destroy();
        },
      );
    } else {
      socket.pause();
      void serve(socket, socket.remoteAddress?.replace(/^::ffff:/, ""));
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(new Error(`listen ${opts.listenHost}:${expose.listenPort} for ${name}: ${err.code ?? err.message}`)),
    );
    server.listen(expose.listenPort, opts.listenHost, () => resolve());
  });
  server.on("error", (err) => log.error("listener error", { expose: name, error: err.message }));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : expose.listenPort;
  log.info("listening", { exposes: name, port, mode: "kube-api" });
  return {
    port,
    close: (graceMs = 0) => closeServer(server, live, graceMs),
  };
}
