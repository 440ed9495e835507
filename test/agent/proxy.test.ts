// Pure pieces of the http path: header rewriting and SNI selection.
import assert from "node:assert/strict";
import { test } from "node:test";
import { normalizeName, selectByServerName } from "../../src/agent/certs.js";
import { forwardRequestHeaders, forwardResponseHeaders } from "../../src/agent/proxy.js";

test("request headers: hop-by-hop and Connection-named headers go, X-Forwarded-* are set, Host stays", () => {
  const out = forwardRequestHeaders(
    {
      host: "dash.ts.example.com",
      connection: "keep-alive, X-Trace-Hop",
      "keep-alive": "timeout=5",
      "x-trace-hop": "1",
      te: "trailers",
      "proxy-authorization": "Basic c2VjcmV0",
      expect: "100-continue",
      "x-forwarded-proto": "http",
      "x-forwarded-host": "spoofed.example.com",
      "content-length": "3",
      accept: "text/html",
    },
    { clientIp: "100.64.0.20", proto: "https" },
  );
  assert.deepEqual(out, {
    host: "dash.ts.example.com",
    "content-length": "3",
    accept: "text/html",
    "x-forwarded-for": "100.64.0.20",
    "x-forwarded-proto": "https",
    "x-forwarded-host": "dash.ts.example.com",
  });
});

test("request headers: X-Forwarded-For is extended; a chunked body keeps chunked framing; upgrades keep Upgrade", () => {
  assert.deepEqual(
    forwardRequestHeaders(
      { host: "a", "x-forwarded-for": "10.0.0.1, 10.0.0.2", "transfer-encoding": "chunked" },
      { clientIp: "127.0.0.1", proto: "https" },
    ),
    {
      host: "a",
      "x-forwarded-for": "10.0.0.1, 10.0.0.2, 127.0.0.1",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "a",
      "transfer-encoding": "chunked",
    },
  );
  assert.deepEqual(
    forwardRequestHeaders({ host: "a", connection: "Upgrade", upgrade: "websocket" }, { proto: "https" }, true),
    { host: "a", "x-forwarded-proto": "https", "x-forwarded-host": "a", connection: "Upgrade", upgrade: "websocket" },
  );
});

test("response headers: framing and hop-by-hop headers are the agent's own; the rest, cookies included, pass", () => {
  assert.deepEqual(
    forwardResponseHeaders({
      "content-type": "text/html",
      "set-cookie": ["a=1", "b=2"],
      connection: "keep-alive",
      "keep-alive": "timeout=5",
      "transfer-encoding": "chunked",
    }),
    { "content-type": "text/html", "set-cookie": ["a=1", "b=2"] },
  );
});

test("SNI selection: exact name (any case, trailing dot), configured wildcard, else the first expose", () => {
  const names = new Map([
    ["dash.ts.example.com", "web"],
    ["grafana-eu.ts.example.com", "web"],
    ["*.apps.example.com", "apps"],
  ]);
  const rows: { serverName: string | undefined; want: string }[] = [
    { serverName: "dash.ts.example.com", want: "web" },
    { serverName: "GRAFANA-EU.ts.example.com.", want: "web" },
    { serverName: "one.apps.example.com", want: "apps" },
    { serverName: "two.levels.apps.example.com", want: "default" },
    { serverName: "unknown.example.com", want: "default" },
    { serverName: undefined, want: "default" },
  ];
  for (const row of rows)
    assert.equal(selectByServerName(names, row.serverName, "default"), row.want, String(row.serverName));
  assert.equal(normalizeName("A.B."), "a.b");
});
