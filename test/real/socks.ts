/**
 * Round trips through a peer's tailscaled SOCKS5 server (on the peer's bridge address): TCP connect, echo and knock,
 * and DNS over UDP ASSOCIATE. Every byte travels the tailnet as the peer's own would. (Split out of operator.ts,
 * which re-exports them.)
 */
import { createSocket } from "node:dgram";
import type { Socket } from "node:net";
import { SocksClient } from "socks";
import type { Peer } from "./peers.js";

/** A TCP connection to host:port through a peer's tailscaled SOCKS5 server (on the peer's bridge address). */
export async function socksConnect(peer: Peer, host: string, port: number): Promise<Socket> {
  const { socket } = await SocksClient.createConnection({
    proxy: { host: peer.socks5.host, port: peer.socks5.port, type: 5 },
    command: "connect",
    destination: { host, port },
    timeout: 8000,
  });
  return socket;
}

/**
 * A TCP round trip through a peer's tailscaled SOCKS5 server (on the peer's bridge address): sends
 * `msg`, returns what came back, or "error: …" (tailscaled answers every failed dial with a SOCKS5
 * general failure, after its 5 s dial timeout at most).
 */
export async function socksEcho(peer: Peer, host: string, port: number, msg = "ping"): Promise<string> {
  try {
    const socket = await socksConnect(peer, host, port);
    return await new Promise<string>((resolve) => {
      let got = "";
      const timer = setTimeout(() => {
        socket.destroy();
        resolve(`error: no echo within 5 s (got ${JSON.stringify(got)})`);
      }, 5000);
      socket.on("data", (d) => {
        got += d.toString("utf8");
        if (got.length >= msg.length) {
          clearTimeout(timer);
          socket.destroy();
          resolve(got);
        }
      });
      socket.on("error", (e) => {
        clearTimeout(timer);
        resolve(`error: ${e.message}`);
      });
      socket.write(msg);
    });
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

/** A DNS A query (RD set) for `name`, id fixed. */
function dnsQuery(name: string): Buffer {
  const labels = name.replace(/\.$/, "").split(".");
  const q = Buffer.concat([
    ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, "latin1")])),
    Buffer.from([0, 0, 1, 0, 1]), // root, type A, class IN
  ]);
  const header = Buffer.from([0x4a, 0x11, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  return Buffer.concat([header, q]);
}

/** Skips a (possibly compressed) name; returns the offset after it. */
function skipName(msg: Buffer, off: number): number {
  while (off < msg.length) {
    const len = msg[off];
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2;
    off += 1 + len;
  }
  throw new Error("truncated DNS name");
}

/**
 * Connects to host:port through a peer's SOCKS5, writes `payload` and collects what comes back for up to
 * 3 s: "answered: <first bytes>", "closed: no bytes" or "error: …" (e.g. the remote netstack's reset).
 */
export async function socksKnock(peer: Peer, host: string, port: number, payload: Buffer): Promise<string> {
  let socket: Socket;
  try {
    ({ socket } = await SocksClient.createConnection({
      proxy: { host: peer.socks5.host, port: peer.socks5.port, type: 5 },
      command: "connect",
      destination: { host, port },
      timeout: 8000,
    }));
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
  return await new Promise<string>((resolve) => {
    let got = Buffer.alloc(0);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(
        got.length > 0 ? `answered: ${JSON.stringify(got.toString("latin1").slice(0, 120))}` : "closed: no bytes",
      );
    };
    const timer = setTimeout(finish, 3000);
    socket.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
    });
    socket.on("close", finish);
    socket.on("error", () => finish());
    socket.write(payload);
  });
}

export interface DnsAnswer {
  rcode: number;
  /** A records of the answer section, in order. */
  a: string[];
}

export function parseDnsAnswer(msg: Buffer): DnsAnswer {
  if (msg.length < 12) throw new Error(`DNS answer of ${msg.length} bytes`);
  const rcode = msg[3] & 0x0f;
  const qd = msg.readUInt16BE(4);
  const an = msg.readUInt16BE(6);
  let off = 12;
  for (let i = 0; i < qd; i++) off = skipName(msg, off) + 4;
  const a: string[] = [];
  for (let i = 0; i < an; i++) {
    off = skipName(msg, off);
    const type = msg.readUInt16BE(off);
    const rdlen = msg.readUInt16BE(off + 8);
    off += 10;
    if (type === 1 && rdlen === 4) a.push([...msg.subarray(off, off + 4)].join("."));
    off += rdlen;
  }
  return { rcode, a };
}

/**
 * Resolves `name` (A) with the DNS server at server:53 over UDP, through a peer's tailscaled SOCKS5
 * server (UDP ASSOCIATE, net/socks5 in tailscale): the datagrams travel the tailnet as the peer's own
 * would. Returns the answer, or "error: …".
 */
export async function socksDns(
  peer: Peer,
  server: string,
  name: string,
  timeoutMs = 5000,
): Promise<DnsAnswer | string> {
  let control: Socket | undefined;
  const udp = createSocket("udp4");
  let retry: NodeJS.Timeout | undefined;
  try {
    // createConnection() does CONNECT only; UDP ASSOCIATE goes through the event API.
    const info = await new Promise<{ socket: Socket; remoteHost?: { host: string; port: number } }>(
      (resolve, reject) => {
        const client = new SocksClient({
          proxy: { host: peer.socks5.host, port: peer.socks5.port, type: 5 },
          command: "associate",
          destination: { host: "0.0.0.0", port: 0 },
          timeout: 5000,
        });
        client.on("established", resolve);
        client.on("error", reject);
        client.connect();
      },
    );
    const socket = info.socket;
    control = socket;
    socket.on("error", () => undefined);
    const relay = info.remoteHost;
    if (!relay) return "error: no UDP relay address from the SOCKS5 server";
    // tailscaled answers with the address it listens on; 0.0.0.0 would mean "the server's address"
    const relayHost = relay.host === "0.0.0.0" ? peer.socks5.host : relay.host;
    const frame = SocksClient.createUDPFrame({ remoteHost: { host: server, port: 53 }, data: dnsQuery(name) });
    return await new Promise<DnsAnswer | string>((resolve) => {
      const timer = setTimeout(() => resolve(`error: no DNS answer within ${timeoutMs} ms`), timeoutMs);
      udp.on("message", (msg) => {
        clearTimeout(timer);
        try {
          resolve(parseDnsAnswer(SocksClient.parseUDPFrame(msg).data));
        } catch (err) {
          resolve(`error: ${(err as Error).message}`);
        }
      });
      udp.on("error", (err) => {
        clearTimeout(timer);
        resolve(`error: ${err.message}`);
      });
      // one retry: the first datagram may be spent while the peer's WireGuard session comes up
      udp.send(frame, relay.port, relayHost);
      retry = setTimeout(() => udp.send(frame, relay.port, relayHost), Math.min(2000, timeoutMs / 2));
    });
  } catch (err) {
    return `error: ${(err as Error).message}`;
  } finally {
    clearTimeout(retry);
    udp.close();
    control?.destroy();
  }
}
