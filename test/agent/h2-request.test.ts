// The request side of HTTP/2 (src/agent/h2-request.ts), pure: which header blocks are refused and how, what
// the backend gets (identity headers set, spoofed ones dropped), trailers, and the response fields an
// HTTP/1.1 backend's answer becomes.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  forwardedTrailers,
  H2Refusal,
  h2ResponseFields,
  headerObject,
  readH2Request,
} from "../../src/agent/h2-request.js";

const NAME = "shop.ts.example.com";
const ctx = { clientIp: "100.64.0.7", servesName: (host: string) => host === NAME };
const base = (path = "/", extra: string[] = [], authority = NAME) => [
  ":method",
  "GET",
  ":scheme",
  "https",
  ":authority",
  authority,
  ":path",
  path,
  ...extra,
];

function refusal(raw: string[]): [H2Refusal["status"], string] {
  try {
    readH2Request(raw, ctx);
  } catch (err) {
    assert.ok(err instanceof H2Refusal);
    return [err.status, err.message];
  }
  assert.fail(`not refused: ${raw.join(" ")}`);
}

test("a good request: fields kept in order, identity headers set last, spoofed ones dropped", () => {
  const got = readH2Request(
    base("/a?b=1", [
      "x-forwarded-for",
      "10.6.6.6",
      "forwarded",
      "for=10.6.6.6",
      "x-real-ip",
      "10.6.6.6",
      "x-forwarded-host",
      "evil",
      "http2-settings",
      "AAA",
      "accept",
      "*/*",
      "cookie",
      "a=1",
      "cookie",
      "b=2",
      "te",
      "trailers",
      "content-length",
      "5",
    ]),
    ctx,
  );
  assert.deepEqual(got, {
    method: "GET",
    path: "/a?b=1",
    authority: NAME,
    contentLength: 5,
    fields: [
      ["accept", "*/*"],
      ["cookie", "a=1"],
      ["cookie", "b=2"],
      ["te", "trailers"],
      ["content-length", "5"],
      ["x-forwarded-for", "100.64.0.7"],
      ["x-forwarded-proto", "https"],
      ["x-forwarded-host", NAME],
    ],
  });
  // Cookie crumbs are joined for HTTP/1.1 (RFC 9113 §8.2.3); other repeats stay separate fields.
  assert.deepEqual(headerObject(got.fields).cookie, "a=1; b=2");
});

test("each refusal, with its answer: malformed (RST_STREAM PROTOCOL_ERROR), 400, 421 or 501", () => {
  const rows: [string, string[], H2Refusal["status"], string][] = [
    ["connection", base("/", ["connection", "close"]), "malformed", "connection-specific header connection"],
    ["keep-alive", base("/", ["keep-alive", "5"]), "malformed", "connection-specific header keep-alive"],
    [
      "proxy-connection",
      base("/", ["proxy-connection", "x"]),
      "malformed",
      "connection-specific header proxy-connection",
    ],
    [
      "transfer-encoding",
      base("/", ["transfer-encoding", "chunked"]),
      "malformed",
      "connection-specific header transfer-encoding",
    ],
    ["upgrade", base("/", ["upgrade", "websocket"]), "malformed", "connection-specific header upgrade"],
    ["te other than trailers", base("/", ["te", "gzip"]), "malformed", "te other than trailers"],
    ["upper-case name", base("/", ["X-A", "1"]), "malformed", "bad header name"],
    ["name with a space", base("/", ["x a", "1"]), "malformed", "bad header name"],
    ["duplicate :path", [...base("/"), ":path", "/b"], "malformed", "duplicate :path"],
    ["unknown pseudo-header", [...base("/"), ":protocol", "websocket"], "malformed", "pseudo-header :protocol"],
    ["control in value", base("/", ["x-a", "a\x01b"]), 400, "control character in header value"],
    ["two hosts", base("/", ["host", NAME, "host", NAME]), 400, "duplicate host"],
    ["host differs from :authority", base("/", ["host", "other"]), 400, ":authority and host differ"],
    ["content-length list", base("/", ["content-length", "1,1"]), 400, "bad content-length"],
    ["two content-lengths", base("/", ["content-length", "1", "content-length", "1"]), 400, "bad content-length"],
    [
      "scheme http",
      [":method", "GET", ":scheme", "http", ":authority", NAME, ":path", "/"],
      400,
      ":scheme is not https",
    ],
    ["absolute-form", base("http://x/"), 400, "request target not in origin-form"],
    ["asterisk with GET", base("*"), 400, "request target not in origin-form"],
    ["fragment", base("/a#b"), 400, "request target not in origin-form"],
    ["space in target", base("/a b"), 400, "request target not in origin-form"],
    ["bad authority", base("/", [], "a b"), 400, "bad :authority"],
    ["no authority", [":method", "GET", ":scheme", "https", ":path", "/"], 400, "no :authority"],
    ["another expose's name", base("/", [], "other.ts.example.com"), 421, "authority is not a name of this connection"],
    ["CONNECT", [":method", "CONNECT", ":authority", "10.0.0.1:22"], 501, "CONNECT is not supported"],
  ];
  for (const [name, raw, status, message] of rows) assert.deepEqual(refusal(raw), [status, message], name);
});

test(":authority: a port, upper case, a trailing dot and an IP literal are read as the name they carry", () => {
  for (const authority of [`${NAME}:443`, NAME.toUpperCase(), `${NAME}.`]) {
    assert.equal(readH2Request(base("/", [], authority), ctx).authority, authority);
  }
  const ipCtx = { clientIp: undefined, servesName: (h: string) => h === "[fd7a:115c:a1e0::1]" };
  const got = readH2Request(base("/", [], "[fd7a:115c:a1e0::1]:443"), ipCtx);
  // Without a client address (never in practice) no X-Forwarded-For is invented.
  assert.deepEqual(
    got.fields.map(([n]) => n),
    ["x-forwarded-proto", "x-forwarded-host"],
  );
  // Host alone (no :authority) is the authority.
  const hostOnly = readH2Request([":method", "GET", ":scheme", "https", ":path", "/", "host", NAME], ctx);
  assert.equal(hostOnly.authority, NAME);
  assert.ok(!hostOnly.fields.some(([n]) => n === "host"));
  // OPTIONS * is the one non-path target.
  const options = base("*").map((v) => (v === "GET" ? "OPTIONS" : v));
  assert.equal(readH2Request(options, ctx).path, "*");
});

test("request trailers: identity, framing and routing fields dropped, the rest kept", () => {
  assert.deepEqual(
    forwardedTrailers([
      "grpc-status",
      "0",
      "x-forwarded-for",
      "1.2.3.4",
      "content-length",
      "9",
      "host",
      "x",
      "x-sum",
      "abc",
    ]),
    [
      ["grpc-status", "0"],
      ["x-sum", "abc"],
    ],
  );
});

test("an HTTP/1.1 answer for an h2 client: connection-specific fields and those Connection names dropped", () => {
  assert.deepEqual(
    h2ResponseFields([
      "Content-Type",
      "text/plain",
      "Connection",
      "keep-alive, X-Private",
      "Keep-Alive",
      "timeout=5",
      "Transfer-Encoding",
      "chunked",
      "X-Private",
      "secret",
      "Upgrade",
      "h2c",
      "Set-Cookie",
      "a=1",
      "Set-Cookie",
      "b=2",
    ]),
    [
      ["content-type", "text/plain"],
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ],
  );
  assert.deepEqual(
    headerObject([
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ]),
    { "set-cookie": ["a=1", "b=2"] },
  );
});
