/**
 * What one source may publish (src/records/validate.ts): a table of records and the reason each gets, then
 * properties over generated records — nothing outside the claim or outside the tailnet's prefixes is ever
 * accepted, whatever the source sends.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { parseCidr } from "../../src/net/cidr.js";
import {
  checkRecord,
  checkRecords,
  claimAllows,
  normalizeName,
  parseClaim,
  recordsFileText,
} from "../../src/records/validate.js";

const BASE = "ts.example.com";
const prefixes = ["100.64.0.0/10", "fd7a:115c:a1e0::/48"].map((p) => {
  const r = parseCidr(p);
  if (!r.ok) throw new Error(r.message);
  return r.cidr;
});
const policy = { baseDomain: BASE, prefixes };
const claimA = parseClaim(["*.a.ts.example.com", "grafana.ts.example.com"], BASE).claim;

describe("checkRecord", () => {
  const rows: { name: string; record: unknown; want: string }[] = [
    {
      name: "an A record in the claim",
      record: { name: "web.a.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "ok",
    },
    {
      name: "an exact name of the claim",
      record: { name: "grafana.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "ok",
    },
    {
      name: "AAAA in the v6 prefix",
      record: { name: "web.a.ts.example.com", type: "AAAA", value: "fd7a:115c:a1e0::7" },
      want: "ok",
    },
    {
      name: "upper case and a trailing dot",
      record: { name: "WEB.a.ts.example.com.", type: "a", value: "100.64.0.7" },
      want: "ok",
    },
    {
      name: "Go's case-insensitive keys",
      record: { Name: "web.a.ts.example.com", Type: "A", Value: "100.64.0.7" },
      want: "ok",
    },
    {
      name: "empty type, IPv6 value",
      record: { name: "web.a.ts.example.com", type: "", value: "fd7a:115c:a1e0::7" },
      want: "ok",
    },
    { name: "a string", record: "web.a.ts.example.com", want: "malformed" },
    { name: "a number as value", record: { name: "web.a.ts.example.com", type: "A", value: 7 }, want: "malformed" },
    {
      name: "an underscore",
      record: { name: "_x.a.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "invalid_name",
    },
    {
      name: "an empty label",
      record: { name: "web..a.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "invalid_name",
    },
    {
      name: "another domain",
      record: { name: "web.evil.com", type: "A", value: "100.64.0.7" },
      want: "outside_base_domain",
    },
    {
      name: "the base domain itself",
      record: { name: "ts.example.com", type: "A", value: "100.64.0.7" },
      want: "outside_base_domain",
    },
    {
      name: "a suffix trick",
      record: { name: "webts.example.com", type: "A", value: "100.64.0.7" },
      want: "outside_base_domain",
    },
    {
      name: "another cluster's subtree",
      record: { name: "web.b.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "outside_claim",
    },
    {
      name: "a node's flat name",
      record: { name: "db-1.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "outside_claim",
    },
    {
      name: "the claim's own apex",
      record: { name: "a.ts.example.com", type: "A", value: "100.64.0.7" },
      want: "outside_claim",
    },
    {
      name: "a CNAME",
      record: { name: "web.a.ts.example.com", type: "CNAME", value: "x.ts.example.com" },
      want: "unsupported_type",
    },
    {
      name: "A with an IPv6 value",
      record: { name: "web.a.ts.example.com", type: "A", value: "fd7a:115c:a1e0::7" },
      want: "invalid_value",
    },
    {
      name: "a leading zero",
      record: { name: "web.a.ts.example.com", type: "A", value: "100.64.0.07" },
      want: "invalid_value",
    },
    {
      name: "a CIDR",
      record: { name: "web.a.ts.example.com", type: "A", value: "100.64.0.0/10" },
      want: "invalid_value",
    },
    {
      name: "a public address",
      record: { name: "web.a.ts.example.com", type: "A", value: "8.8.8.8" },
      want: "not_tailnet_address",
    },
    {
      name: "the metadata address",
      record: { name: "web.a.ts.example.com", type: "A", value: "169.254.169.254" },
      want: "not_tailnet_address",
    },
    {
      name: "an IPv4-mapped IPv6",
      record: { name: "web.a.ts.example.com", type: "AAAA", value: "::ffff:100.64.0.7" },
      want: "not_tailnet_address",
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const r = checkRecord(row.record, claimA, policy);
      assert.equal(r.ok ? "ok" : r.reason, row.want);
    });
  }

  it("writes the accepted record normalized", () => {
    const r = checkRecord({ Name: "WEB.a.ts.example.com.", type: "", value: "FD7A:115C:A1E0:0::7" }, claimA, policy);
    assert.deepEqual(r, {
      ok: true,
      record: { name: "web.a.ts.example.com", type: "AAAA", value: "fd7a:115c:a1e0::7" },
    });
  });
});

describe("parseClaim", () => {
  it("refuses patterns outside the base domain, naming each", () => {
    const { errors } = parseClaim(["*.evil.com", "x.ts.example.com", "a*.ts.example.com", "*.ts.example.com"], BASE);
    assert.deepEqual(errors, [
      '"*.evil.com" is not below the base domain ts.example.com',
      '"a*.ts.example.com" is not a DNS name or "*.<name>"',
    ]);
  });
  it("*.<baseDomain> allows every name below it, an exact name only itself", () => {
    const all = parseClaim([`*.${BASE}`], BASE).claim;
    assert.ok(claimAllows(all, "x.y.ts.example.com"));
    const one = parseClaim(["x.ts.example.com"], BASE).claim;
    assert.ok(claimAllows(one, "x.ts.example.com"));
    assert.ok(!claimAllows(one, "y.x.ts.example.com"));
  });
});

describe("properties", () => {
  const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
  const anyName = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc
      .tuple(
        fc.array(label, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(
          "a.ts.example.com",
          "b.ts.example.com",
          "ts.example.com",
          "example.com",
          "ts.example.com.evil.org",
        ),
      )
      .map(([ls, d]) => `${ls.join(".")}.${d}`),
  );
  const anyValue = fc.oneof(
    fc.ipV4(),
    fc.ipV6(),
    fc.string({ maxLength: 20 }),
    fc.constantFrom("100.64.0.1", "100.127.255.255", "100.128.0.0", "fd7a:115c:a1e0::1"),
  );
  const anyType = fc.constantFrom("A", "AAAA", "", "CNAME", "TXT", "a");

  it("an accepted record is always in the claim, under the base domain, and a tailnet address", () => {
    fc.assert(
      fc.property(anyName, anyType, anyValue, (name, type, value) => {
        const r = checkRecord({ name, type, value }, claimA, policy);
        if (!r.ok) return;
        assert.ok(
          r.record.name.endsWith(".a.ts.example.com") || r.record.name === "grafana.ts.example.com",
          r.record.name,
        );
        assert.ok(/^(A|AAAA)$/.test(r.record.type));
        const v4 = r.record.value.split(".").map(Number);
        assert.ok(
          r.record.type === "A"
            ? v4[0] === 100 && v4[1] >= 64 && v4[1] < 128
            : r.record.value.startsWith("fd7a:115c:a1e0:"),
          r.record.value,
        );
      }),
      { numRuns: 2000 },
    );
  });

  it("normalizing is idempotent and checking a checked list changes nothing", () => {
    fc.assert(
      fc.property(fc.array(fc.record({ name: anyName, type: anyType, value: anyValue }), { maxLength: 20 }), (list) => {
        const once = checkRecords(list, claimA, policy);
        const twice = checkRecords(once.records, claimA, policy);
        assert.deepEqual(twice.records, once.records);
        assert.equal(twice.refused.length, 0);
        for (const r of once.records) assert.equal(normalizeName(r.name), r.name);
        assert.equal(once.records.length + once.refused.length <= list.length, true);
        assert.deepEqual(JSON.parse(recordsFileText(once.records)), once.records);
      }),
      { numRuns: 500 },
    );
  });
});

describe("recordsFileText", () => {
  it("writes one record per line, sorted, and [] for none", () => {
    const { records } = checkRecords(
      [
        { name: "b.a.ts.example.com", type: "A", value: "100.64.0.2" },
        { name: "a.a.ts.example.com", type: "A", value: "100.64.0.9" },
        { name: "a.a.ts.example.com", type: "A", value: "100.64.0.10" },
        { name: "a.a.ts.example.com", type: "A", value: "100.64.0.10" },
      ],
      claimA,
      policy,
    );
    assert.equal(
      recordsFileText(records),
      '[\n  {"name":"a.a.ts.example.com","type":"A","value":"100.64.0.10"},\n  {"name":"a.a.ts.example.com","type":"A","value":"100.64.0.9"},\n  {"name":"b.a.ts.example.com","type":"A","value":"100.64.0.2"}\n]\n',
    );
    assert.equal(recordsFileText([]), "[]\n");
  });
});
