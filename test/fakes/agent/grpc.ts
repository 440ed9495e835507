// An h2c backend for the agent's HTTP/2 tests, on 127.0.0.1:0: a small gRPC service in grpc-go's route_guide
// shape (google.golang.org/grpc/examples/route_guide: GetFeature unary, ListFeatures server streaming,
// RecordRoute client streaming, RouteChat bidi), spoken with gRPC's own framing (a 5-byte prefix per message,
// grpc-status in trailers) over node:http2, so the test needs no gRPC library. Messages are plain bytes.
// It records each stream's headers and how it closed, and has a stream that writes as fast as its window
// lets it (/big) and one that never answers (/hold), for flow control and cancellation.
import { constants, createServer, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { Socket } from "node:net";

export const SERVICE = "/routeguide.RouteGuide";

/** gRPC's length-prefixed message (grpc/grpc doc/PROTOCOL-HTTP2.md, Length-Prefixed-Message). */
export function grpcFrame(message: string | Buffer): Buffer {
  const body = typeof message === "string" ? Buffer.from(message) : message;
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Cuts a byte stream into gRPC messages as they complete. */
export class GrpcReader {
  private pending = Buffer.alloc(0);
  push(chunk: Buffer): string[] {
    this.pending = Buffer.concat([this.pending, chunk]);
    const out: string[] = [];
    while (this.pending.length >= 5) {
      const length = this.pending.readUInt32BE(1);
      if (this.pending.length < 5 + length) break;
      out.push(this.pending.toString("utf8", 5, 5 + length));
      this.pending = this.pending.subarray(5 + length);
    }
    return out;
  }
}

export interface GrpcStreamRecord {
  path: string;
  headers: IncomingHttpHeaders;
  /** RST_STREAM code the stream closed with (0: a clean end), once closed. */
  rstCode?: number;
  /** The request's trailer fields (/EchoTrailers). */
  trailers?: Record<string, string>;
}

export interface GrpcBackend {
  port: number;
  streams: GrpcStreamRecord[];
  /** Bytes /big handed to its stream whose write completed (what left for the agent). */
  readonly bigWritten: number;
  /** Resolves with each stream's record once it closes, by path (the first stream on that path). */
  closed(path: string): Promise<GrpcStreamRecord>;
  close(): Promise<void>;
}

const GRPC_HEADERS = { ":status": 200, "content-type": "application/grpc" };

function unary(stream: ServerHttp2Stream, answer: (messages: string[]) => string[]): void {
  const reader = new GrpcReader();
  const messages: string[] = [];
  stream.on("data", (chunk: Buffer) => messages.push(...reader.push(chunk)));
  stream.on("end", () => {
    stream.respond(GRPC_HEADERS, { waitForTrailers: true });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "" }));
    for (const m of answer(messages)) stream.write(grpcFrame(m));
    stream.end();
  });
}

function chat(stream: ServerHttp2Stream): void {
  const reader = new GrpcReader();
  stream.respond(GRPC_HEADERS, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  stream.on("data", (chunk: Buffer) => {
    for (const m of reader.push(chunk)) stream.write(grpcFrame(`echo:${m}`));
  });
  stream.on("end", () => stream.end());
}

export async function startGrpcBackend(): Promise<GrpcBackend> {
  const streams: GrpcStreamRecord[] = [];
  const waiters = new Map<string, (r: GrpcStreamRecord) => void>();
  const done = new Map<string, Promise<GrpcStreamRecord>>();
  let bigWritten = 0;
  const server = createServer();
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  const promiseFor = (path: string) => {
    let p = done.get(path);
    if (!p) {
      p = new Promise((resolve) => waiters.set(path, resolve));
      done.set(path, p);
    }
    return p;
  };
  server.on("stream", (stream, headers) => {
    const path = String(headers[":path"]);
    const record: GrpcStreamRecord = { path, headers };
    streams.push(record);
    promiseFor(path);
    stream.on("error", () => {});
    stream.on("close", () => {
      record.rstCode = stream.rstCode;
      waiters.get(path)?.(record);
    });
    switch (path) {
      case `${SERVICE}/GetFeature`:
        return unary(stream, (m) => [`feature at ${m.join(",")}`]);
      case `${SERVICE}/ListFeatures`:
        return unary(stream, (m) => Array.from({ length: Number(m[0]) }, (_, i) => `feature ${i}`));
      case `${SERVICE}/RecordRoute`:
        return unary(stream, (m) => [`points=${m.length} last=${m.at(-1)}`]);
      case `${SERVICE}/RouteChat`:
        return chat(stream);
      case `${SERVICE}/Missing`:
        // A trailers-only answer: gRPC's errors come as one HEADERS frame with END_STREAM.
        stream.respond({ ...GRPC_HEADERS, "grpc-status": "5", "grpc-message": "no such feature" }, { endStream: true });
        return;
      case `${SERVICE}/EchoTrailers`: {
        // Answers with the request's trailers it got, as its own trailers (and a body saying how many there were).
        const got: Record<string, string> = {};
        record.trailers = got;
        stream.on("trailers", (t) => {
          for (const [k, v] of Object.entries(t)) if (!k.startsWith(":")) got[k] = String(v);
        });
        stream.resume();
        stream.on("end", () => {
          stream.respond({ ":status": 200 }, { waitForTrailers: true });
          stream.on("wantTrailers", () => stream.sendTrailers({ ...got, "x-count": String(Object.keys(got).length) }));
          stream.end("ok");
        });
        return;
      }
      case "/big": {
        stream.respond({ ":status": 200 });
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        const pump = () => {
          while (!stream.destroyed && bigWritten < 64 * 1024 * 1024) {
            const ok = stream.write(chunk, (err) => {
              if (!err) bigWritten += chunk.length;
            });
            if (!ok) return void stream.once("drain", pump);
          }
        };
        pump();
        return;
      }
      case "/hold":
        stream.respond(GRPC_HEADERS); // and never more: the client or its deadline ends it
        return;
      default:
        stream.close(constants.NGHTTP2_REFUSED_STREAM);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (typeof address !== "object" || !address) throw new Error("no address");
  return {
    port: address.port,
    streams,
    get bigWritten() {
      return bigWritten;
    },
    closed: promiseFor,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
