// HTTP/2 on an http expose, for real on loopback (src/agent/h2.ts): ALPN h2 and http/1.1 on one listener,
// h2 requests translated to an HTTP/1.1 backend and forwarded to an h2c one, gRPC's four call kinds end to
// end with trailers, cancellation both ways, the identity headers and path rules of HTTP/1.1, and :authority
// held to the expose SNI chose.
import assert from "node:assert/strict";
import { connect, constants } from "node:http2";
import { connect as netConnect } from "node:net";
import { after, before, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { GrpcReader, grpcFrame } from "../fakes/agent/grpc.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { grpcCall, grpcHeaders, h2Client, h2Request, NAME, startH2World } from "./h2-helpers.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({ names: [NAME, "other.ts.example.com"] });
});
after(() => pki.cleanup());

const get = (path: string, extra: Record<string, string> = {}) => ({
  ":method": "GET",
  ":path": path,
  ":authority": NAME,
  ...extra,
});

test("ALPN: h2 and http/1.1 both offered, each client gets the one it asked for", async (t) => {
  const { port } = await startH2World(t, cert);
  for (const offer of [["h2", "http/1.1"], ["http/1.1"], ["h2"]]) {
    const chosen = await new Promise<string | false>((resolve, reject) => {
      const socket = tlsConnect(
        { host: "127.0.0.1", port, servername: NAME, ca: pki.caPem, ALPNProtocols: offer },
        () => {
          resolve(socket.alpnProtocol ?? false);
          socket.destroy();
        },
      );
      socket.on("error", reject);
    });
    assert.equal(chosen, offer[0], offer.join(","));
  }
});

test("an h2 request to an HTTP/1.1 backend: translated, identity headers set and spoofed ones dropped", async (t) => {
  const { port, web } = await startH2World(t, cert);
  const session = h2Client(t, port, pki);
  const answer = await h2Request(
    session,
    get("/home?q=1", {
      "x-forwarded-for": "10.6.6.6",
      "x-forwarded-host": "evil",
      forwarded: "for=10.6.6.6",
      "x-real-ip": "10.6.6.6",
      "true-client-ip": "10.6.6.6",
      cookie: "a=1",
      "x-kept": "yes",
    }),
  );
  assert.equal(answer.status, 200);
  const seen = JSON.parse(answer.body);
  assert.equal(seen.url, "/home?q=1");
  assert.equal(web.requests.length, 1);
  const h = web.requests[0].headers;
  assert.equal(h.host, NAME);
  assert.equal(h["x-forwarded-for"], "127.0.0.1");
  assert.equal(h["x-forwarded-proto"], "https");
  assert.equal(h["x-forwarded-host"], NAME);
  for (const spoofed of ["forwarded", "x-real-ip", "true-client-ip"]) assert.equal(h[spoofed], undefined, spoofed);
  assert.equal(h["x-kept"], "yes");
  assert.equal(h.cookie, "a=1");
  // A body without content-length goes chunked (never unframed), and arrives whole.
  const posted = await h2Request(session, { ...get("/api/upload"), ":method": "POST" }, "x".repeat(100_000));
  assert.equal(posted.status, 200);
  assert.equal(JSON.parse(posted.body).bodyBytes, 100_000);
  assert.equal(JSON.parse(posted.body).headers["transfer-encoding"], "chunked");
});

test("proxyProtocol: the PROXY header's client address is X-Forwarded-For on h2 streams too", async (t) => {
  const { port, web, grpc } = await startH2World(t, cert, {}, true);
  const raw = netConnect({ host: "127.0.0.1", port });
  await new Promise((resolve) => raw.once("connect", resolve));
  raw.write("PROXY TCP4 100.64.0.9 100.64.0.1 40001 443\r\n");
  const tls = tlsConnect({ socket: raw, servername: NAME, ca: pki.caPem, ALPNProtocols: ["h2"] });
  await new Promise((resolve) => tls.once("secureConnect", resolve));
  const session = connect(`https://${NAME}`, { createConnection: () => tls });
  session.on("error", () => {});
  t.after(() => session.destroy());
  assert.equal((await h2Request(session, get("/", { "x-forwarded-for": "10.6.6.6" }))).status, 200);
  assert.equal(web.requests[0].headers["x-forwarded-for"], "100.64.0.9");
  const call = await grpcCall(session, "GetFeature", ["1,2"]);
  assert.equal(call.trailers["grpc-status"], "0");
  assert.equal(grpc.streams[0].headers["x-forwarded-for"], "100.64.0.9");
});

test("gRPC through the agent to an h2c backend: unary, server, client and bidi streaming, with trailers", async (t) => {
  const { port, grpc } = await startH2World(t, cert);
  const session = h2Client(t, port, pki);
  const unary = await grpcCall(session, "GetFeature", ["409146138,-746188906"]);
  assert.deepEqual(unary.messages, ["feature at 409146138,-746188906"]);
  assert.equal(unary.trailers["grpc-status"], "0");
  assert.equal(unary.headers["content-type"], "application/grpc");

  const server = await grpcCall(session, "ListFeatures", ["5"]);
  assert.deepEqual(server.messages, ["feature 0", "feature 1", "feature 2", "feature 3", "feature 4"]);
  assert.equal(server.trailers["grpc-status"], "0");

  const client = await grpcCall(session, "RecordRoute", ["p1", "p2", "p3", "p4"]);
  assert.deepEqual(client.messages, ["points=4 last=p4"]);
  assert.equal(client.trailers["grpc-status"], "0");

  // Bidi: each answer arrives before the next request is sent (a real interleaving, not a batch).
  const chat = session.request(grpcHeaders("RouteChat"));
  const reader = new GrpcReader();
  const got: string[] = [];
  let trailers: Record<string, unknown> = {};
  chat.on("trailers", (tr) => (trailers = tr));
  const next = () => new Promise<string>((resolve) => chat.once("message", resolve));
  chat.on("data", (chunk: Buffer) => {
    for (const m of reader.push(chunk)) chat.emit("message", m);
  });
  for (const note of ["first", "second", "third"]) {
    const answered = next();
    chat.write(grpcFrame(note));
    got.push(await answered);
  }
  const closed = new Promise<void>((resolve) => chat.on("close", () => resolve()));
  chat.end();
  await closed;
  assert.deepEqual(got, ["echo:first", "echo:second", "echo:third"]);
  assert.equal(trailers["grpc-status"], "0");

  // A trailers-only error answer (one HEADERS frame with END_STREAM) reaches the client as such.
  const missing = await grpcCall(session, "Missing", ["x"]);
  assert.equal(missing.headers["grpc-status"], "5");
  assert.equal(missing.headers["grpc-message"], "no such feature");
  assert.deepEqual(missing.messages, []);

  // Every call reached the backend with the agent's identity headers, the client's te: trailers and :authority.
  assert.equal(grpc.streams.length, 5);
  for (const s of grpc.streams) {
    assert.equal(s.headers["x-forwarded-for"], "127.0.0.1");
    assert.equal(s.headers["x-forwarded-proto"], "https");
    assert.equal(String(s.headers[":authority"]).split(":")[0], NAME);
    assert.equal(s.headers.te, "trailers");
  }
});

test("cancellation both ways: the client's RST_STREAM reaches the backend, the backend's reaches the client", async (t) => {
  const { port, grpc } = await startH2World(t, cert);
  const session = h2Client(t, port, pki);
  const held = session.request({ ...grpcHeaders("x"), ":path": "/hold", "grpc-timeout": "100m" });
  held.on("error", () => {});
  await new Promise((resolve) => held.once("response", resolve));
  held.close(constants.NGHTTP2_CANCEL); // what a gRPC client does at its deadline or on cancel
  const record = await grpc.closed("/hold");
  assert.equal(record.rstCode, constants.NGHTTP2_CANCEL);
  assert.equal(record.headers["grpc-timeout"], "100m");

  // The backend resets a stream: unknown path answered with REFUSED_STREAM, passed on as it is.
  const refused = await h2Request(session, { ...grpcHeaders("x"), ":path": "/routeguide.RouteGuide.Other" });
  assert.equal(refused.status, 200); // the default backend (HTTP/1.1) answered: not the gRPC prefix
  const reset = await h2Request(session, grpcHeaders("Unknown"), "");
  assert.equal(reset.rstCode, constants.NGHTTP2_REFUSED_STREAM);
});

test("request trailers reach an h2c backend without the identity fields a client puts there", async (t) => {
  const { port } = await startH2World(t, cert);
  const session = h2Client(t, port, pki);
  const stream = session.request(grpcHeaders("EchoTrailers"), { waitForTrailers: true });
  stream.on("wantTrailers", () =>
    stream.sendTrailers({ "x-sum": "abc", "x-forwarded-for": "10.6.6.6", forwarded: "for=x" }),
  );
  let trailers: Record<string, unknown> = {};
  stream.on("trailers", (tr) => (trailers = tr));
  stream.resume();
  await new Promise<void>((resolve) => {
    stream.on("close", () => resolve());
    stream.end("body");
  });
  assert.equal(trailers["x-sum"], "abc");
  assert.equal(trailers["x-count"], "1");
  assert.equal(trailers["x-forwarded-for"], undefined);
});

test("the path rules of HTTP/1.1: every ambiguous target is 400 and reaches no backend", async (t) => {
  const { port, web, api, grpc } = await startH2World(t, cert);
  const session = h2Client(t, port, pki);
  for (const path of [
    "/api/../admin",
    "/api/./x",
    "/api/%2e%2e/admin",
    "/api%2F..%2Fadmin",
    "//api",
    "/api;x=1",
    "/api\\x",
    "/%61pi",
    "/routeguide.RouteGuide/%47etFeature",
  ]) {
    const answer = await h2Request(session, get(path));
    assert.equal(answer.status, 400, path);
  }
  // Targets that are not origin-form are malformed in HTTP/2 (RFC 9113 §8.3.1): nghttp2 resets them before
  // the agent sees them (its own check, h2-request.ts, is the second line).
  for (const path of ["http://x/api", "api", "*"]) {
    const answer = await h2Request(session, get(path));
    assert.deepEqual([answer.status, answer.rstCode], [0, constants.NGHTTP2_PROTOCOL_ERROR], path);
  }
  assert.equal(web.requests.length + api.requests.length + grpc.streams.length, 0);
});

test(":authority must name the expose SNI chose: another name is 421, a differing Host 400, CONNECT 501", async (t) => {
  const { port, web } = await startH2World(t, cert);
  // other.ts.example.com is on the certificate (so a browser would coalesce) but is not this expose's name.
  const session = h2Client(t, port, pki);
  assert.equal((await h2Request(session, get("/", { ":authority": "other.ts.example.com" }))).status, 421);
  assert.equal((await h2Request(session, get("/", { host: "other.ts.example.com" }))).status, 400);
  assert.equal((await h2Request(session, get("/", { ":authority": `${NAME}:443` }))).status, 200);
  assert.equal((await h2Request(session, get("/", { ":authority": NAME.toUpperCase() }))).status, 200);
  assert.equal((await h2Request(session, get("/", { ":scheme": "http" }))).status, 400);
  assert.equal((await h2Request(session, { ":method": "CONNECT", ":authority": "10.0.0.1:22" })).status, 501);
  // Connected by the other name: this listener's only expose is the fallback, its name is still required.
  const coalesced = h2Client(t, port, pki, "other.ts.example.com");
  assert.equal((await h2Request(coalesced, get("/", { ":authority": "other.ts.example.com" }))).status, 421);
  assert.equal(web.requests.length, 2);
});

test("an HTTP/1.1 client routed to an h2c backend gets 502; the HTTP/1.1 backends still answer it", async (t) => {
  const { port, grpc, web } = await startH2World(t, cert);
  const exchange = (raw: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = tlsConnect(
        { host: "127.0.0.1", port, servername: NAME, ca: pki.caPem, ALPNProtocols: ["http/1.1"] },
        () => socket.end(raw),
      );
      let text = "";
      socket.setEncoding("latin1");
      socket.on("data", (d: string) => (text += d));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
    });
  assert.match(await exchange(`GET /home HTTP/1.1\r\nhost: ${NAME}\r\n\r\n`), /^HTTP\/1\.1 200 /);
  assert.match(
    await exchange(`POST /routeguide.RouteGuide/GetFeature HTTP/1.1\r\nhost: ${NAME}\r\ncontent-length: 0\r\n\r\n`),
    /^HTTP\/1\.1 502 /,
  );
  assert.equal(grpc.streams.length, 0);
  assert.equal(web.requests.length, 1);
});

test("shutdown with a grace period: GOAWAY, the stream in flight finishes, the close does not wait the whole grace", async (t) => {
  const { agent, port } = await startH2World(t, cert);
  const session = h2Client(t, port, pki);
  const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
  await h2Request(session, get("/warm"));
  // A request whose body is still coming when the agent starts shutting down.
  const upload = session.request({ ...get("/api/upload"), ":method": "POST" });
  let status = 0;
  let body = "";
  upload.on("response", (h) => (status = Number(h[":status"])));
  upload.setEncoding("utf8");
  upload.on("data", (d: string) => (body += d));
  const uploaded = new Promise<void>((resolve) => upload.on("close", () => resolve()));
  upload.write("first half,");
  await new Promise((r) => setTimeout(r, 100));
  const started = Date.now();
  const closing = agent.close(10_000);
  assert.equal(await goaway, constants.NGHTTP2_NO_ERROR);
  upload.end("second half");
  await uploaded;
  assert.equal(status, 200, "the stream in flight was answered");
  assert.equal(JSON.parse(body).bodyBytes, "first half,second half".length);
  await closing;
  assert.ok(Date.now() - started < 5000, `close took ${Date.now() - started} ms`);
});

test("an h2 client that stops reading stops the h2c backend (flow control, no unbounded buffer)", async (t) => {
  const { port, grpc } = await startH2World(t, cert, { idleTimeoutSeconds: 1 });
  const session = h2Client(t, port, pki);
  const big = session.request(get("/big"));
  big.on("error", () => {});
  await new Promise((resolve) => big.once("response", resolve));
  big.pause(); // never read: Node stops opening the stream's window
  await new Promise((r) => setTimeout(r, 500));
  const stalled = grpc.bigWritten;
  await new Promise((r) => setTimeout(r, 300));
  // The windows and buffers on the way (client, agent both sides, backend) hold a few MiB at most.
  assert.ok(stalled < 8 * 1024 * 1024, `backend wrote ${stalled} bytes to a client that reads nothing`);
  assert.equal(grpc.bigWritten, stalled, "the backend kept writing");
  // The stalled stream is reset after the idle timeout, and the reset reaches the backend.
  const record = await grpc.closed("/big");
  assert.notEqual(record.rstCode, constants.NGHTTP2_NO_ERROR);
});
