// Plumbing for the agent's HTTP/2 tests: an agent with one routed http expose in front of an HTTP/1.1 echo
// backend and an h2c gRPC backend, a node:http2 client for it, and gRPC calls over that client.
import { type ClientHttp2Session, connect, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http2";
import type { TestContext } from "node:test";
import type { RunningAgent } from "../../src/agent/main.js";
import type { AgentExpose } from "../../src/contract/agent-config.js";
import { type HttpBackend, startHttpBackend } from "../fakes/agent/echo.js";
import { type GrpcBackend, GrpcReader, grpcFrame, SERVICE, startGrpcBackend } from "../fakes/agent/grpc.js";
import type { IssuedCertificate, TestPki } from "../fakes/agent/pki.js";
import { agentFor } from "./helpers.js";

export const NAME = "shop.ts.example.com";

export interface H2World {
  agent: RunningAgent;
  port: number;
  web: HttpBackend;
  api: HttpBackend;
  grpc: GrpcBackend;
}

/**
 * `/` to the HTTP/1.1 echo `web`, `/api` (Prefix) to `api`, the gRPC service and /big, /hold to the h2c backend.
 */
export async function startH2World(
  t: TestContext,
  cert: IssuedCertificate,
  limits: Record<string, number> = {},
  proxyProtocol = false,
): Promise<H2World> {
  const web = await startHttpBackend();
  const api = await startHttpBackend();
  const grpc = await startGrpcBackend();
  t.after(() => Promise.all([web.close(), api.close(), grpc.close()]));
  const h2c = { host: "127.0.0.1", port: grpc.port, protocol: "h2c" as const };
  const expose: AgentExpose = {
    name: "shop",
    listenPort: 0,
    mode: "http",
    backend: { host: "127.0.0.1", port: web.port },
    paths: [
      { path: "/api", pathType: "Prefix", backend: { host: "127.0.0.1", port: api.port, protocol: "http1" } },
      { path: SERVICE, pathType: "Prefix", backend: h2c },
      { path: "/big", pathType: "Exact", backend: h2c },
      { path: "/hold", pathType: "Exact", backend: h2c },
    ],
    tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    names: [NAME],
    ...(proxyProtocol ? { proxyProtocol } : {}),
  };
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [expose],
    limits,
  });
  return { agent, port: agent.ports.exposes[0].listenPort, web, api, grpc };
}

/** An HTTP/2 client of the agent (ALPN h2, SNI `servername`), closed after the test. */
export function h2Client(t: TestContext, port: number, pki: TestPki, servername = NAME): ClientHttp2Session {
  const session = connect(`https://127.0.0.1:${port}`, { ca: pki.caPem, servername });
  session.on("error", () => {});
  t.after(() => session.destroy());
  return session;
}

export interface H2Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  trailers: IncomingHttpHeaders;
  /** RST_STREAM code the stream closed with (0: a clean end). */
  rstCode: number;
}

/** One request on `session`; resolves when the stream closes, however it closes. */
export function h2Request(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  return new Promise((resolve) => {
    const stream = session.request(headers, { endStream: body === undefined });
    const answer: H2Answer = { status: 0, headers: {}, body: "", trailers: {}, rstCode: 0 };
    stream.setEncoding("utf8");
    stream.on("response", (h) => {
      answer.headers = h;
      answer.status = Number(h[":status"]);
    });
    stream.on("trailers", (t) => (answer.trailers = t));
    stream.on("data", (chunk: string) => (answer.body += chunk));
    stream.on("error", () => {});
    stream.on("close", () => {
      answer.rstCode = stream.rstCode ?? 0;
      resolve(answer);
    });
    if (body !== undefined) stream.end(body);
  });
}

export interface GrpcAnswer {
  headers: IncomingHttpHeaders;
  messages: string[];
  trailers: IncomingHttpHeaders;
  rstCode: number;
}

export const grpcHeaders = (method: string, extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders => ({
  ":method": "POST",
  ":path": `${SERVICE}/${method}`,
  "content-type": "application/grpc",
  te: "trailers",
  ...extra,
});

/** A gRPC call that sends `requests` (then ends its side) and collects every answer. */
export function grpcCall(session: ClientHttp2Session, method: string, requests: string[]): Promise<GrpcAnswer> {
  return new Promise((resolve) => {
    const stream = session.request(grpcHeaders(method));
    const reader = new GrpcReader();
    const answer: GrpcAnswer = { headers: {}, messages: [], trailers: {}, rstCode: 0 };
    stream.on("response", (h) => (answer.headers = h));
    stream.on("trailers", (t) => (answer.trailers = t));
    stream.on("data", (chunk: Buffer) => answer.messages.push(...reader.push(chunk)));
    stream.on("error", () => {});
    stream.on("close", () => {
      answer.rstCode = stream.rstCode ?? 0;
      resolve(answer);
    });
    for (const r of requests) stream.write(grpcFrame(r));
    stream.end();
  });
}
