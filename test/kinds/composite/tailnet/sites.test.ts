import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { siteConflict } from "../../../../src/kinds/composite/site/conflict.js";
import { blockedSites } from "../../../../src/kinds/composite/tailnet/sites.js";
import { site } from "./fixtures.js";

const idOf = (o: K8sObject) => `${o.metadata.namespace}/${o.metadata.name}`;
const bySiteConflict = (sites: K8sObject[], reserved: string[]) =>
  new Set(sites.filter((s) => siteConflict(s, sites, reserved).blocked).map(idOf));

/** Prefixes from a small space so overlaps are common: 10.<a>.<b>.0/<len> masked, plus a few IPv6. */
const prefix = fc.oneof(
  fc
    .tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 }), fc.constantFrom(8, 16, 23, 24, 25, 32))
    .map(([a, b, len]) => {
      const addr = (10 << 24) | (a << 16) | (b << 8);
      const masked = len === 32 ? addr : (addr >>> (32 - len)) << (32 - len);
      const o = [masked >>> 24, (masked >>> 16) & 255, (masked >>> 8) & 255, masked & 255];
      return `${o.join(".")}/${len}`;
    }),
  fc.constantFrom("fd00::/8", "fd00:1::/32", "fd00:1:2::/48", "::/0", "0.0.0.0/0", "not-a-cidr"),
);

const sitesArb = fc
  .array(
    fc.record({
      prefixes: fc.array(prefix, { minLength: 1, maxLength: 3 }),
      day: fc.integer({ min: 1, max: 4 }),
      deleting: fc.boolean(),
    }),
    { maxLength: 8 },
  )
  .map((specs) =>
    specs.map((s, i) => {
      const o = site(`s${i}`, `ns${i % 3}`, s.prefixes, `2026-11-0${s.day}T00:00:00Z`);
      if (s.deleting) o.metadata.deletionTimestamp = "2026-11-29T00:00:00Z";
      return o;
    }),
  );

describe("blockedSites", () => {
  it("agrees with siteConflict for every site, on random sites and reserved networks", () => {
    fc.assert(
      fc.property(sitesArb, fc.array(prefix, { maxLength: 2 }), (sites, reserved) => {
        assert.deepEqual(blockedSites(sites, reserved), bySiteConflict(sites, reserved));
      }),
      { numRuns: 500, seed: 20261129 },
    );
  });

  it("blocks only the newer of two overlapping sites, and any site overlapping a reserved network", () => {
    const older = site("lan", "net", ["192.168.10.0/24"], "2026-11-01T00:00:00Z");
    const newer = site("lan-half", "net", ["192.168.10.128/25"], "2026-11-02T00:00:00Z");
    const kube = site("kube", "net", ["10.96.1.0/24"], "2026-10-01T00:00:00Z");
    assert.deepEqual(blockedSites([newer, older, kube], ["10.96.0.0/12"]), new Set(["net/lan-half", "net/kube"]));
  });
});
