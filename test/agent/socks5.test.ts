// The agent's SOCKS5 client (src/agent/socks5.ts): greeting and CONNECT in one write, the reply parsed across any
// split, bytes behind the reply kept for the forwarder, and every refusal a short cause.
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import test from "node:test";
import { socks5Connect, socks5ConnectRequest, socks5ReplyLength } from "../../src/agent/socks5.js";

test("the request: greeting and CONNECT in one buffer, IPv4, IPv6 and names as RFC 1928 encodes them", () => {
  assert.deepEqual([...socks5ConnectRequest("100.64.0.7", 5432)], [5, 1, 0, 5, 1, 0, 1, 100, 64, 0, 7, 0x15, 0x38]);
  const v6 = socks5ConnectRequest("fd7a:115c:a1e0::1", 443);
  assert.deepEqual([...v6.subarray(6, 7)], [4]);
  assert.deepEqual([...v6.subarray(7, 23)], [0xfd, 0x7a, 0x11, 0x5c, 0xa1, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual([...v6.subarray(23)], [0x01, 0xbb]);
  const name = socks5ConnectRequest("db-1.ts.example.com", 80);
  assert.deepEqual([...name.subarray(6, 8)], [3, 19]);
  assert.equal(name.subarray(8, 27).toString(), "db-1.ts.example.com");
  assert.throws(() => socks5ConnectRequest("a".repeat(256), 80), /256 bytes/);
});

test("the reply: complete only with every byte of the bound address; refusals and garbage are short causes", () => {
  const ok4 = Buffer.from([5, 0, 5, 0, 0, 1, 127, 0, 0, 1, 0x30, 0x39]);
  for (let i = 0; i < ok4.length; i++) assert.equal(socks5ReplyLength(ok4.subarray(0, i)), 0, `${i} bytes`);
  assert.equal(socks5ReplyLength(ok4), 12);
  assert.equal(socks5ReplyLength(Buffer.concat([ok4, Buffer.from("hello")])), 12);
  const okName = Buffer.from([5, 0, 5, 0, 0, 3, 3, 0x61, 0x62, 0x63, 0, 80]);
  assert.equal(socks5ReplyLength(okName.subarray(0, 11)), 0);
  assert.equal(socks5ReplyLength(okName), 12);
  assert.equal(socks5ReplyLength(Buffer.concat([Buffer.from([5, 0, 5, 0, 0, 4]), Buffer.alloc(18)])), 24);
  const cause = (b: number[]) => (socks5ReplyLength(Buffer.from(b)) as Error).message;
  assert.equal(cause([5, 0, 5, 5, 0, 1]), "SOCKS5 ConnectionRefused");
  assert.equal(cause([5, 0, 5, 4]), "SOCKS5 HostUnreachable");
  assert.equal(cause([5, 0, 5, 0x42]), "SOCKS5 reply 66");
  assert.equal(cause([5, 0xff]), "SOCKS5 no acceptable authentication method");
  assert.equal(cause([0x48, 0x54]), "SOCKS5 not a SOCKS5 proxy");
  assert.equal(cause([5, 0, 5, 0, 0, 9]), "SOCKS5 malformed reply");
});

/** A proxy that answers each connection with `answer` (in the pieces given) once it has `expect` bytes. */
async function scriptedProxy(
  expect: number,
  answer: Buffer[],
): Promise<{ server: Server; port: number; got: Buffer[] }> {
  const got: Buffer[] = [];
  const server = createServer((socket: Socket) => {
    let buf = Buffer.alloc(0);
    socket.on("data", async (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length < expect) return;
      got.push(buf);
      for (const piece of answer) {
        socket.write(piece);
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as { port: number }).port, got };
}

const connectOnce = (port: number, timeoutMs = 2000) =>
  new Promise<{ reason?: string; socket?: Socket }>((resolve) =>
    socks5Connect({ host: "127.0.0.1", port }, { host: "db-1", port: 22 }, timeoutMs, (reason, socket) =>
      resolve({ reason, socket }),
    ),
  );

test("one write carries greeting and request; a reply split byte by byte still connects, and the target's first bytes reach the reader", async (t) => {
  const reply = [5, 0, 5, 0, 0, 1, 127, 0, 0, 1, 0, 22].map((b) => Buffer.from([b]));
  const proxy = await scriptedProxy(3 + 4 + 1 + 4 + 2, [
    ...reply.slice(0, -1),
    Buffer.from([22, ...Buffer.from("SSH-2.0-x\r\n")]),
  ]);
  t.after(() => proxy.server.close());
  const { reason, socket } = await connectOnce(proxy.port);
  assert.equal(reason, undefined);
  assert.ok(socket);
  t.after(() => socket.destroy());
  assert.deepEqual(
    [...proxy.got[0]],
    [...socks5ConnectRequest("db-1", 22)],
    "the proxy had all of it before answering",
  );
  assert.equal(socket.isPaused(), true, "handed over paused: nothing is emitted before the reader listens");
  await new Promise((r) => setTimeout(r, 20));
  const banner = await new Promise<string>((resolve) => {
    socket.once("data", (d: Buffer) => resolve(d.toString()));
    socket.resume();
  });
  assert.equal(banner, "SSH-2.0-x\r\n");
  assert.equal(socket.allowHalfOpen, true);
});

test("refused, closed, silent and absent proxies end in one short cause each", async (t) => {
  const refused = await scriptedProxy(3, [Buffer.from([5, 0, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0])]);
  const closing = createServer((s) => s.end());
  const silent = createServer(() => undefined);
  for (const s of [closing, silent]) await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  t.after(() => {
    for (const s of [refused.server, closing, silent]) s.close();
  });
  const port = (s: Server) => (s.address() as { port: number }).port;
  assert.equal((await connectOnce(refused.port)).reason, "SOCKS5 ConnectionRefused");
  assert.equal((await connectOnce(port(closing))).reason, "SOCKS5 proxy closed the connection");
  assert.equal((await connectOnce(port(silent), 200)).reason, "SOCKS5 timed out");
  const gone = port(silent);
  silent.close();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal((await connectOnce(gone)).reason, "SOCKS5 proxy unreachable (ECONNREFUSED)");
});
