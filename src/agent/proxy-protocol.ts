// The PROXY protocol header (haproxy.org proxy-protocol.txt, v1 text and v2 binary) that tailscaled's serve
// config sends ahead of a TCPForward connection when the handler has `ProxyProtocol: 1|2`
// (tailscale.com@v1.102.3 ipn/ipnlocal/serve.go forwardTCPWithProxyProtocol): its source is the tailnet
// client's address, which the agent otherwise never sees (tailscaled dials it from 127.0.0.1).
import type { Socket } from "node:net";

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** v1's longest line (proxy-protocol.txt §2.1). */
const V1_MAX = 107;

export interface ProxyHeader {
  /** Header bytes, to skip. */
  length: number;
  /** The original client address; undefined for LOCAL / UNKNOWN (a health check from the proxy itself). */
  source?: string;
}

function ipv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  const text = groups.join(":");
  const v4 = /^0:0:0:0:0:ffff:([0-9a-f]+):([0-9a-f]+)$/.exec(text);
  if (v4) {
    const [hi, lo] = [Number.parseInt(v4[1], 16), Number.parseInt(v4[2], 16)];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return text.replace(/(^|:)0(:0)+(:|$)/, "::").replace(/:{3,}/, "::");
}

/**
 * Parses a PROXY header at the start of `data`: the header, or undefined while more bytes are needed.
 * Throws on anything that is not a well-formed v1 or v2 header.
 */
export function parseProxyHeader(data: Buffer): ProxyHeader | undefined {
  const sigBytes = Math.min(data.length, V2_SIGNATURE.length);
  if (data.subarray(0, sigBytes).equals(V2_SIGNATURE.subarray(0, sigBytes))) {
    if (data.length < 16) return undefined;
    const length = 16 + data.readUInt16BE(14);
    if (data.length < length) return undefined;
    const version = data[12] >> 4;
    const command = data[12] & 0x0f;
    if (version !== 2 || command > 1) throw new Error("bad PROXY v2 version/command");
    if (command === 0) return { length }; // LOCAL
    const family = data[13];
    if (family === 0x11 && length >= 16 + 12) return { length, source: [...data.subarray(16, 20)].join(".") };
    if (family === 0x21 && length >= 16 + 36) return { length, source: ipv6(data.subarray(16, 32)) };
    return { length }; // UNSPEC or unix: no address to carry
  }
  const prefix = "PROXY ";
  const head = data.toString("latin1", 0, Math.min(data.length, prefix.length));
  if (head !== prefix.slice(0, head.length)) throw new Error("no PROXY header");
  const eol = data.indexOf("\r\n", 0, "latin1");
  if (eol < 0) {
    if (data.length >= V1_MAX) throw new Error("PROXY v1 line too long");
    return undefined;
  }
  const fields = data.toString("latin1", 0, eol).split(" ");
  if (fields[1] === "UNKNOWN") return { length: eol + 2 };
  if (fields.length !== 6 || (fields[1] !== "TCP4" && fields[1] !== "TCP6")) throw new Error("bad PROXY v1 line");
  return { length: eol + 2, source: fields[2].replace(/^::ffff:/, "") };
}

/**
 * Reads the PROXY header off a fresh connection within `timeoutMs` and puts back what followed it.
 * Resolves with the client address (undefined for LOCAL/UNKNOWN); rejects on a bad header, timeout or close.
 */
export function readProxyHeader(socket: Socket, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    let buffered: Buffer = Buffer.alloc(0);
    const done = (err?: Error, source?: string) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      if (err) reject(err);
      else resolve(source);
    };
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      let header: ProxyHeader | undefined;
      try {
        header = parseProxyHeader(buffered);
      } catch (err) {
        done(err as Error);
        return;
      }
      if (!header) return;
      socket.pause();
      const rest = buffered.subarray(header.length);
      done(undefined, header.source);
      if (rest.length > 0) socket.unshift(rest);
    };
    const onClose = () => done(new Error("closed before the PROXY header"));
    const timer = setTimeout(() => done(new Error("no PROXY header in time")), timeoutMs);
    socket.on("data", onData);
    socket.once("close", onClose);
  });
}
