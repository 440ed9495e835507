// HTTPS for the kube-api expose (its `tls`: a Secret, or the Secret of the Certificate cert-manager issues for the
// published name). The same certificate handling as the http exposes (certs.ts): the mounted pair is re-read on the
// agent's timer and a changed pair is used by the next handshakes while established connections keep theirs, so a
// renewal drops nothing. A raw connection whose PROXY header was read is handed to a tls.Server that never listens
// (as https.ts does), and comes back as a TLSSocket once the handshake is done.
import type { Socket } from "node:net";
import { createServer, type Server, type TLSSocket } from "node:tls";
import type { AgentExpose } from "../contract/agent-config.js";
import { type CertificateEntry, loadCertificate } from "./certs.js";
import type { AgentLogger } from "./log.js";

export interface KubeApiTls {
  /** Re-reads the pair; a changed one serves the next handshakes. */
  reload(): Promise<void>;
  /** Runs the TLS handshake on `raw`; `secured` gets the TLS socket, a failed handshake destroys `raw`. */
  handshake(raw: Socket, secured: (socket: TLSSocket) => void): void;
}

export async function kubeApiTls(
  expose: AgentExpose & { tls: { certFile: string; keyFile: string } },
  log: AgentLogger,
  handshakeTimeoutMs: number,
): Promise<KubeApiTls> {
  const cert: CertificateEntry = { expose: expose.name, certFile: expose.tls.certFile, keyFile: expose.tls.keyFile };
  await loadCertificate(cert, log);
  const server: Server = createServer({
    ...(cert.pem ?? {}),
    // a client that sends a name gets the current pair too; one that sends none gets the server's default context
    SNICallback: (_name, cb) =>
      cert.context ? cb(null, cert.context) : cb(new Error(`no certificate loaded for expose ${expose.name}`)),
    // HTTP/1.1 only: the pipe frames HTTP/1.1, and kubectl's exec and watch upgrades need it.
    ALPNProtocols: ["http/1.1"],
    handshakeTimeout: handshakeTimeoutMs,
    allowHalfOpen: true,
    noDelay: true,
  });
  const waiting = new Map<string, (socket: TLSSocket) => void>();
  const keyOf = (s: Socket) => `${s.remoteAddress}|${s.remotePort}`;
  server.on("secureConnection", (socket: TLSSocket) => {
    const next = waiting.get(keyOf(socket));
    waiting.delete(keyOf(socket));
    if (next) next(socket);
    else socket.destroy();
  });
  server.on("tlsClientError", (err, socket) => {
    log.debug("tls handshake failed", { expose: expose.name, error: err.message });
    waiting.delete(keyOf(socket));
    socket.destroy();
  });
  return {
    async reload() {
      if (await loadCertificate(cert, log)) server.setSecureContext({ ...(cert.pem ?? { cert: "", key: "" }) });
    },
    handshake(raw, secured) {
      const key = keyOf(raw);
      waiting.set(key, secured);
      raw.once("close", () => {
        if (waiting.get(key) === secured) waiting.delete(key);
      });
      server.emit("connection", raw);
    },
  };
}
