// A minimal SOCKS5 server (RFC 1928: no authentication, CONNECT only) standing in for tailscaled's
// `--socks5-server`. It logs every CONNECT it is asked for, so a test can check which destination the agent
// asked for, and can map names to addresses the way tailscaled resolves MagicDNS names.
import { createConnection, createServer, type Socket } from "node:net";

export interface SocksRequest {
  host: string;
  port: number;
  /** 1 = IPv4, 3 = domain name, 4 = IPv6. */
  addressType: number;
}

export interface Socks5Server {
  port: number;
  /** "127.0.0.1:<port>", as the agent config's tailscale.socksAddr. */
  address: string;
  requests: SocksRequest[];
  close(): Promise<void>;
}

export interface Socks5Options {
  /** Maps a requested host to the address dialled (default: as requested). */
  resolve?: (host: string) => string;
}

const REPLY_OK = 0x00;
const REPLY_HOST_UNREACHABLE = 0x04;
const REPLY_REFUSED = 0x05;
const REPLY_COMMAND_NOT_SUPPORTED = 0x07;

function reply(code: number): Buffer {
  return Buffer.from([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}

/** Reads exactly n bytes from a paused socket (handshake phase). */
function readBytes(socket: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const chunk = socket.read(n) as Buffer | null;
      if (chunk) {
        cleanup();
        resolve(chunk);
      }
    };
    const onEnd = () => {
      cleanup();
      reject(new Error("closed during handshake"));
    };
    const cleanup = () => {
      socket.off("readable", attempt);
      socket.off("end", onEnd);
      socket.off("error", onEnd);
    };
    socket.on("readable", attempt);
    socket.once("end", onEnd);
    socket.once("error", onEnd);
    attempt();
  });
}

async function handshake(
  socket: Socket,
  opts: Socks5Options,
  requests: SocksRequest[],
  live: Set<Socket>,
): Promise<void> {
  const [version, methods] = await readBytes(socket, 2);
  if (version !== 0x05) throw new Error("not SOCKS5");
  await readBytes(socket, methods);
  socket.write(Buffer.from([0x05, 0x00]));
  const [, command, , addressType] = await readBytes(socket, 4);
  let host: string;
  if (addressType === 0x01) host = [...(await readBytes(socket, 4))].join(".");
  else if (addressType === 0x03) host = (await readBytes(socket, (await readBytes(socket, 1))[0])).toString("utf8");
  else if (addressType === 0x04) {
    const raw = await readBytes(socket, 16);
    host = Array.from({ length: 8 }, (_, i) => raw.readUInt16BE(i * 2).toString(16)).join(":");
  } else throw new Error("bad address type");
  const port = (await readBytes(socket, 2)).readUInt16BE(0);
  requests.push({ host, port, addressType });
  if (command !== 0x01) {
    socket.end(reply(REPLY_COMMAND_NOT_SUPPORTED));
    return;
  }
  const upstream = createConnection({ host: opts.resolve ? opts.resolve(host) : host, port, allowHalfOpen: true });
  live.add(upstream);
  upstream.once("close", () => live.delete(upstream));
  const onDialError = (err: NodeJS.ErrnoException) => {
    socket.end(reply(err.code === "ECONNREFUSED" ? REPLY_REFUSED : REPLY_HOST_UNREACHABLE));
  };
  upstream.once("error", onDialError);
  upstream.once("connect", () => {
    upstream.off("error", onDialError);
    socket.write(reply(REPLY_OK));
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
    socket.pipe(upstream);
    upstream.pipe(socket);
  });
}

export async function startSocks5Server(opts: Socks5Options = {}): Promise<Socks5Server> {
  const requests: SocksRequest[] = [];
  const live = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (socket) => {
    live.add(socket);
    socket.once("close", () => live.delete(socket));
    handshake(socket, opts, requests, live).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (typeof address !== "object" || !address) throw new Error("no address");
  return {
    port: address.port,
    address: `127.0.0.1:${address.port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of live) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
