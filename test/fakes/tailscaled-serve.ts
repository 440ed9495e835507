/**
 * tailscaled's serve TCPForward as the local listener sees it (tailscale v1.102.3 ipn/ipnlocal/serve.go
 * forwardTCPWithProxyProtocol): it dials the handler's TCPForward address and, when the handler has
 * `ProxyProtocol` 1 or 2, writes a PROXY header of that version before any client byte — source = the
 * tailnet client's address, destination = the node's own address of the same family with the backend's
 * port — then copies the client's bytes. Without `ProxyProtocol` the client's bytes come alone.
 */
import { isIPv4, isIPv6, connect as netConnect, type Socket } from "node:net";

export interface ServeHandler {
  TCPForward: string;
  ProxyProtocol?: number;
}

export interface Endpoint {
  ip: string;
  port: number;
}

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

function ipBytes(ip: string): number[] {
  if (isIPv4(ip)) return ip.split(".").map(Number);
  if (!isIPv6(ip) || ip.includes(".")) throw new Error(`fake tailscaled: unsupported address ${ip}`);
  const [head, tail = ""] = ip.split("::");
  const groups = (s: string) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const h = groups(head);
  const t = ip.includes("::") ? groups(tail) : [];
  const all = [...h, ...new Array(8 - h.length - t.length).fill(0), ...t];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** The PROXY header (v1 text or v2 binary, command PROXY over TCP) tailscaled writes first. */
export function proxyHeader(version: number, src: Endpoint, dst: Endpoint): Buffer {
  const v4 = isIPv4(src.ip);
  if (version === 1) {
    return Buffer.from(`PROXY ${v4 ? "TCP4" : "TCP6"} ${src.ip} ${dst.ip} ${src.port} ${dst.port}\r\n`, "latin1");
  }
  if (version !== 2) throw new Error(`fake tailscaled: ProxyProtocol ${version} is not 1 or 2`);
  const addrLen = v4 ? 4 : 16;
  const body = Buffer.alloc(2 * addrLen + 4);
  body.set(ipBytes(src.ip), 0);
  body.set(ipBytes(dst.ip), addrLen);
  body.writeUInt16BE(src.port, 2 * addrLen);
  body.writeUInt16BE(dst.port, 2 * addrLen + 2);
  const head = Buffer.from([0x21, v4 ? 0x11 : 0x21, 0, 0]);
  head.writeUInt16BE(body.length, 2);
  return Buffer.concat([V2_SIGNATURE, head, body]);
}

/**
 * One connection as tailscaled forwards it from `client` to the node `nodeIp`: connected to the handler's
 * TCPForward address, the PROXY header (if asked for) already written. The caller speaks the client's bytes.
 */
export async function serveForward(handler: ServeHandler, client: Endpoint, nodeIp: string): Promise<Socket> {
  const at = handler.TCPForward.lastIndexOf(":");
  const host = handler.TCPForward.slice(0, at);
  const port = Number(handler.TCPForward.slice(at + 1));
  const socket = netConnect({ host, port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  if (handler.ProxyProtocol) socket.write(proxyHeader(handler.ProxyProtocol, client, { ip: nodeIp, port }));
  return socket;
}
