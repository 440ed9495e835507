import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import { describe, it, type TestContext } from "node:test";
import { silentLogger } from "../../src/agent/log.js";
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { BufferReader, supportsReadBuffer } from "../../src/agent/read-buffer.js";
import { relay } from "../../src/agent/relay.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function listen(t: TestContext, server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  return (server.address() as { port: number }).port;
}

/** A server whose first accepted socket is handed out. */
async function accepting(t: TestContext): Promise<{ port: number; accepted: Promise<Socket> }> {
  let resolve: (s: Socket) => void = () => {};
  const accepted = new Promise<Socket>((r) => (resolve = r));
  const port = await listen(
    t,
    createServer({ allowHalfOpen: true }, (s) => resolve(s)),
  );
  return { port, accepted };
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("reading into one reused buffer", () => {
  it("is what this Node does: bytes held before the switch come first, every later read lands in the same buffer", async (t) => {
    assert.equal(supportsReadBuffer(), true, "the Node the image runs supports the switch (read-buffer.ts)");
    const { port, accepted } = await accepting(t);
    const client = connect({ host: "127.0.0.1", port });
    t.after(() => client.destroy());
    client.write("early;");
    const server = await accepted;
    await sleep(50); // "early;" now sits in the stream's own buffer
    const buffers = new Set<ArrayBufferLike>();
    let text = "";
    const reader = new BufferReader((chunk) => {
      text += chunk.toString();
      if (!text.startsWith("early;") || text.length > 6) buffers.add(chunk.buffer);
      return true;
    });
    assert.equal(reader.attach(server), true);
    for (const word of ["one;", "two;", "three;"]) {
      client.write(word);
      await sleep(30); // one read each
    }
    client.end();
    await new Promise<void>((r) => server.once("end", () => r()));
    assert.equal(text, "early;one;two;three;");
    assert.equal(buffers.size, 1, "one buffer for every read after the switch");
    server.destroy();
  });

  it("a switch from inside a 'data' listener takes every chunk the flowing stream still holds", async (t) => {
    const { port, accepted } = await accepting(t);
    const client = connect({ host: "127.0.0.1", port });
    t.after(() => client.destroy());
    const server = await accepted;
    server.pause(); // what the relay does under backpressure: the stream keeps reading into its own buffer
    for (const word of ["one;", "two;", "three;"]) {
      client.write(word);
      await sleep(30); // a chunk each
    }
    let text = "";
    const reader = new BufferReader((chunk) => {
      text += chunk.toString();
      return true;
    });
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      server.off("data", onData);
      assert.equal(reader.attach(server), true);
    };
    server.on("data", onData);
    server.resume();
    await sleep(30);
    client.write("four;");
    await sleep(30);
    assert.equal(text, "one;two;three;four;");
    server.destroy();
  });

  it("a retained buffer is left alone: the next read goes into a fresh one", async (t) => {
    const { port, accepted } = await accepting(t);
    const client = connect({ host: "127.0.0.1", port });
    t.after(() => client.destroy());
    const server = await accepted;
    const kept: Buffer[] = [];
    const reader = new BufferReader((chunk) => {
      kept.push(chunk);
      reader.retain();
      return true;
    });
    assert.equal(reader.attach(server), true);
    client.write("first");
    await sleep(30);
    client.write("second");
    await sleep(30);
    assert.deepEqual(
      kept.map((c) => c.toString()),
      ["first", "second"],
    );
    assert.notEqual(kept[0].buffer, kept[1].buffer);
    server.destroy();
  });
});

/** One connection whose server side reads one chunk through a BufferReader; returns that chunk's buffer once closed. */
async function oneRead(t: TestContext, retain: boolean): Promise<ArrayBufferLike> {
  const { port, accepted } = await accepting(t);
  const client = connect({ host: "127.0.0.1", port });
  t.after(() => client.destroy());
  const server = await accepted;
  let seen: ArrayBufferLike | undefined;
  const got = new Promise<void>((resolve) => {
    const onRead = new BufferReader((chunk) => {
      seen = chunk.buffer;
      if (retain) onRead.retain();
      resolve();
      return true;
    });
    assert.equal(onRead.attach(server), true);
    server.once("close", () => onRead.release());
  });
  client.write("x");
  await got;
  client.destroy();
  const closed = new Promise<void>((r) => server.once("close", () => setImmediate(r)));
  server.destroy();
  await closed;
  return seen as ArrayBufferLike;
}

describe("the buffers of closed connections", () => {
  it("go to the next connection's reader, unless a pending write may still hold one", async (t) => {
    const first = await oneRead(t, false);
    assert.equal(await oneRead(t, false), first, "a released buffer is read into again");
    const held = await oneRead(t, true);
    assert.equal(held, first, "taken from the pool once more");
    assert.notEqual(await oneRead(t, false), held, "a retained buffer never goes back to the pool");
  });
});

/**
 * A backend that reads in fits (it stops for 100 ms after every MiB, so every kernel buffer on the way fills and
 * the relay's writes are taken in part) and, once the client's FIN is in, answers `answer` and ends.
 */
async function slowBackend(t: TestContext, answer: Buffer) {
  const received: Buffer[] = [];
  let resolveGot: (b: Buffer) => void = () => {};
  const got = new Promise<Buffer>((r) => (resolveGot = r));
  const port = await listen(
    t,
    createServer({ allowHalfOpen: true }, (s) => {
      s.on("error", () => s.destroy());
      let total = 0;
      s.on("data", (c: Buffer) => {
        received.push(c);
        const before = total;
        total += c.length;
        if (Math.floor(before / 2 ** 20) === Math.floor(total / 2 ** 20)) return;
        s.pause();
        setTimeout(() => s.resume(), 100);
      });
      s.once("end", () => {
        resolveGot(Buffer.concat(received));
        s.end(answer);
      });
    }),
  );
  return { port, got };
}

async function front(t: TestContext, backendPort: number) {
  const metrics = createAgentMetrics(["db"], { defaultMetrics: false });
  const relays: Promise<void>[] = [];
  const upstreams: Socket[] = [];
  const port = await listen(
    t,
    createServer({ allowHalfOpen: true }, (client) => {
      const upstream = connect({ host: "127.0.0.1", port: backendPort, allowHalfOpen: true });
      upstreams.push(upstream);
      relays.push(relay(client, upstream, { name: "db", idleTimeoutMs: 60_000, metrics, log: silentLogger }));
    }),
  );
  return { port, relays, upstreams };
}

describe("relay with reused read buffers", () => {
  it("a fast writer and a slow reader, both ways and across a half-close: every byte arrives in order", async (t) => {
    const request = randomBytes(8 << 20);
    const answer = randomBytes(8 << 20);
    const backend = await slowBackend(t, answer);
    const agent = await front(t, backend.port);
    const client = connect({ host: "127.0.0.1", port: agent.port, allowHalfOpen: true });
    t.after(() => client.destroy());
    const back: Buffer[] = [];
    let total = 0;
    client.on("data", (c: Buffer) => {
      back.push(c);
      const before = total;
      total += c.length;
      if (Math.floor(before / 2 ** 20) === Math.floor(total / 2 ** 20)) return;
      client.pause(); // in fits on this side too
      setTimeout(() => client.resume(), 100);
    });
    const ended = new Promise<void>((r) => client.once("end", () => r()));
    // many writes as fast as the socket takes them, then the FIN
    for (let off = 0; off < request.length; off += 256 * 1024) client.write(request.subarray(off, off + 256 * 1024));
    client.end();
    assert.equal(sha(await backend.got), sha(request), "the backend got the request intact");
    await ended;
    assert.equal(sha(Buffer.concat(back)), sha(answer), "the client got the answer intact after its own FIN");
    await Promise.all(agent.relays);
  });

  it("a reset mid-transfer closes both sides and ends the relay", async (t) => {
    const backend = await slowBackend(t, Buffer.alloc(0));
    const agent = await front(t, backend.port);
    const client = connect({ host: "127.0.0.1", port: agent.port });
    await new Promise<void>((r) => client.once("connect", () => r()));
    const chunk = Buffer.alloc(1 << 20, 7);
    for (let i = 0; i < 8; i++) client.write(chunk);
    await sleep(50);
    client.resetAndDestroy();
    await Promise.race([
      Promise.all(agent.relays),
      sleep(5000).then(() => assert.fail("the relay still runs 5 s after the reset")),
    ]);
    assert.ok(agent.upstreams[0]?.destroyed, "the upstream is closed too");
  });
});
