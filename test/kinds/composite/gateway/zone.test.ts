/**
 * The derived zone: which egress targets become A records, and the RFC 1035 file, checked with
 * named-checkzone (Debian bind9utils, installed by scripts/ci-deps.sh).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { derivedZoneRecords, renderZoneFile, zoneSerial } from "../../../../src/kinds/composite/gateway/zone.js";
import { magicDNSName, type ZoneRecord } from "../../../../src/kinds/shared/zone-owners.js";
import { execTool } from "../../../helpers/tools.js";

const ZONE = "ts.example.com";

function egress(
  name: string,
  targets: { name: string; host: string }[],
  opts: { ns?: string; tailnet?: string; created?: string; uid?: string } = {},
): K8sObject {
  return {
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: {
      name,
      namespace: opts.ns ?? "shop",
      uid: opts.uid ?? `uid-${name}`,
      creationTimestamp: opts.created ?? "2026-11-01T00:00:00Z",
    },
    spec: {
      tailnetRef: { name: opts.tailnet ?? "home" },
      targets: targets.map((t) => ({ ...t, ports: [{ port: 5432 }] })),
    },
  };
}

function service(name: string, ip: string, opts: { ns?: string; label?: boolean; owner?: string } = {}): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name,
      namespace: opts.ns ?? "shop",
      labels: opts.label === false ? {} : { "tailnet.internal/egress-target": "true" },
      ...(opts.owner
        ? {
            ownerReferences: [
              {
                apiVersion: "tailnet.internal/v1alpha1",
                kind: "TailnetEgress",
                name: "x",
                uid: opts.owner,
                controller: true,
              },
            ],
          }
        : {}),
    },
    spec: { clusterIP: ip },
  };
}

function namedCheckzone(zone: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "zone-"));
  try {
    const file = join(dir, "zone.db");
    writeFileSync(file, text);
    return execTool("named-checkzone", [zone, file], { encoding: "utf8" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("derived zone records", () => {
  it("MagicDNS names only, one label under the base domain", () => {
    assert.equal(magicDNSName("db-1.ts.example.com", ZONE), "db-1.ts.example.com");
    assert.equal(magicDNSName("DB-1.TS.example.com.", ZONE), "db-1.ts.example.com");
    assert.equal(magicDNSName("db-1", ZONE), undefined);
    assert.equal(magicDNSName("100.64.0.7", ZONE), undefined);
    assert.equal(magicDNSName("a.b.ts.example.com", ZONE), undefined);
    assert.equal(magicDNSName("db-1.other.com", ZONE), undefined);
    assert.equal(magicDNSName("db-1.ts.example.com", undefined), undefined);
  });

  it("egress targets of the same Tailnet with their egress Service's ClusterIP", () => {
    const records = derivedZoneRecords({
      tailnet: "home",
      zone: ZONE,
      baseDomain: ZONE,
      egresses: [
        egress("db", [
          { name: "postgres", host: "db-1.ts.example.com" },
          { name: "byname", host: "db-2" }, // a node name, not a MagicDNS name
          { name: "byip", host: "100.64.0.9" },
          { name: "nosvc", host: "db-3.ts.example.com" }, // no Service yet
          { name: "foreign", host: "db-4.ts.example.com" }, // Service not labelled as an egress target
          { name: "headless", host: "db-5.ts.example.com" },
        ]),
        egress("cache", [{ name: "redis", host: "cache-1.ts.example.com." }], { ns: "web" }),
        egress("other", [{ name: "x", host: "x.ts.example.com" }], { tailnet: "work" }),
      ],
      services: [
        service("postgres", "10.96.1.1", { owner: "uid-db" }),
        service("byname", "10.96.1.2"),
        service("byip", "10.96.1.3"),
        service("foreign", "10.96.1.4", { label: false }),
        service("headless", "None"),
        service("redis", "10.96.2.1", { ns: "web", owner: "uid-cache" }),
        service("x", "10.96.3.1"),
        service("redis", "10.96.9.9"), // same name, wrong namespace
      ],
    });
    assert.deepEqual(records, [
      { fqdn: "cache-1.ts.example.com", ipv4: "10.96.2.1", egress: "web/cache", target: "redis" },
      { fqdn: "db-1.ts.example.com", ipv4: "10.96.1.1", egress: "shop/db", target: "postgres" },
    ]);
  });

  it("a Service owned by another object is not the target's; the oldest egress keeps a shared name", () => {
    const records = derivedZoneRecords({
      tailnet: "home",
      zone: ZONE,
      baseDomain: ZONE,
      egresses: [
        egress("new", [{ name: "pg", host: "db-1.ts.example.com" }], { ns: "b", created: "2026-11-20T00:00:00Z" }),
        egress("old", [{ name: "pg", host: "db-1.ts.example.com" }], { ns: "a", created: "2026-11-02T00:00:00Z" }),
        egress("stolen", [{ name: "pg", host: "db-9.ts.example.com" }], { ns: "c" }),
      ],
      services: [
        service("pg", "10.96.0.20", { ns: "b", owner: "uid-new" }),
        service("pg", "10.96.0.10", { ns: "a", owner: "uid-old" }),
        service("pg", "10.96.0.30", { ns: "c", owner: "someone-else" }),
      ],
    });
    assert.deepEqual(records, [{ fqdn: "db-1.ts.example.com", ipv4: "10.96.0.10", egress: "a/old", target: "pg" }]);
  });

  it("names outside the served zone are left out", () => {
    const records = derivedZoneRecords({
      tailnet: "home",
      zone: "cluster.ts.example.com",
      baseDomain: ZONE,
      egresses: [egress("db", [{ name: "postgres", host: "db-1.ts.example.com" }])],
      services: [service("postgres", "10.96.1.1")],
    });
    assert.deepEqual(records, []);
  });
});

describe("zone file", () => {
  const records: ZoneRecord[] = [
    { fqdn: "cache-1.ts.example.com", ipv4: "10.96.2.1", egress: "web/cache", target: "redis" },
    { fqdn: "db-1.ts.example.com", ipv4: "10.96.1.1", egress: "shop/db", target: "postgres" },
  ];
  const input = { zone: ZONE, nameServer: "gw-dns.infra.svc.cluster.local", owner: "infra/gw", records };

  it("renders a deterministic RFC 1035 file that named-checkzone accepts", () => {
    const text = renderZoneFile(input);
    assert.equal(renderZoneFile(input), text);
    const body = [
      "@  IN  NS  gw-dns.infra.svc.cluster.local.",
      "cache-1  IN  A  10.96.2.1  ; web/cache target redis",
      "db-1     IN  A  10.96.1.1  ; shop/db target postgres",
    ].join("\n");
    const serial = zoneSerial(`${ZONE}\n${body}`);
    assert.equal(
      text,
      [
        "; Derived zone of TailnetGateway infra/gw, rendered by tailnet-operator. Do not edit:",
        "; every change is overwritten. Serial = hash of the records, not a date.",
        "$ORIGIN ts.example.com.",
        "$TTL 30",
        `@  IN  SOA  gw-dns.infra.svc.cluster.local. hostmaster.ts.example.com. ${serial} 3600 600 86400 30`,
        body,
        "",
      ].join("\n"),
    );
    const out = namedCheckzone(ZONE, text);
    assert.match(out, new RegExp(`loaded serial ${serial}\\nOK`));
  });

  it("an empty zone is valid too", () => {
    const text = renderZoneFile({ ...input, records: [] });
    assert.match(namedCheckzone(ZONE, text), /OK/);
  });

  it("the serial follows the content, not the clock", () => {
    const a = renderZoneFile(input);
    const b = renderZoneFile({ ...input, records: records.slice(0, 1) });
    const serialOf = (t: string) => Number(/SOA\s+\S+\s+\S+\s+(\d+)\s/.exec(t)?.[1]);
    assert.notEqual(serialOf(a), serialOf(b));
    assert.ok(serialOf(a) >= 1 && serialOf(a) < 2 ** 32);
    assert.equal(serialOf(renderZoneFile(input)), serialOf(a));
  });

  it("a record at the zone apex is written as @", () => {
    const text = renderZoneFile({ ...input, records: [{ fqdn: ZONE, ipv4: "10.96.0.1", egress: "a/b", target: "c" }] });
    assert.match(text, /\n@ {2}IN {2}A {2}10\.96\.0\.1 /);
    assert.match(namedCheckzone(ZONE, text), /OK/);
  });
});
