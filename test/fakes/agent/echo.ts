// Upstreams for agent tests, on 127.0.0.1:0: a TCP echo target, a target that does not read until told to
// (backpressure), and an HTTP backend that records what it was asked. Each records what it saw so a test
// can assert on the far side of the agent.
import { createHash } from "node:crypto";
import { createServer as createHttpServer, type IncomingHttpHeaders } from "node:http";
import { createServer, type Server, type Socket } from "node:net";

async function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (typeof address !== "object" || !address) throw new Error("no address");
  return address.port;
}

function closer(server: Server | ReturnType<typeof createHttpServer>, sockets: Set<Socket>): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
}

function tracked(server: Server | ReturnType<typeof createHttpServer>): Set<Socket> {
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  return sockets;
}

export interface EchoServer {
  port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

/** Echoes every byte back; a FIN from the client is answered with a FIN once the echo is flushed. */
export async function startEchoServer(): Promise<EchoServer> {
  let accepted = 0;
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    accepted++;
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  const sockets = tracked(server);
  const port = await listen(server);
  return {
    port,
    get accepted() {
      return accepted;
    },
    close: closer(server, sockets),
  };
}

export interface Received {
  bytes: number;
  sha256: string;
}

export interface StalledServer {
  port: number;
  /** Resolves once the first connection is accepted. */
  connected: Promise<void>;
  /** Starts reading (all connections, now and later). */
  resume(): void;
  /** Bytes and sha256 of what the first connection sent, once it ended. */
  received: Promise<Received>;
  close(): Promise<void>;
}

/** A target that accepts but does not read until resume(): the agent must stop reading its client. */
export async function startStalledServer(): Promise<StalledServer> {
  let resumed = false;
  const conns: Socket[] = [];
  let onConnected: () => void = () => {};
  const connected = new Promise<void>((resolve) => (onConnected = resolve));
  let onReceived: (r: Received) => void = () => {};
  const received = new Promise<Received>((resolve) => (onReceived = resolve));
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on("error", () => socket.destroy());
    const first = conns.length === 0;
    conns.push(socket);
    const hash = createHash("sha256");
    let bytes = 0;
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      hash.update(chunk);
    });
    socket.on("end", () => {
      if (first) onReceived({ bytes, sha256: hash.digest("hex") });
      socket.end();
    });
    if (!resumed) socket.pause();
    if (first) onConnected();
  });
  const sockets = tracked(server);
  const port = await listen(server);
  return {
    port,
    connected,
    resume() {
      resumed = true;
      for (const socket of conns) socket.resume();
    },
    received,
    close: closer(server, sockets),
  };
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The backend-side view of the agent's connection: equal ports = the same (reused) connection. */
  remotePort: number;
}

export interface HttpBackend {
  port: number;
  requests: RecordedRequest[];
  /** TCP connections the backend accepted. */
  readonly connections: number;
  close(): Promise<void>;
}

/**
 * Answers every request with JSON `{method, url, headers, bodySha256, bodyBytes}`; `/upgrade` requests
 * switch protocols and echo raw bytes (a WebSocket stand-in).
 */
export async function startHttpBackend(): Promise<HttpBackend> {
  const requests: RecordedRequest[] = [];
  let connections = 0;
  const server = createHttpServer((req, res) => {
    requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      remotePort: req.socket.remotePort ?? 0,
    });
    const hash = createHash("sha256");
    let bytes = 0;
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      hash.update(chunk);
    });
    req.on("end", () => {
      const body = JSON.stringify({
        method: req.method,
        url: req.url,
        headers: req.headers,
        bodyBytes: bytes,
        bodySha256: hash.digest("hex"),
      });
      res.writeHead(200, { "content-type": "application/json", "x-backend": "yes" });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 30_000;
  server.on("connection", () => connections++);
  server.on("upgrade", (req, socket: Socket, head: Buffer) => {
    requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      remotePort: socket.remotePort ?? 0,
    });
    socket.write("HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: echo\r\n\r\n");
    if (head.length > 0) socket.write(head);
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  const sockets = tracked(server);
  const port = await listen(server);
  return {
    port,
    requests,
    get connections() {
      return connections;
    },
    close: closer(server, sockets),
  };
}

/** A port that is free now (for a listener the test starts itself). */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A port every dial to 127.0.0.1 is refused on: tcpmux (1), which nothing here serves and the kernel never
 * hands out (below the ephemeral range). A freed ephemeral port is not enough: under parallel test files
 * another listener got it (a SOCKS5 dial that should be refused succeeded).
 */
export async function closedPort(): Promise<number> {
  return 1;
}
