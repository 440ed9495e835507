// HTTP/2's own attacks against an http expose, each sent as raw frames (h2-frames.ts) to a real agent
// (src/agent/h2.ts, docs/security.md "HTTP/2"): rapid reset, CONTINUATION floods, oversized header lists,
// streams past the concurrency limit, SETTINGS and PING floods from a client that does not read, a window
// that is never opened, connection-specific fields, the header timeout and the shared connection budget.
import assert from "node:assert/strict";
import { constants } from "node:http2";
import { after, before, test } from "node:test";
import { H2_MAX_CONCURRENT_STREAMS, H2_RESET_BURST } from "../../src/agent/h2.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import {
  errorCode,
  Flag,
  type Frame,
  FrameType,
  frame,
  headerBlock,
  rawH2,
  request,
  rstStream,
  Setting,
  settings,
  start,
} from "./h2-frames.js";
import { NAME, startH2World } from "./h2-helpers.js";
import { metricsText, sample } from "./helpers.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({ names: [NAME] });
});
after(() => pki.cleanup());

const isGoaway = (f: Frame) => f.type === FrameType.GOAWAY;
const rstOn = (stream: number) => (f: Frame) => f.type === FrameType.RST_STREAM && f.stream === stream;
const headersOn = (stream: number) => (f: Frame) => f.type === FrameType.HEADERS && f.stream === stream;
const END = Flag.END_STREAM | Flag.END_HEADERS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test("rapid reset (CVE-2023-44487): HEADERS then RST_STREAM, over and over, ends the session", async (t) => {
  const { port, grpc } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  const burst: Buffer[] = [];
  for (let i = 0; i < 2000; i++) {
    const id = 1 + 2 * i;
    burst.push(frame(FrameType.HEADERS, END, id, headerBlock(request(NAME, "/hold"))), rstStream(id, 8));
  }
  c.socket.write(Buffer.concat(burst));
  const goaway = await c.waitFor(isGoaway);
  assert.equal(errorCode(goaway), constants.NGHTTP2_INTERNAL_ERROR);
  await c.closed;
  // Past the burst the session ended: far from every stream was opened on the backend, and fewer than
  // nghttp2's own default burst (1000) would let through (measured: ~520 with ours, ~1030 with 1000).
  assert.ok(grpc.streams.length < 1000, `${grpc.streams.length} streams`);
  assert.ok(H2_RESET_BURST < 1000);
});

test("CONTINUATION flood (CVE-2024-27983/27919): a header block that never ends ends the session", async (t) => {
  const { port, web } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  const pieces = [frame(FrameType.HEADERS, 0, 1, headerBlock(request(NAME, "/")))];
  for (let i = 0; i < 1000; i++) pieces.push(frame(FrameType.CONTINUATION, 0, 1, headerBlock([[`x-${i}`, "y"]])));
  c.socket.write(Buffer.concat(pieces));
  const goaway = await c.waitFor(isGoaway);
  assert.notEqual(errorCode(goaway), constants.NGHTTP2_NO_ERROR);
  await c.closed;
  assert.equal(web.requests.length, 0);
});

test("a header list past 16 KiB is refused without reaching a backend; the connection serves the next", async (t) => {
  const { port, web } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  const big = request(NAME, "/", [["x-big", "a".repeat(20_000)]]);
  // In 16 KiB frames (the default SETTINGS_MAX_FRAME_SIZE), HEADERS then CONTINUATIONs.
  const block = headerBlock(big);
  const parts = [block.subarray(0, 16_000), block.subarray(16_000)];
  c.socket.write(
    Buffer.concat([
      frame(FrameType.HEADERS, Flag.END_STREAM, 1, parts[0]),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, parts[1]),
    ]),
  );
  // Node answers 431 itself (src/node_http2.cc: a header block past maxHeaderListSize), as HTTP/1.1 does.
  const refused = await c.waitFor((f) => rstOn(1)(f) || headersOn(1)(f) || isGoaway(f));
  assert.equal(refused.type, FrameType.HEADERS);
  assert.ok(refused.payload.includes(Buffer.from("431")), refused.payload.toString("hex"));
  c.socket.write(frame(FrameType.HEADERS, END, 3, headerBlock(request(NAME, "/next"))));
  await c.waitFor(headersOn(3));
  assert.deepEqual(
    web.requests.map((r) => r.url),
    ["/next"],
  );
});

test("a stream past SETTINGS_MAX_CONCURRENT_STREAMS ends the session; the held streams are reset at the backend", async (t) => {
  const { port, grpc } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  const open = (from: number, count: number) => {
    const pieces: Buffer[] = [];
    for (let i = 0; i < count; i++)
      pieces.push(frame(FrameType.HEADERS, END, from + 2 * i, headerBlock(request(NAME, "/hold"))));
    c.socket.write(Buffer.concat(pieces));
  };
  await c.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) !== 0); // our limits are in force
  open(1, H2_MAX_CONCURRENT_STREAMS + 1);
  // Once the client acknowledged the limit, nghttp2 treats one more as a connection error (RFC 9113 §5.1.2
  // lets it; before the ACK it refuses the stream, and maxSessionRejectedStreams bounds those).
  const goaway = await c.waitFor(isGoaway);
  assert.equal(errorCode(goaway), constants.NGHTTP2_PROTOCOL_ERROR);
  await c.closed;
  const held = await grpc.closed("/hold");
  assert.notEqual(held.rstCode, constants.NGHTTP2_NO_ERROR);
  // The session ended while the batch was read: what reached the backend is within the limit, all of it reset.
  assert.ok(grpc.streams.length <= H2_MAX_CONCURRENT_STREAMS, `${grpc.streams.length} streams`);
  await until("every backend stream closed", () => grpc.streams.every((s) => s.rstCode !== undefined));
  assert.ok(grpc.streams.every((s) => s.rstCode !== constants.NGHTTP2_NO_ERROR));
});

for (const [kind, flood] of [
  ["PING", () => frame(FrameType.PING, 0, 0, Buffer.alloc(8))],
  ["SETTINGS", () => settings([])],
] as const) {
  test(`a ${kind} flood from a client that does not read its acknowledgements is cut`, async (t) => {
    const { port, agent } = await startH2World(t, cert);
    const c = await rawH2(port, NAME, pki.caPem, false);
    start(c);
    const one = flood();
    const batch = Buffer.concat(Array.from({ length: 10_000 }, () => one));
    const active = async () => sample(await metricsText(agent), "tailnet_agent_connections_active", { name: "shop" });
    await until("the connection counted", async () => (await active()) === 1);
    let writes = 0;
    while (!c.socket.destroyed && writes < 200) {
      writes++;
      if (!c.socket.write(batch)) await Promise.race([new Promise((r) => c.socket.once("drain", r)), sleep(200)]);
      if ((await active()) === 0) break;
    }
    await until("the agent to close the connection", async () => (await active()) === 0, 10_000);
    c.socket.destroy();
  });
}

test("SETTINGS with more entries than maxSettings ends the session", async (t) => {
  const { port } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  c.socket.write(settings(Array.from({ length: 40 }, (_, i) => [0x100 + i, 1] as [number, number])));
  const goaway = await c.waitFor(isGoaway);
  assert.equal(errorCode(goaway), constants.NGHTTP2_ENHANCE_YOUR_CALM);
});

test("a window never opened (INITIAL_WINDOW_SIZE 0) pins no memory: the backend is stopped, the stream reset", async (t) => {
  const { port, grpc } = await startH2World(t, cert, { idleTimeoutSeconds: 1 });
  const c = await rawH2(port, NAME, pki.caPem);
  start(c, [[Setting.INITIAL_WINDOW_SIZE, 0]]);
  c.socket.write(frame(FrameType.HEADERS, END, 1, headerBlock(request(NAME, "/big"))));
  await c.waitFor(headersOn(1));
  await sleep(500);
  const stalled = grpc.bigWritten;
  await sleep(300);
  assert.ok(stalled < 4 * 1024 * 1024, `backend wrote ${stalled} bytes to a zero window`);
  assert.equal(grpc.bigWritten, stalled, "the backend kept writing");
  assert.equal(c.frames.filter((f) => f.type === FrameType.DATA && f.payload.length > 0).length, 0);
  // After the idle timeout the stream (or, idle as well, the whole connection) is closed.
  const reset = await c.waitFor((f) => rstOn(1)(f) || isGoaway(f), 5000);
  if (reset.type === FrameType.RST_STREAM) assert.equal(errorCode(reset), constants.NGHTTP2_CANCEL);
  const record = await grpc.closed("/big");
  assert.equal(record.rstCode, constants.NGHTTP2_CANCEL);
});

test("connection-specific fields and upper-case names are malformed (RFC 9113 §8.2): PROTOCOL_ERROR, no backend", async (t) => {
  const { port, web } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  const cases: [string, string][] = [
    ["connection", "keep-alive"],
    ["keep-alive", "timeout=5"],
    ["proxy-connection", "keep-alive"],
    ["transfer-encoding", "chunked"],
    ["upgrade", "h2c"],
    ["te", "gzip"],
    ["X-Forwarded-For", "10.6.6.6"],
  ];
  for (const [i, field] of cases.entries()) {
    const id = 1 + 2 * i;
    c.socket.write(frame(FrameType.HEADERS, END, id, headerBlock(request(NAME, "/", [field]))));
    const reset = await c.waitFor((f) => rstOn(id)(f) || headersOn(id)(f) || isGoaway(f));
    assert.equal(reset.type, FrameType.RST_STREAM, field[0]);
    assert.equal(errorCode(reset), constants.NGHTTP2_PROTOCOL_ERROR, field[0]);
  }
  assert.equal(web.requests.length, 0);
});

test("a connection that sends no complete request within limits.headerTimeoutSeconds is closed", async (t) => {
  const { port } = await startH2World(t, cert, { headerTimeoutSeconds: 0.3 });
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  c.socket.write(frame(FrameType.HEADERS, 0, 1, headerBlock(request(NAME, "/")))); // no END_HEADERS, ever
  const started = Date.now();
  await c.closed;
  assert.ok(Date.now() - started < 2000, `closed after ${Date.now() - started} ms`);
});

test("h2 connections take slots of the shared connection budget like HTTP/1.1's", async (t) => {
  const { port, agent } = await startH2World(t, cert, { maxConnections: 1 });
  const first = await rawH2(port, NAME, pki.caPem);
  start(first);
  await first.waitFor((f) => f.type === FrameType.SETTINGS);
  const second = await rawH2(port, NAME, pki.caPem).catch(() => undefined);
  if (second) await second.closed;
  assert.equal(sample(await metricsText(agent), "tailnet_agent_connections_rejected_total", { name: "shop" }), 1);
  first.socket.write(frame(FrameType.HEADERS, END, 1, headerBlock(request(NAME, "/still"))));
  await first.waitFor(headersOn(1));
});

test("a request trailer with a control character never reaches the backend; the connection serves on", async (t) => {
  const { port, grpc } = await startH2World(t, cert);
  const c = await rawH2(port, NAME, pki.caPem);
  start(c);
  const open = frame(
    FrameType.HEADERS,
    Flag.END_HEADERS,
    1,
    headerBlock(request(NAME, "/routeguide.RouteGuide/EchoTrailers")),
  );
  const body = frame(FrameType.DATA, 0, 1, Buffer.from("body"));
  const trailers = frame(
    FrameType.HEADERS,
    END,
    1,
    headerBlock([
      ["x-bad", "a\x01b"],
      ["x-good", "ok"],
    ]),
  );
  c.socket.write(Buffer.concat([open, body, trailers]));
  // nghttp2 drops a field with a control character (RFC 9113 §8.2.1 field validation) before the agent sees
  // it; were one to pass, the agent's own check (h2-upstream.ts requestTrailers) resets the stream both ways.
  const answer = await c.waitFor(
    (f) => rstOn(1)(f) || (headersOn(1)(f) && (f.flags & Flag.END_STREAM) !== 0) || isGoaway(f),
  );
  if (answer.type === FrameType.RST_STREAM) assert.notEqual(grpc.streams[0]?.rstCode, constants.NGHTTP2_NO_ERROR);
  else assert.deepEqual(grpc.streams[0].trailers, { "x-good": "ok" });
  assert.ok(!JSON.stringify(grpc.streams).includes("\\u0001"), "a control character reached the backend");
  c.socket.write(frame(FrameType.HEADERS, END, 3, headerBlock(request(NAME, "/still"))));
  await c.waitFor(headersOn(3));
});
