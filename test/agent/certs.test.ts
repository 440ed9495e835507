// SNI selection of the http path (the header rewriting is in pipe.test.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { normalizeName, selectByServerName } from "../../src/agent/certs.js";

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
