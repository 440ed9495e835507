import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_HEAD_BYTES, RequestFramer } from "../../src/agent/framer.js";
import { HttpFramingError, rewriteRequestHead } from "../../src/agent/http1.js";
import { parseProxyHeader } from "../../src/agent/proxy-protocol.js";

const text = (pieces: Buffer[]) => Buffer.concat(pieces).toString("latin1");

test("head rewrite: client identity set (not extended), forged variants and Connection-named headers dropped", () => {
  const r = rewriteRequestHead(
    "GET /a?b HTTP/1.1\r\nHost: web.example\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Proto: http\r\n" +
      "Connection: keep-alive, x-hop, X-Forwarded-For\r\nX-Hop: drop\r\nProxy-Connection: x\r\nX-App: keep\r\n" +
      "Forwarded: for=10.1.2.3\r\nX-Real-IP: 10.1.2.3\r\nTrue-Client-IP: 10.1.2.3\r\nX-Client-IP: 10.1.2.3",
    "100.64.0.7",
  );
  assert.equal(
    r.head.toString("latin1"),
    "GET /a?b HTTP/1.1\r\nHost: web.example\r\nX-App: keep\r\nconnection: keep-alive\r\n" +
      "x-forwarded-for: 100.64.0.7\r\nx-forwarded-proto: https\r\nx-forwarded-host: web.example\r\n\r\n",
  );
  assert.deepEqual(r.body, { kind: "none" });
  assert.equal(r.upgrade, false);
});

test("head rewrite: body framing normalised, upgrades, and the smuggling cases answered 400 (CONNECT 501)", () => {
  const framing = (head: string) => {
    const r = rewriteRequestHead(head, "");
    return [r.body, r.head.toString("latin1").split("\r\n").slice(1, -4)];
  };
  assert.deepEqual(framing("POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 005"), [
    { kind: "length", length: 5 },
    ["host: a", "content-length: 5"],
  ]);
  assert.deepEqual(framing("POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding:\tChunked "), [
    { kind: "chunked" },
    ["host: a", "transfer-encoding: chunked"],
  ]);
  const ws = "GET / HTTP/1.1\r\nhost: a\r\nconnection: Upgrade\r\nupgrade: websocket";
  assert.equal(rewriteRequestHead(ws, "").upgrade, true);
  assert.equal(rewriteRequestHead("GET / HTTP/1.1\r\nhost: a\r\nupgrade: websocket", "").upgrade, false, "not named");
  assert.equal(rewriteRequestHead(ws.replace("websocket", "h2c"), "").upgrade, false, "h2c");
  assert.equal(rewriteRequestHead(ws.replace("1.1", "1.0"), "").upgrade, false, "HTTP/1.0");
  assert.doesNotMatch(rewriteRequestHead(ws.replace("websocket", "h2c"), "").head.toString(), /upgrade/i);
  assert.equal(rewriteRequestHead("HEAD / HTTP/1.1\r\nhost: a", "").headMethod, true);
  for (const bad of [
    "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\ntransfer-encoding: chunked",
    "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked, gzip",
    "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: gzip, chunked",
    "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5, 5",
    "POST / HTTP/1.1\r\nhost: a\r\ncontent-length: -1",
    "GET / HTTP/1.1\r\nhost: a\r\nhost: b",
    "GET / HTTP/1.1\r\nhost: a\r\nx-a: 1\r\n folded",
    "GET / HTTP/2.0\r\nhost: a",
    "GET /\r\nhost: a",
    "GET / HTTP/1.1\r\nhost: a\r\nbad name: 1",
    "GET / HTTP/1.1\r\nhost: a\r\nx: a\nb",
    "GET / HTTP/1.1",
  ]) {
    assert.throws(
      () => rewriteRequestHead(bad, ""),
      (err: unknown) => err instanceof HttpFramingError && err.status === 400,
      bad,
    );
  }
  assert.throws(
    () => rewriteRequestHead("CONNECT a:443 HTTP/1.1\r\nhost: a:443", ""),
    (err: unknown) => err instanceof HttpFramingError && err.status === 501,
  );
});

test("framer: pipelined requests with length and chunked bodies, split at every byte, pass bodies untouched", () => {
  const wire =
    "\r\nPOST /1 HTTP/1.1\r\nhost: h\r\ncontent-length: 4\r\n\r\nab\r\n" +
    "POST /2 HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n3;ext=1\r\nxyz\r\n0\r\nx-checksum: t\r\n\r\n" +
    "GET /3 HTTP/1.1\r\nhost: h\r\n\r\n";
  const expected =
    "POST /1 HTTP/1.1\r\nhost: h\r\ncontent-length: 4\r\nx-forwarded-for: 1.2.3.4\r\nx-forwarded-proto: https\r\nx-forwarded-host: h\r\n\r\nab\r\n" +
    "POST /2 HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\nx-forwarded-for: 1.2.3.4\r\nx-forwarded-proto: https\r\nx-forwarded-host: h\r\n\r\n3\r\nxyz\r\n0\r\nx-checksum: t\r\n\r\n" +
    "GET /3 HTTP/1.1\r\nhost: h\r\nx-forwarded-for: 1.2.3.4\r\nx-forwarded-proto: https\r\nx-forwarded-host: h\r\n\r\n";
  const whole = new RequestFramer("1.2.3.4");
  assert.equal(text(whole.push(Buffer.from(wire, "latin1"))), expected);
  const bytewise = new RequestFramer("1.2.3.4");
  const out: Buffer[] = [];
  for (const byte of Buffer.from(wire, "latin1")) out.push(...bytewise.push(Buffer.from([byte])));
  assert.equal(text(out), expected);
});

test("framer: after an answered upgrade the stream is raw; a bad chunk or an oversized head throws", () => {
  const up = new RequestFramer(undefined);
  const head = text(
    up.push(Buffer.from("GET /ws HTTP/1.1\r\nhost: a\r\nconnection: upgrade\r\nupgrade: x\r\n\r\nGET / HTTP/1.1\r\n")),
  );
  assert.match(head, /x-forwarded-proto: https\r\nx-forwarded-host: a\r\n\r\n$/);
  assert.equal(text(up.answered(true)), "GET / HTTP/1.1\r\n");
  assert.equal(text(up.push(Buffer.from("not http"))), "not http");

  const chunk = new RequestFramer(undefined);
  const chunked = "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n";
  assert.match(
    text(chunk.push(Buffer.from(`${chunked}zz\r\n`))),
    /^POST \/ HTTP\/1\.1\r\n.*\r\n\r\n$/s,
    "the head went",
  );
  assert.equal(chunk.failed?.status, 400);
  assert.equal(chunk.failedMidRequest, true);
  assert.deepEqual(chunk.push(Buffer.from("0\r\n\r\n")), [], "nothing after a failure");
  const big = new RequestFramer(undefined);
  assert.deepEqual(big.push(Buffer.from(`GET / HTTP/1.1\r\nx: ${"a".repeat(MAX_HEAD_BYTES)}`)), []);
  assert.equal(big.failed?.status, 431);
  assert.equal(big.failedMidRequest, false);
});

test("PROXY header: v2 TCP4/TCP6/LOCAL, v1 TCP4/UNKNOWN, incomplete input waits, anything else throws", () => {
  const sig = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
  const v2 = (verCmd: number, fam: number, body: Buffer) =>
    Buffer.concat([sig, Buffer.from([verCmd, fam, body.length >> 8, body.length & 255]), body]);
  const v4 = v2(0x21, 0x11, Buffer.from([100, 64, 0, 9, 100, 64, 0, 1, 0x9c, 0x40, 1, 0xbb]));
  assert.deepEqual(parseProxyHeader(Buffer.concat([v4, Buffer.from([0x16, 3, 1])])), {
    length: 28,
    source: "100.64.0.9",
  });
  const addr6 = Buffer.alloc(36);
  Buffer.from("fd7a115ca1e000000000000000000009", "hex").copy(addr6, 0, 0, 16);
  assert.deepEqual(parseProxyHeader(v2(0x21, 0x21, addr6)), { length: 52, source: "fd7a:115c:a1e0::9" });
  assert.deepEqual(parseProxyHeader(v2(0x20, 0x00, Buffer.alloc(0))), { length: 16 });
  assert.equal(parseProxyHeader(v4.subarray(0, 20)), undefined);
  assert.equal(parseProxyHeader(sig.subarray(0, 5)), undefined);
  assert.deepEqual(parseProxyHeader(Buffer.from("PROXY TCP4 100.64.0.9 100.64.0.1 40000 443\r\nGET")), {
    length: 44,
    source: "100.64.0.9",
  });
  assert.deepEqual(parseProxyHeader(Buffer.from("PROXY UNKNOWN\r\n")), { length: 15 });
  assert.equal(parseProxyHeader(Buffer.from("PROXY TCP4 1.2")), undefined);
  for (const bad of [Buffer.from([0x16, 3, 1, 0]), Buffer.from("GET / HTTP/1.1\r\n"), Buffer.from("PROXY TCP4 x\r\n")])
    assert.throws(() => parseProxyHeader(bad), Error, bad.toString("latin1"));
  assert.throws(() => parseProxyHeader(v2(0x31, 0x11, Buffer.alloc(12))), /version/);
  assert.throws(() => parseProxyHeader(Buffer.from(`PROXY TCP4 ${"1".repeat(120)}`)), /too long/);
});
