/**
 * The hook server cannot be starved by callers that reach its port (issue 23, item 6): the slot
 * is taken before the body is read, bytes in flight are budgeted, a Content-Length allocates
 * nothing up front, and slow senders time out. Real sockets: the behaviour lives in how the
 * body is streamed, which inject() does not model.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { describe, it } from "node:test";
import { syncRequest } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";

const MiB = 1024 * 1024;
const egressBody = () =>
  JSON.stringify(
    syncRequest({
      parent: {
        apiVersion: "tailnet.internal/v1alpha1",
        kind: "TailnetEgress",
        metadata: { name: "db", namespace: "shop", uid: "u1", generation: 1 },
        spec: { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
      },
    }),
  );
/** One legitimate egress sync (the caller the attacks must not starve). */
const postEgressSync = (port: number) =>
  fetch(`http://127.0.0.1:${port}/hooks/egress/sync`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: egressBody(),
  });

const sockets = new Set<Socket>();

/** A listening server; after the test every raw socket is destroyed first, so close() does not wait on them. */
async function listen(t: { after: (fn: () => Promise<void> | void) => void }, config: Record<string, unknown>) {
  const closers: (() => Promise<void> | void)[] = [];
  t.after(async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    for (const c of closers) await c();
  });
  const { app } = await build(
    { after: (fn: () => Promise<void> | void) => closers.push(fn) },
    { config: { logLevel: "silent", ...config } },
  );
  await app.listen({ port: 0, host: "127.0.0.1" });
  const port = (app.server.address() as { port: number }).port;
  return { app, port };
}

/** A raw connection that sends the head of a POST and then what the test writes. */
function open(port: number, path: string, length: number): { socket: Socket; answer: Promise<string> } {
  const socket = connect(port, "127.0.0.1");
  sockets.add(socket);
  socket.setNoDelay(true);
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`,
  );
  let got = "";
  socket.on("data", (d) => {
    got += d;
  });
  socket.on("error", () => {});
  const answer = new Promise<string>((resolve) => {
    socket.on("close", () => resolve(got));
    socket.on("data", () => {
      if (/\r\n\r\n[\s\S]*\}$/.test(got)) resolve(got);
    });
  });
  return { socket, answer };
}

const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1] ?? 0);
const bodyOf = (raw: string) => raw.slice(raw.indexOf("\r\n\r\n") + 4);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the hook server cannot be starved", () => {
  it("the in-flight slot is taken before the body is read: a stalled upload holds it, the next hook is 429", async (t) => {
    const { port } = await listen(t, { hooks: { maxInFlight: 1, retryAfterSeconds: 3 } });
    const stalled = open(port, "/hooks/egress/sync", 1000);
    stalled.socket.write('{"parent":');
    await sleep(100);
    const res = await postEgressSync(port);
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "3");
    assert.match(((await res.json()) as { error: string }).error, /^overloaded: 1 hooks in flight \(limit 1\)$/);
    // the slot comes back when the stalled caller goes away
    stalled.socket.destroy();
    await sleep(100);
    const after = await postEgressSync(port);
    assert.notEqual(after.status, 429);
  });

  it("a huge or lying Content-Length allocates nothing up front", async (t) => {
    const { port } = await listen(t, { hooks: { maxInFlight: 8 } });
    const before = process.memoryUsage().arrayBuffers;
    const liars = Array.from({ length: 4 }, () => open(port, "/hooks/tailnet/sync", 100 * MiB));
    for (const l of liars) l.socket.write('{"parent":{');
    await sleep(200);
    const grown = process.memoryUsage().arrayBuffers - before;
    // four buffers of 100 MiB before the fix; now four of 64 KiB
    assert.ok(grown < 8 * MiB, `array buffers grew by ${(grown / MiB).toFixed(1)} MiB`);
  });

  it("bytes in flight are budgeted: past the budget a body gets 503 with Retry-After, small syncs still pass", async (t) => {
    // 4 slots × 128 KiB reserve + 3.5 MiB shared
    const { port } = await listen(t, {
      hooks: { maxInFlight: 4, bodyBudgetBytes: 4 * MiB, tailnetBodyLimitBytes: 8 * MiB, retryAfterSeconds: 2 },
    });
    const first = open(port, "/hooks/tailnet/sync", 3 * MiB);
    first.socket.write(`{"pad":"${"x".repeat(2.5 * MiB)}`);
    await sleep(200);
    const second = open(port, "/hooks/tailnet/sync", 3 * MiB);
    second.socket.write(`{"pad":"${"x".repeat(2.5 * MiB)}`);
    const raw = await second.answer;
    assert.equal(statusOf(raw), 503);
    assert.match(raw, /\r\nretry-after: 2\r\n/i);
    assert.match(
      bodyOf(raw),
      /"error":"overloaded: hook bodies in flight are at the budget; \d+ bytes of this body arrived/,
    );
    // an egress sync fits in its own reserve while the pool is spent
    const small = await postEgressSync(port);
    assert.equal(small.status, 200);
  });

  it("the per-request limit is capped by the budget: a body one request could never hold is 413 up front", async (t) => {
    const { port } = await listen(t, { hooks: { maxInFlight: 4, bodyBudgetBytes: 4 * MiB } });
    // 4 MiB − 3 × 128 KiB is what one request can draw
    const big = open(port, "/hooks/egress/sync", 4 * MiB);
    const raw = await big.answer;
    assert.equal(statusOf(raw), 413);
    assert.match(bodyOf(raw), /body: larger than the limit of 3801088 bytes for hooks of this kind/);
  });

  it("a Tailnet body larger than the budget is parsed as it arrives when what it keeps fits", async (t) => {
    // 6 MiB of related objects, most of it managedFields: about 0.5 MiB is kept
    const served = {
      metadata: { name: "db", managedFields: [{ manager: "kubectl", fieldsV1: { "f:x": "y".repeat(900) } }] },
      spec: { tailnetRef: { name: "home" } },
    };
    const objects: Record<string, unknown> = {};
    for (let i = 0; i < 6000; i++) objects[`ns/o${i}`] = served;
    const body = JSON.stringify({
      ...JSON.parse(egressBody()),
      related: { "TailnetEgress.tailnet.internal/v1alpha1": objects },
    });
    assert.ok(body.length > 5 * MiB);
    const answer = async (config: Record<string, unknown>) => {
      const { port } = await listen(t, { hooks: { maxInFlight: 4, ...config } });
      const c = open(port, "/hooks/tailnet/sync", Buffer.byteLength(body));
      c.socket.write(body);
      const raw = await c.answer;
      return { status: statusOf(raw), body: bodyOf(raw) };
    };
    const tight = await answer({ bodyBudgetBytes: 4 * MiB });
    assert.ok(![413, 503].includes(tight.status), `${tight.status} ${tight.body}`);
    // the same answer as with room for the whole body (an egress parent on the Tailnet's path: a 400 of the envelope)
    assert.deepEqual(tight, await answer({ bodyBudgetBytes: 64 * MiB }));
  });

  it("a large malformed Tailnet body is a 400 naming the object it is in, the server still answering", async (t) => {
    const { port } = await listen(t, { hooks: { maxInFlight: 4 } });
    const good = `{"spec":{"x":"${"y".repeat(500)}"}}`;
    const objects = Array.from({ length: 4000 }, (_, i) => `"ns/o${i}":${i === 2500 ? '{"spec":{"x":1,}}' : good}`);
    const body = `{"parent":{},"related":{"TailnetEgress.tailnet.internal/v1alpha1":{${objects.join(",")}}}}`;
    assert.ok(body.length > 2 * MiB);
    const c = open(port, "/hooks/tailnet/sync", Buffer.byteLength(body));
    c.socket.write(body);
    const raw = await c.answer;
    assert.equal(statusOf(raw), 400);
    assert.match(
      bodyOf(raw),
      /"error":"body: invalid JSON in related\[\\"TailnetEgress.tailnet.internal\/v1alpha1\\"\]\[\\"ns\/o2500\\"\]"/,
    );
    assert.equal((await postEgressSync(port)).status, 200);
  });

  it("a slow body is cut off with 408 naming the deadline; the slot and bytes come back", async (t) => {
    const { port } = await listen(t, { hooks: { maxInFlight: 1, bodyTimeoutMs: 300, headersTimeoutMs: 1000 } });
    const slow = open(port, "/hooks/egress/sync", 1000);
    slow.socket.write("{");
    const started = Date.now();
    const raw = await slow.answer;
    assert.equal(statusOf(raw), 408);
    assert.match(bodyOf(raw), /body: not received within 300 ms \(1 bytes arrived\)/);
    assert.ok(Date.now() - started < 2000);
    await sleep(50);
    const next = await postEgressSync(port);
    assert.equal(next.status, 200);
  });

  it("headers that never finish are cut off (slowloris)", async (t) => {
    const { port } = await listen(t, { hooks: { headersTimeoutMs: 300, bodyTimeoutMs: 300 } });
    const socket = connect(port, "127.0.0.1");
    sockets.add(socket);
    socket.on("error", () => {});
    socket.write("POST /hooks/egress/sync HTTP/1.1\r\nHost: x\r\n");
    const started = Date.now();
    const drip = setInterval(() => socket.write("X-A: b\r\n"), 100);
    t.after(() => clearInterval(drip));
    await new Promise((r) => socket.on("close", r));
    clearInterval(drip);
    // Node checks header deadlines every second (connectionsCheckingInterval)
    assert.ok(Date.now() - started < 3000, `closed after ${Date.now() - started} ms`);
  });
});

/** Sends a head (and at most a byte of its body); the whole JSON answer within a second, else undefined. */
async function answerWithinASecond(port: number, head: string): Promise<string | undefined> {
  const socket = connect(port, "127.0.0.1");
  sockets.add(socket);
  socket.on("error", () => {});
  socket.write(head);
  let raw = "";
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 1000);
    socket.on("data", (d) => {
      raw += d;
      if (/\r\n\r\n.*\}$/s.test(raw)) {
        clearTimeout(timer);
        resolve(raw);
      }
    });
  });
}

describe("no parser outside the budget", () => {
  it("a body that is not application/json is refused with 415 before it is read (fastify's text/plain parser would buffer it)", async (t) => {
    const { port } = await listen(t, {});
    const raw = await answerWithinASecond(
      port,
      `POST /hooks/egress/sync HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${MiB}\r\n\r\n`,
    );
    assert.ok(raw !== undefined, "answered without waiting for the body");
    assert.equal(statusOf(raw), 415);
    assert.match(bodyOf(raw), /body: Content-Type must be application\/json/);
  });
});

describe("outside /hooks", () => {
  it("a body sent to any other path is refused with 415 before it is read (never buffered outside the budget)", async (t) => {
    const { port } = await listen(t, {});
    for (const path of ["/nope", "/healthz", "/metrics"]) {
      const raw = await answerWithinASecond(
        port,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${MiB}\r\n\r\n{`,
      );
      assert.ok(raw !== undefined, `${path}: answered without waiting for the body`);
      assert.equal(statusOf(raw), 415, path);
      assert.match(bodyOf(raw), new RegExp(`body: POST ${path} takes no body`));
    }
    // GETs without a body are untouched
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${port}/nope`)).status, 404);
  });
});
