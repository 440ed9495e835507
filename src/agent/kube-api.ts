// The kube-api expose: the cluster's API server on the tailnet, with the connecting peer's tailnet identity
// as its Kubernetes identity. tailscaled's serve config forwards each tailnet connection here behind a PROXY
// header (the peer's tailnet address); the agent asks tailscaled's LocalAPI WhoIs who that is
// (kube-identity.ts), refuses the connection with 403 when the answer is not a usable identity, and otherwise
// pipes it to the API server over TLS (the cluster CA) through the strict HTTP pipe (pipe.ts), which drops
// the client's Authorization, Impersonate-* and X-Remote-* fields and adds the agent's own ServiceAccount
// token and Impersonate-User/-Group to every request head. RBAC then decides as for that user.
// The PROXY header is trusted because only serve can connect: the listener is on 127.0.0.2 (src/contract/ports.ts
// POD_LOCAL_HOST), where tailscaled's netstack never forwards a peer's own connection (it dials 127.0.0.1,
// where refuse.ts resets it). serve's TCPForward does not register its connection in tailscaled's proxymap
// (tailscale.com ipn/ipnlocal/serve.go: "TODO(bradfitz): do the RegisterIPPortIdentity"), so a WhoIs of the
// accepted socket's own address would name no one: the header is the only carrier of the peer's address.
// With the expose's `tls` (a Secret or a cert-manager Certificate), the tailnet side is HTTPS (kube-api-tls.ts).
import { readFile } from "node:fs/promises";
import { createServer, isIP, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { AgentExpose } from "../contract/agent-config.js";
import { closeServer, type HttpListenerCommon, listenOn, tryAcquire } from "./forward.js";
import type { OwnedHeaders } from "./http1.js";
import { type KubeApiTls, kubeApiTls } from "./kube-api-tls.js";
import { identityFromWhoIs, type KubeIdentity, kubeVerb } from "./kube-identity.js";
import { fetchWhoIs } from "./localapi.js";
import { pipeHttpConnection } from "./pipe.js";
import { readProxyHeader } from "./proxy-protocol.js";

export interface KubeApiListenerOptions extends HttpListenerCommon {
  expose: AgentExpose & { kubeApi: { caFile: string; tokenFile: string } };
  /** tailscaled's LocalAPI socket; without it every peer is refused (no one to ask). */
  localApiSocket?: string;
}

export interface KubeApiListener {
  readonly port: number;
  readonly exposes: string[];
  /** Whether it serves HTTPS (the expose has `tls`). */
  readonly tls: boolean;
  /** Re-reads the certificate pair (HTTPS only; the agent does this on a timer). */
  reloadCertificates(): Promise<void>;
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
  const tls = expose.tls ? await kubeApiTls({ ...expose, tls: expose.tls }, log, opts.headerTimeoutMs) : undefined;
  const server = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => accept(opts, live, socket, tls));
  const port = await listenOn(server, opts.listenHost, expose.listenPort, name, (err) =>
    log.error("listener error", { expose: name, error: err.message }),
  );
  log.info("listening", { exposes: name, port, mode: "kube-api", tls: tls !== undefined });
  return {
    port,
    exposes: [name],
    tls: tls !== undefined,
    reloadCertificates: async () => tls?.reload(),
    close: (graceMs = 0) => closeServer(server, live, graceMs),
  };
}

/**
 * A new connection: a budget slot, then paused until the peer is identified (serve); with `tls`, the PROXY header
 * is read on the raw connection (tailscaled writes it before the client's bytes) and the peer is served over TLS.
 */
function accept(opts: KubeApiListenerOptions, live: Set<Socket>, socket: Socket, tls?: KubeApiTls): void {
  const { metrics, log } = opts;
  const name = opts.expose.name;
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
  const served = (peer: string | undefined) => {
    if (tls) tls.handshake(socket, (secure) => void serve(opts, secure, peer));
    else void serve(opts, socket, peer);
  };
  if (opts.expose.proxyProtocol) {
    readProxyHeader(socket, opts.headerTimeoutMs).then(
      (peer) => served(peer),
      (err: Error) => {
        log.debug("bad PROXY header", { expose: name, error: err.message });
        socket.destroy();
      },
    );
  } else {
    socket.pause();
    served(socket.remoteAddress?.replace(/^::ffff:/, ""));
  }
}

/** Answers `answer` and counts the refusal; nothing of the connection is forwarded. */
function refuse(opts: KubeApiListenerOptions, socket: Socket, answer: string, reason: Refusal): void {
  opts.metrics.kubeApiRefused.inc({ name: opts.expose.name, reason });
  socket.end(answer);
  socket.resume(); // read (and drop) what the client sends until it closes
  socket.setTimeout(2000, () => socket.destroy()); // a client that does not close after the answer is cut
}

/** Identifies the peer, then pipes: the answer to any failure is a refusal, never a forwarded request. */
async function serve(opts: KubeApiListenerOptions, socket: Socket, peer: string | undefined): Promise<void> {
  const identity = await identifyPeer(opts, socket, peer);
  if (!identity || !peer) return;
  const credentials = await readCredentials(opts, socket);
  if (!credentials) return;
  if (socket.destroyed) return; // the client left while it was being identified
  pipeToApiServer(opts, socket, peer, identity, credentials);
  socket.resume(); // paused while the peer was identified; the pipe's data listener is attached now
}

/** The peer's Kubernetes identity from tailscaled's WhoIs; undefined once the connection is refused. */
async function identifyPeer(
  opts: KubeApiListenerOptions,
  socket: Socket,
  peer: string | undefined,
): Promise<KubeIdentity | undefined> {
  const { log } = opts;
  const name = opts.expose.name;
  if (!peer) {
    log.warn("kube-api refused", { expose: name, reason: "no peer address" });
    refuse(
      opts,
      socket,
      forbidden("tailnet-operator kube-api proxy: the connection carries no tailnet address"),
      "no_peer_address",
    );
    return undefined;
  }
  let whois: unknown;
  try {
    if (!opts.localApiSocket) throw new Error("no LocalAPI socket configured");
    whois = await fetchWhoIs(opts.localApiSocket, peer, opts.dialTimeoutMs);
  } catch (err) {
    log.warn("kube-api refused", { expose: name, peer, reason: `WhoIs failed: ${(err as Error).message}` });
    refuse(
      opts,
      socket,
      forbidden(`tailnet-operator kube-api proxy: could not identify ${peer} (tailscaled WhoIs failed)`),
      "whois_failed",
    );
    return undefined;
  }
  if (whois === undefined) {
    log.warn("kube-api refused", { expose: name, peer, reason: "unknown peer" });
    refuse(
      opts,
      socket,
      forbidden(`tailnet-operator kube-api proxy: ${peer} is not a known tailnet peer`),
      "unknown_peer",
    );
    return undefined;
  }
  const verdict = identityFromWhoIs(whois);
  if ("refused" in verdict) {
    log.warn("kube-api refused", { expose: name, peer, reason: verdict.refused });
    refuse(
      opts,
      socket,
      forbidden(`tailnet-operator kube-api proxy: ${peer} refused: ${verdict.refused}`),
      "identity_refused",
    );
    return undefined;
  }
  return verdict.identity;
}

/**
 * The ServiceAccount token and cluster CA, read per connection: the kubelet rotates the projected token and
 * the CA bundle in place. Undefined once the connection is refused (503).
 */
async function readCredentials(
  opts: KubeApiListenerOptions,
  socket: Socket,
): Promise<{ token: string; ca: string } | undefined> {
  const { expose } = opts;
  try {
    const [token, ca] = await Promise.all([
      readFile(expose.kubeApi.tokenFile, "utf8").then((t) => t.trim()),
      readFile(expose.kubeApi.caFile, "utf8"),
    ]);
    if (!token) throw new Error("empty token");
    return { token, ca };
  } catch (err) {
    opts.log.error("kube-api credentials unreadable", {
      expose: expose.name,
      error: (err as NodeJS.ErrnoException).code ?? (err as Error).message,
    });
    refuse(
      opts,
      socket,
      unavailable("tailnet-operator kube-api proxy: its ServiceAccount credentials are unreadable"),
      "credentials_unreadable",
    );
    return undefined;
  }
}

/** Pipes the identified connection to the API server over TLS, logging each request with its answer. */
function pipeToApiServer(
  opts: KubeApiListenerOptions,
  socket: Socket,
  peer: string,
  identity: KubeIdentity,
  { token, ca }: { token: string; ca: string },
): void {
  const { expose, metrics, log } = opts;
  const name = expose.name;
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
}
