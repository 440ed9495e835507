// Hostile and edge-case HTTP/1.1 requests for the agent's http pipe: the published desync classes (bare LF/CR,
// NUL, obs-fold, CL+TE, Transfer-Encoding variants, chunk-size tricks, trailers, method case, target forms,
// upgrades a backend declines, h2c) and their neighbours, plus well-formed traffic that must keep working.
// test/agent/http1.test.ts runs each through the framer split at every byte; test/agent/differential.test.ts
// sends each through a real agent to HAProxy and to a Go net/http echo backend.

export interface HostileCase {
  name: string;
  /** The client's bytes (latin1). */
  wire: string;
  /** reject: the agent answers 4xx/5xx or closes at the first bad byte; pass: everything is forwarded. */
  verdict: "pass" | "reject";
  /** Requests a backend must parse from this connection (those before the bad one, for rejects). */
  requests: number;
}

const H = "host: app.example\r\n";
/** HAProxy refuses a WebSocket upgrade without its key. */
const WS = "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n";
const GET = `GET / HTTP/1.1\r\n${H}`;
/** Never to reach a backend as a request of its own. */
const smuggled = "GET /admin HTTP/1.1\r\nhost: app.example\r\nx-forwarded-for: 10.0.0.1\r\n\r\n";
/** A second request that is served (rewritten), or raw bytes after an accepted upgrade. */
const second = "GET /second HTTP/1.1\r\nhost: app.example\r\nx-forwarded-for: 10.0.0.1\r\n\r\n";

const pass = (name: string, wire: string, requests = 1): HostileCase => ({ name, wire, verdict: "pass", requests });
const reject = (name: string, wire: string, requests = 0): HostileCase => ({
  name,
  wire,
  verdict: "reject",
  requests,
});

export const HOSTILE_CORPUS: HostileCase[] = [
  // Well-formed traffic and forged identity (forwarded with the agent's identity only)
  pass("plain GET", `${GET}\r\n`),
  pass("leading empty line", `\r\n${GET}\r\n`),
  pass(
    "pipelined length, chunked with extension and trailer, GET",
    `POST /1 HTTP/1.1\r\n${H}content-length: 4\r\n\r\nab\r\n` +
      `POST /2 HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n3;ext="a b";x=1\r\nxyz\r\n0\r\ntrailer-x: t\r\n\r\n` +
      `GET /3 HTTP/1.1\r\n${H}\r\n`,
    3,
  ),
  pass(
    "forged identity headers",
    `GET / HTTP/1.1\r\n${H}x-forwarded-for: 6.6.6.6\r\nX-Forwarded-Proto: http\r\nx-forwarded-host: evil\r\n` +
      "x-forwarded-port: 1\r\nforwarded: for=6.6.6.6;proto=http\r\nx-real-ip: 6.6.6.6\r\ntrue-client-ip: 6.6.6.6\r\n" +
      "x-client-ip: 6.6.6.6\r\nx-cluster-client-ip: 6.6.6.6\r\nX-FORWARDED-FOR: 7.7.7.7\r\n\r\n",
  ),
  pass("Connection names X-Forwarded-For", `${GET}connection: X-Forwarded-For, x-forwarded-proto\r\n\r\n`),
  pass(
    "Connection names Host and Content-Length",
    `POST / HTTP/1.1\r\n${H}content-length: 2\r\nconnection: host, content-length, keep-alive\r\n\r\nok`,
  ),
  pass(
    "Connection names a forwarded header on every request",
    `${GET}connection: keep-alive, x-forwarded-for\r\n\r\n${GET}connection: x-real-ip\r\nx-real-ip: 1.2.3.4\r\n\r\n`,
    2,
  ),
  pass(
    "trailer X-Forwarded-For dropped",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1\r\na\r\n0\r\nx-forwarded-for: 6.6.6.6\r\nforwarded: for=6.6.6.6\r\n\r\n`,
  ),
  pass(
    "Transfer-Encoding Chunked (case)",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: Chunked\r\n\r\n1\r\na\r\n0\r\n\r\n`,
  ),
  pass(
    "Transfer-Encoding with HTAB before chunked",
    `POST / HTTP/1.1\r\n${H}transfer-encoding:\tchunked\r\n\r\n1\r\na\r\n0\r\n\r\n`,
  ),
  pass("lower-case method get", `get / HTTP/1.1\r\n${H}\r\n`),
  pass(
    "lower-case method connect is an ordinary method",
    `connect / HTTP/1.1\r\n${H}\r\n${GET}x-forwarded-for: 6.6.6.6\r\n\r\n`,
    2,
  ),
  pass("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n"),
  pass(
    "Expect: 100-continue with a body",
    `POST / HTTP/1.1\r\n${H}expect: 100-continue\r\ncontent-length: 3\r\n\r\nabc`,
  ),
  pass(
    "Upgrade the backend declines, then a request with forged identity",
    `GET /ws HTTP/1.1\r\n${H}connection: Upgrade\r\nupgrade: websocket\r\n${WS}\r\n${second}`,
    2,
  ),
  pass(
    "Upgrade without Connection: upgrade",
    `GET /upgrade-ok HTTP/1.1\r\n${H}upgrade: websocket\r\n${WS}\r\n${second}`,
    2,
  ),
  pass(
    "h2c upgrade is not forwarded",
    `GET /upgrade-ok HTTP/1.1\r\n${H}connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n${second}`,
    2,
  ),
  pass(
    "Upgrade the backend accepts: later bytes are raw",
    `GET /upgrade-ok HTTP/1.1\r\n${H}connection: Upgrade\r\nupgrade: websocket\r\n${WS}\r\n${second}`,
    1,
  ),
  pass(
    "HEAD pipelined before an accepted upgrade",
    `HEAD / HTTP/1.1\r\n${H}\r\nGET /upgrade-ok HTTP/1.1\r\n${H}connection: upgrade\r\nupgrade: websocket\r\n${WS}\r\n${second}`,
    2,
  ),

  // Bare LF / CR / NUL in every position
  reject("bare LF desync in a value", `${GET}x-a: y\n\n${smuggled.replaceAll("\r\n", "\n")}`),
  reject("bare LF ends the request line", `GET / HTTP/1.1\n${H}\r\n`),
  reject("bare LF inside the request line", `GET /\nx HTTP/1.1\r\n${H}\r\n`),
  reject("bare LF between fields", `${GET}x-a: 1\nx-forwarded-for: 1.1.1.1\r\n\r\n`),
  reject("bare LF ends the head", `${GET}\n${smuggled}`),
  reject("bare LF in a field name", `${GET}x\n-a: 1\r\n\r\n`),
  reject("bare CR in a value", `${GET}x-a: y\rx-forwarded-for: 1.1.1.1\r\n\r\n`),
  reject("bare CR in the request line", `GET /\r HTTP/1.1\r\n${H}\r\n`),
  reject("bare CR ends the head", `${GET}\r\r\n${smuggled}`),
  reject("NUL in a value", `${GET}x-a: a\0b\r\n\r\n`),
  reject("NUL in a name", `${GET}x-\0a: b\r\n\r\n`),
  reject("NUL in the target", `GET /\0 HTTP/1.1\r\n${H}\r\n`),
  reject("vertical tab in a value", `${GET}x-a: a\x0bb\r\n\r\n`),
  reject("DEL in a value", `${GET}x-a: a\x7fb\r\n\r\n`),
  reject("obs-fold", `${GET}x-a: a\r\n x-forwarded-for: 1.1.1.1\r\n\r\n`),
  reject("obs-fold with HTAB", `${GET}x-a: a\r\n\tb\r\n\r\n`),
  reject("space before the colon", `GET / HTTP/1.1\r\nhost : app.example\r\n\r\n`),
  reject("empty field name", `${GET}: x\r\n\r\n`),

  // Content-Length and Transfer-Encoding (RFC 9112 §6)
  reject("CL and TE", `POST / HTTP/1.1\r\n${H}content-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`),
  reject("TE and CL", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\ncontent-length: 4\r\n\r\n0\r\n\r\n`),
  reject("TE chunked, identity", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked, identity\r\n\r\n0\r\n\r\n`),
  reject("TE identity, chunked", `POST / HTTP/1.1\r\n${H}transfer-encoding: identity, chunked\r\n\r\n0\r\n\r\n`),
  reject("TE gzip, chunked", `POST / HTTP/1.1\r\n${H}transfer-encoding: gzip, chunked\r\n\r\n0\r\n\r\n`),
  reject(
    "TE twice",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
  ),
  reject("TE xchunked", `POST / HTTP/1.1\r\n${H}transfer-encoding: xchunked\r\n\r\n0\r\n\r\n`),
  reject("TE chunked with vertical tab", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\x0b\r\n\r\n0\r\n\r\n`),
  reject("TE in HTTP/1.0", `POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`),
  reject("duplicate equal CL", `POST / HTTP/1.1\r\n${H}content-length: 1\r\ncontent-length: 1\r\n\r\na`),
  reject("CL list", `POST / HTTP/1.1\r\n${H}content-length: 1, 1\r\n\r\na`),
  reject("negative CL", `POST / HTTP/1.1\r\n${H}content-length: -1\r\n\r\n`),
  reject("plus CL", `POST / HTTP/1.1\r\n${H}content-length: +1\r\n\r\na`),
  reject("hex CL", `POST / HTTP/1.1\r\n${H}content-length: 0x1\r\n\r\na`),
  reject("huge CL", `POST / HTTP/1.1\r\n${H}content-length: 9999999999999999999\r\n\r\n`),
  reject("chunk size negative", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n-1\r\na\r\n0\r\n\r\n`),
  reject("chunk size 0x", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n0x1\r\na\r\n0\r\n\r\n`),
  reject(
    "chunk size huge",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1${"0".repeat(16)}\r\na\r\n0\r\n\r\n`,
  ),
  reject(
    "chunk size with trailing space",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1 \r\na\r\n0\r\n\r\n`,
  ),
  reject("chunk size bare LF", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1\na\r\n0\r\n\r\n`),
  reject(
    "chunk extension bare CR",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1;a\rb\r\na\r\n0\r\n\r\n`,
  ),
  reject(
    "chunk extension unterminated quote",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1;a="b\r\na\r\n0\r\n\r\n`,
  ),
  reject(
    "chunk extension too long",
    `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1;a=${"b".repeat(5000)}\r\na\r\n0\r\n\r\n`,
  ),
  reject("chunk data too long", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n`),
  reject("chunk data ends in bare LF", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n1\r\na\n0\r\n\r\n`),
  reject("trailer with bare CR", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n0\r\nx-t: a\rb\r\n\r\n`),
  reject("trailer with bare LF", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n0\r\nx-t: a\n${smuggled}`),
  reject("trailer obs-fold", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n0\r\nx-t: a\r\n b\r\n\r\n`),
  reject("trailer NUL", `POST / HTTP/1.1\r\n${H}transfer-encoding: chunked\r\n\r\n0\r\nx-t: \0\r\n\r\n`),

  // Methods, targets, versions, Host
  reject("CONNECT", `CONNECT app.example:443 HTTP/1.1\r\n${H}\r\n`),
  reject("method with @", `G@T / HTTP/1.1\r\n${H}\r\n`),
  reject("HTAB after the method", `GET\t/ HTTP/1.1\r\n${H}\r\n`),
  reject("two spaces after the method", `GET  / HTTP/1.1\r\n${H}\r\n`),
  reject("absolute-form target", `GET http://evil.example/ HTTP/1.1\r\n${H}\r\n`),
  reject("authority-form target", `GET evil.example:80 HTTP/1.1\r\n${H}\r\n`),
  reject("fragment in the target", `GET /a#b HTTP/1.1\r\n${H}\r\n`),
  reject("non-ASCII in the target", `GET /\xe9 HTTP/1.1\r\n${H}\r\n`),
  reject("HTTP/1.2", `GET / HTTP/1.2\r\n${H}\r\n`),
  reject("HTTP/2.0", `GET / HTTP/2.0\r\n${H}\r\n`),
  reject("lower-case version", `GET / http/1.1\r\n${H}\r\n`),
  reject("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n"),
  reject("two Hosts", `${GET}host: evil.example\r\n\r\n`),
  reject("Host with userinfo", "GET / HTTP/1.1\r\nhost: a@evil.example\r\n\r\n"),
  reject("Host with a space", "GET / HTTP/1.1\r\nhost: a b\r\n\r\n"),

  // A good request, then a bad one on the same connection: the first is served, the second never arrives
  reject("pipelined, second with bare LF", `${GET}\r\n${GET}x-a: y\n\n${smuggled}`, 1),
  reject(
    "pipelined, second with CL and TE",
    `${GET}\r\nPOST / HTTP/1.1\r\n${H}content-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
    1,
  ),
];
