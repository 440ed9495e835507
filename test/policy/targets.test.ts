import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildNodeIndex,
  compileAllowlist,
  isTargetAllowed,
  type NodeRef,
  nodeAddress,
  resolveTargetHost,
} from "../../src/policy/targets.js";

const nodes: NodeRef[] = [
  { givenName: "db-1", name: "db-host", ipAddresses: ["fd7a:115c:a1e0::7", "100.64.0.7"], tags: ["tag:db"] },
  { givenName: "web-1", name: "web", ipAddresses: ["100.64.0.8"], tags: [] },
  { givenName: "web-2", name: "web", ipAddresses: ["100.64.0.9"], tags: [] },
  { givenName: "v6only", name: "v6only", ipAddresses: ["fd7a:115c:a1e0::10"], tags: [] },
  { givenName: "noip", name: "noip", ipAddresses: [], tags: [] },
];
const index = buildNodeIndex(nodes, "TS.Example.com.");

describe("resolveTargetHost", () => {
  const rows: { host: string; want: { kind: string; address: string; node: string | null } | null }[] = [
    { host: "db-1", want: { kind: "node", address: "100.64.0.7", node: "db-1" } },
    { host: "DB-1", want: { kind: "node", address: "100.64.0.7", node: "db-1" } },
    { host: "db-1.ts.example.com", want: { kind: "node", address: "100.64.0.7", node: "db-1" } },
    { host: "db-1.ts.example.com.", want: { kind: "node", address: "100.64.0.7", node: "db-1" } },
    { host: "db-host", want: { kind: "node", address: "100.64.0.7", node: "db-1" } },
    { host: "web", want: null }, // hostname shared by two nodes: ambiguous
    { host: "web-2", want: { kind: "node", address: "100.64.0.9", node: "web-2" } },
    { host: "v6only", want: { kind: "node", address: "fd7a:115c:a1e0::10", node: "v6only" } },
    { host: "noip", want: null },
    { host: "db-1.other.example.com", want: null },
    { host: "db-host.ts.example.com", want: null }, // FQDNs use the given name only
    { host: "a.b.ts.example.com", want: null },
    { host: "ghost", want: null },
    { host: "100.64.0.7", want: { kind: "ip", address: "100.64.0.7", node: "db-1" } },
    { host: "192.168.10.5", want: { kind: "ip", address: "192.168.10.5", node: null } },
    { host: "FD7A:115C:A1E0::7", want: { kind: "ip", address: "fd7a:115c:a1e0::7", node: "db-1" } },
    { host: "192.168.10.0/24", want: { kind: "cidr", address: "192.168.10.0/24", node: null } },
    { host: "192.168.10.1/24", want: null },
  ];
  for (const row of rows) {
    it(`${row.host} → ${row.want ? row.want.address : "unresolved"}`, () => {
      const r = resolveTargetHost(row.host, index);
      assert.deepEqual(r && { kind: r.kind, address: r.address, node: r.node?.givenName ?? null }, row.want);
    });
  }

  it("does not resolve FQDNs without a base domain", () => {
    assert.equal(resolveTargetHost("db-1.ts.example.com", buildNodeIndex(nodes)), null);
    assert.equal(resolveTargetHost("db-1", buildNodeIndex(nodes))?.address, "100.64.0.7");
  });
});

describe("nodeAddress", () => {
  it("prefers the IPv4, then the first IPv6", () => {
    assert.equal(nodeAddress(nodes[0]), "100.64.0.7");
    assert.equal(nodeAddress(nodes[3]), "fd7a:115c:a1e0::10");
    assert.equal(nodeAddress(nodes[4]), null);
  });
});

describe("isTargetAllowed", () => {
  const allow = compileAllowlist(["100.64.0.0/24", "192.168.10.0/24", "10.1.2.3", "tag:db", "not a cidr"]);
  const rows: [string, boolean][] = [
    ["web-1", true], // 100.64.0.8 in 100.64.0.0/24
    ["db-1", true], // in the CIDR and tagged
    ["v6only", false], // IPv6 outside every allowed prefix, no tag
    ["192.168.10.5", true],
    ["192.168.10.0/25", true],
    ["192.168.0.0/16", false], // wider than the allowed /24
    ["10.1.2.3", true], // a bare IP entry is its /32
    ["10.1.2.4", false],
    ["fd7a:115c:a1e0::7", true], // db-1's IPv6: the node carries tag:db
  ];
  for (const [host, want] of rows) {
    it(`${host} → ${want}`, () => {
      const r = resolveTargetHost(host, index);
      assert.ok(r);
      assert.equal(isTargetAllowed(r, allow), want);
    });
  }

  it("allows a tagged node outside every CIDR by its tag alone", () => {
    const tagOnly = compileAllowlist(["tag:db"]);
    const db = resolveTargetHost("db-1.ts.example.com.", index);
    const web = resolveTargetHost("web-1", index);
    assert.ok(db && web);
    assert.equal(isTargetAllowed(db, tagOnly), true);
    assert.equal(isTargetAllowed(web, tagOnly), false);
  });

  it("allows nothing with an empty allowlist", () => {
    const r = resolveTargetHost("db-1", index);
    assert.ok(r);
    assert.equal(isTargetAllowed(r, compileAllowlist([])), false);
  });
});

describe("buildNodeIndex", () => {
  it("is built once per node list and base domain (the view's snapshot is shared by every render within its TTL)", () => {
    assert.equal(buildNodeIndex(nodes, "TS.Example.com."), index);
    assert.notEqual(buildNodeIndex(nodes, "other.example"), index);
    assert.notEqual(buildNodeIndex([...nodes], "TS.Example.com."), index);
    // a new snapshot (another array) resolves from its own nodes
    const moved = nodes.map((n) => (n.givenName === "db-1" ? { ...n, ipAddresses: ["100.64.0.77"] } : n));
    assert.equal(resolveTargetHost("db-1", buildNodeIndex(moved, "TS.Example.com."))?.address, "100.64.0.77");
    assert.equal(resolveTargetHost("db-1", buildNodeIndex(nodes, "TS.Example.com."))?.address, "100.64.0.7");
  });
});
