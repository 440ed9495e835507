/** HTTPS through a tailnet peer's tailscaled SOCKS5, for the real-world ingress scenarios. */
import type { X509Certificate } from "node:crypto";
import { connect as tlsConnect } from "node:tls";
import { socksConnect } from "./operator.js";
import type { Peer } from "./peers.js";

/** An HTTPS GET through a peer's SOCKS5, verifying the certificate against `ca` for `servername`. */
export async function httpsVia(
  peer: Peer,
  host: string,
  port: number,
  servername: string,
  ca: string,
  path = "/",
): Promise<{ status: number; body: string; cert: X509Certificate } | { error: string }> {
  try {
    const socket = await socksConnect(peer, host, port);
    return await new Promise((resolve) => {
      const tls = tlsConnect({ socket, servername, ca, rejectUnauthorized: true });
      const timer = setTimeout(() => {
        tls.destroy();
        resolve({ error: "no answer within 8 s" });
      }, 8000);
      let raw = "";
      tls.on("secureConnect", () => {
        tls.write(`GET ${path} HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
      });
      tls.on("data", (d) => {
        raw += d.toString("utf8");
      });
      tls.on("end", () => {
        clearTimeout(timer);
        const cert = tls.getPeerX509Certificate();
        const m = /^HTTP\/1\.1 (\d{3})/.exec(raw);
        if (!m || !cert) return resolve({ error: `not an HTTP answer: ${JSON.stringify(raw.slice(0, 200))}` });
        resolve({ status: Number(m[1]), body: raw.slice(raw.indexOf("\r\n\r\n") + 4), cert });
      });
      tls.on("error", (e) => {
        clearTimeout(timer);
        resolve({ error: e.message });
      });
    });
  } catch (err) {
    return { error: (err as Error).message };
  }
}
