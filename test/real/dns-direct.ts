/**
 * One DNS question (A, over UDP) from the test process straight to a server on the test bridge, e.g. a gateway
 * pod's CoreDNS on its pod IP:1053 (what the DNS Service's ClusterIP maps to). No tailnet in between: for a check
 * that the pod serves its zone, not that the tailnet reaches it (gateway.test.ts does that through the laptop).
 */
import { createSocket } from "node:dgram";
import { type DnsAnswer, parseDnsAnswer } from "./socks.js";

/** id 1, RD, one question `name` A IN. */
function query(name: string): Buffer {
  return Buffer.concat([
    Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
    ...name.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
    Buffer.from([0, 0, 1, 0, 1]),
  ]);
}

/** The answer of server:port to `name` A, or "error: …" (no answer within timeoutMs, a socket error). */
export function udpDns(server: string, port: number, name: string, timeoutMs = 3000): Promise<DnsAnswer | string> {
  return new Promise((resolve) => {
    const s = createSocket("udp4");
    const done = (r: DnsAnswer | string) => {
      clearTimeout(timer);
      s.close();
      resolve(r);
    };
    const timer = setTimeout(() => done(`error: no answer from ${server}:${port} within ${timeoutMs} ms`), timeoutMs);
    s.on("error", (e) => done(`error: ${e.message}`));
    s.on("message", (m) => {
      try {
        done(parseDnsAnswer(m));
      } catch (e) {
        done(`error: ${(e as Error).message}`);
      }
    });
    s.send(query(name), port, server);
  });
}
