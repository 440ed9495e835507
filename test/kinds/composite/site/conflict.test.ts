import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { isOlder } from "../../../../src/k8s/age.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { type SiteConflict, siteConflict, siteConflicts } from "../../../../src/kinds/composite/site/conflict.js";
import { site } from "./fixtures.js";

const RESERVED = ["10.96.0.0/12", "10.244.0.0/16", "fd00:10:96::/112"];

describe("siteConflict", () => {
  const home = site("home", { prefixes: ["192.168.10.0/24"], created: "2026-11-01T00:00:00Z" });
  const rows: { name: string; me: K8sObject; others?: K8sObject[]; reserved?: string[]; want: SiteConflict }[] = [
    {
      name: "a prefix inside a reserved network (nested, IPv4)",
      me: site("lab", { prefixes: ["192.168.20.0/24", "10.96.5.0/24"] }),
      want: {
        blocked: true,
        reason: "OverlapsReserved",
        message: "prefix 10.96.5.0/24 of TailnetSite net/lab overlaps reserved network 10.96.0.0/12 of Tailnet home",
      },
    },
    {
      name: "a prefix containing a reserved network",
      me: site("lab", { prefixes: ["10.0.0.0/8"] }),
      want: {
        blocked: true,
        reason: "OverlapsReserved",
        message: "prefix 10.0.0.0/8 of TailnetSite net/lab overlaps reserved network 10.96.0.0/12 of Tailnet home",
      },
    },
    {
      name: "an IPv6 prefix inside a reserved IPv6 network",
      me: site("lab6", { prefixes: ["fd00:10:96::100/120"] }),
      want: {
        blocked: true,
        reason: "OverlapsReserved",
        message:
          "prefix fd00:10:96::100/120 of TailnetSite net/lab6 overlaps reserved network fd00:10:96::/112 of Tailnet home",
      },
    },
    {
      name: "reserved networks win over an older site",
      me: site("lab", { prefixes: ["10.244.1.0/24"], created: "2026-11-02T00:00:00Z" }),
      others: [site("old", { prefixes: ["10.244.0.0/16"] })],
      want: {
        blocked: true,
        reason: "OverlapsReserved",
        message: "prefix 10.244.1.0/24 of TailnetSite net/lab overlaps reserved network 10.244.0.0/16 of Tailnet home",
      },
    },
    {
      name: "the newer of two sites with the same prefix",
      me: site("lab", { prefixes: ["192.168.10.0/24"], created: "2026-11-02T00:00:00Z" }),
      others: [home],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 192.168.10.0/24 of TailnetSite net/lab overlaps prefix 192.168.10.0/24 of the older TailnetSite net/home",
      },
    },
    {
      name: "the older of two sites is untouched",
      me: home,
      others: [site("lab", { prefixes: ["192.168.10.0/24"], created: "2026-11-02T00:00:00Z" })],
      want: { blocked: false },
    },
    {
      name: "a newer site nested inside an older one",
      me: site("lab", { prefixes: ["192.168.10.128/25"], created: "2026-11-02T00:00:00Z" }),
      others: [home],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 192.168.10.128/25 of TailnetSite net/lab overlaps prefix 192.168.10.0/24 of the older TailnetSite net/home",
      },
    },
    {
      name: "a newer site containing an older one",
      me: site("lab", { prefixes: ["192.168.0.0/16"], created: "2026-11-02T00:00:00Z" }),
      others: [home],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 192.168.0.0/16 of TailnetSite net/lab overlaps prefix 192.168.10.0/24 of the older TailnetSite net/home",
      },
    },
    {
      name: "IPv6 sites, nested, spelled differently",
      me: site("v6b", { prefixes: ["2001:DB8:0:1::/64"], created: "2026-11-02T00:00:00Z" }),
      others: [site("v6a", { prefixes: ["2001:db8::/48"] })],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 2001:DB8:0:1::/64 of TailnetSite net/v6b overlaps prefix 2001:db8::/48 of the older TailnetSite net/v6a",
      },
    },
    {
      name: "IPv4 never overlaps IPv6 (not even ::ffff:0:0/96)",
      me: site("v6", { prefixes: ["::ffff:0:0/96", "::/0"], created: "2026-11-02T00:00:00Z" }),
      others: [home],
      reserved: [],
      want: { blocked: false },
    },
    {
      name: "an exit-node site claims no network: no reserved network or site conflicts with it",
      me: site("exit", { prefixes: ["0.0.0.0/0", "::/0"], created: "2026-11-02T00:00:00Z" }),
      others: [home],
      reserved: ["10.96.0.0/12"],
      want: { blocked: false },
    },
    {
      name: "nor does it block a newer subnet site",
      me: site("lab", { prefixes: ["192.168.20.0/24"], created: "2026-11-02T00:00:00Z" }),
      others: [site("exit", { prefixes: ["0.0.0.0/0", "::/0"] })],
      want: { blocked: false },
    },
    {
      name: "a reserved 0.0.0.0/0 still reserves every IPv4 network",
      me: home,
      others: [],
      reserved: ["0.0.0.0/0"],
      want: {
        blocked: true,
        reason: "OverlapsReserved",
        message: "prefix 192.168.10.0/24 of TailnetSite net/home overlaps reserved network 0.0.0.0/0 of Tailnet home",
      },
    },
    {
      name: "same creationTimestamp: namespace/name decides",
      me: site("b", { namespace: "x", prefixes: ["192.168.10.0/24"] }),
      others: [site("a", { namespace: "x", prefixes: ["192.168.10.0/24"] })],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 192.168.10.0/24 of TailnetSite x/b overlaps prefix 192.168.10.0/24 of the older TailnetSite x/a",
      },
    },
    {
      name: "the oldest overlapping site is named",
      me: site("c", { prefixes: ["192.168.0.0/16"], created: "2026-11-03T00:00:00Z" }),
      others: [
        site("b", { prefixes: ["192.168.20.0/24"], created: "2026-11-02T00:00:00Z" }),
        site("a", { prefixes: ["192.168.30.0/24"], created: "2026-11-01T00:00:00Z" }),
      ],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 192.168.0.0/16 of TailnetSite net/c overlaps prefix 192.168.30.0/24 of the older TailnetSite net/a",
      },
    },
    {
      name: "an older site that is itself blocked still blocks",
      me: site("c", { prefixes: ["192.168.10.0/25"], created: "2026-11-03T00:00:00Z" }),
      others: [site("b", { prefixes: ["192.168.10.0/24", "10.96.0.0/24"], created: "2026-11-02T00:00:00Z" })],
      want: {
        blocked: true,
        reason: "OverlapsSite",
        message:
          "prefix 192.168.10.0/25 of TailnetSite net/c overlaps prefix 192.168.10.0/24 of the older TailnetSite net/b",
      },
    },
    {
      name: "an older site being deleted no longer blocks",
      me: site("lab", { prefixes: ["192.168.10.0/24"], created: "2026-11-02T00:00:00Z" }),
      others: [site("home", { deleting: true })],
      want: { blocked: false },
    },
    {
      name: "a site of another Tailnet does not block",
      me: site("lab", { prefixes: ["192.168.10.0/24"], created: "2026-11-02T00:00:00Z" }),
      others: [site("home", { tailnet: "work" })],
      want: { blocked: false },
    },
    {
      name: "adjacent prefixes do not overlap",
      me: site("lab", { prefixes: ["192.168.11.0/24", "10.95.255.0/24"], created: "2026-11-02T00:00:00Z" }),
      others: [home],
      want: { blocked: false },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const all = [row.me, ...(row.others ?? [])];
      assert.deepEqual(siteConflict(row.me, all, row.reserved ?? RESERVED), row.want);
      const batch = siteConflicts("home", all, row.reserved ?? RESERVED);
      assert.deepEqual(batch.get(`${row.me.metadata.namespace}/${row.me.metadata.name}`), row.want);
    });
  }

  it("isOlder is a strict order: exactly one of two sites is older", () => {
    const a = site("a", { created: "2026-11-01T00:00:00Z" });
    const b = site("b", { created: "2026-11-01T00:00:00Z" });
    const c = site("c", { created: "2026-10-01T00:00:00Z" });
    assert.equal(isOlder(a, b), true);
    assert.equal(isOlder(b, a), false);
    assert.equal(isOlder(c, a), true);
    assert.equal(isOlder(a, a), false);
  });
});

/** The overlap oracle, with ipaddr.js alone: one prefix's network address lies in the other. */
/** Site prefixes overlapping by ipaddr.js; a default route claims no network (exit-node sites). */
function oracleOverlap(a: string, b: string): boolean {
  const [x, xb] = ipaddr.parseCIDR(a);
  const [y, yb] = ipaddr.parseCIDR(b);
  if (xb === 0 || yb === 0) return false;
  if (x.kind() !== y.kind()) return false;
  return xb <= yb ? y.match(x, xb) : x.match(y, yb);
}

const v4 = fc
  .tuple(
    fc.constantFrom(10, 192),
    fc.integer({ min: 0, max: 3 }),
    fc.integer({ min: 0, max: 255 }),
    fc.integer({ min: 6, max: 28 }),
  )
  .map(([a, b, c, bits]) => {
    const n = ((a << 24) | (b << 16) | (c << 8)) >>> 0;
    const masked = bits === 0 ? 0 : (n & (0xffffffff << (32 - bits))) >>> 0;
    return `${masked >>> 24}.${(masked >>> 16) & 255}.${(masked >>> 8) & 255}.${masked & 255}/${bits}`;
  });
const v6 = fc
  .tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 28, max: 64 }))
  .map(([a, b, bits]) => {
    const bytes = [0x20, 0x01, 0x0d, 0xb8, a >> 8, a & 255, b >> 8, b & 255, 0, 0, 0, 0, 0, 0, 0, 0];
    const masked = bytes.map((x, i) => x & ((0xff << (8 - Math.max(0, Math.min(8, bits - i * 8)))) & 0xff));
    return `${ipaddr.fromByteArray(masked).toString()}/${bits}`;
  });
const prefix = fc.oneof(v4, v6);
const sites = fc.array(
  fc.record({
    prefixes: fc.array(prefix, { minLength: 1, maxLength: 3 }),
    day: fc.integer({ min: 1, max: 4 }),
    tailnet: fc.constantFrom("home", "home", "work"),
    deleting: fc.boolean(),
  }),
  { minLength: 1, maxLength: 12 },
);
const toSites = (rows: { prefixes: string[]; day: number; tailnet: string; deleting: boolean }[]) =>
  rows.map((r, i) =>
    site(`s${i}`, {
      prefixes: r.prefixes,
      created: `2026-11-0${r.day}T00:00:00Z`,
      tailnet: r.tailnet,
      deleting: r.deleting && i % 3 === 0,
    }),
  );

describe("siteConflict properties", () => {
  it("siteConflicts (indexed) answers exactly like siteConflict for every site", () => {
    fc.assert(
      fc.property(sites, fc.array(prefix, { maxLength: 2 }), (rows, reserved) => {
        const all = toSites(rows);
        const batch = siteConflicts("home", all, reserved);
        for (const s of all.filter((x) => (x.spec as { tailnetRef: { name: string } }).tailnetRef.name === "home")) {
          assert.deepEqual(batch.get(`net/${s.metadata.name}`), siteConflict(s, all, reserved));
        }
        assert.equal(
          batch.size,
          all.filter((x) => (x.spec as { tailnetRef: { name: string } }).tailnetRef.name === "home").length,
        );
      }),
      { numRuns: 300 },
    );
  });

  it("a site is blocked by sites exactly when ipaddr.js finds an overlap with an older live one", () => {
    fc.assert(
      fc.property(sites, (rows) => {
        const all: K8sObject[] = toSites(rows.map((r) => ({ ...r, tailnet: "home" })));
        for (const s of all) {
          const mine = (s.spec as { prefixes: string[] }).prefixes;
          const expected = all.some(
            (o) =>
              o !== s &&
              !o.metadata.deletionTimestamp &&
              isOlder(o, s) &&
              (o.spec as { prefixes: string[] }).prefixes.some((q) => mine.some((p) => oracleOverlap(p, q))),
          );
          assert.equal(siteConflict(s, all, []).blocked, expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("of any two overlapping live sites, exactly the newer one is blocked by the other", () => {
    fc.assert(
      fc.property(prefix, prefix, (p, q) => {
        const a = site("a", { prefixes: [p], created: "2026-11-01T00:00:00Z" });
        const b = site("b", { prefixes: [q], created: "2026-11-02T00:00:00Z" });
        assert.equal(siteConflict(a, [a, b], []).blocked, false);
        assert.equal(siteConflict(b, [a, b], []).blocked, oracleOverlap(p, q));
      }),
      { numRuns: 500 },
    );
  });
});
