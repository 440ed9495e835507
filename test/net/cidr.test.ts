import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { canonicalIp, cidrContains, cidrsOverlap, isIp, parseCidr, parseCidrOrIp } from "../../src/net/cidr.js";

describe("parseCidr", () => {
  const good: { in: string; text: string; family: 4 | 6; bits: number; addr: string }[] = [
    { in: "192.168.1.0/24", text: "192.168.1.0/24", family: 4, bits: 24, addr: "192.168.1.0" },
    { in: "0.0.0.0/0", text: "0.0.0.0/0", family: 4, bits: 0, addr: "0.0.0.0" },
    { in: "100.64.0.7/32", text: "100.64.0.7/32", family: 4, bits: 32, addr: "100.64.0.7" },
    { in: "10.96.0.0/12", text: "10.96.0.0/12", family: 4, bits: 12, addr: "10.96.0.0" },
    { in: "2001:DB8:0:0::/32", text: "2001:db8::/32", family: 6, bits: 32, addr: "2001:db8::" },
    { in: "::/0", text: "::/0", family: 6, bits: 0, addr: "::" },
    { in: "fd7a:115c:a1e0::/48", text: "fd7a:115c:a1e0::/48", family: 6, bits: 48, addr: "fd7a:115c:a1e0::" },
    { in: "2001:db8::1/128", text: "2001:db8::1/128", family: 6, bits: 128, addr: "2001:db8::1" },
  ];
  for (const row of good) {
    it(`accepts ${row.in}`, () => {
      const r = parseCidr(row.in);
      assert.ok(r.ok, r.ok ? "" : r.message);
      assert.equal(r.cidr.text, row.text);
      assert.equal(r.cidr.family, row.family);
      assert.equal(r.cidr.bits, row.bits);
      assert.equal(r.cidr.addr, row.addr);
    });
  }

  const bad: { in: string; message: string }[] = [
    { in: "192.168.1.1/24", message: "192.168.1.1/24 has non-address bits set; expected 192.168.1.0/24" },
    { in: "10.97.0.0/12", message: "10.97.0.0/12 has non-address bits set; expected 10.96.0.0/12" },
    { in: "2001:db8::1/32", message: "2001:db8::1/32 has non-address bits set; expected 2001:db8::/32" },
    { in: "1.2.3.4/0", message: "1.2.3.4/0 has non-address bits set; expected 0.0.0.0/0" },
    { in: "192.168.1.0", message: '"192.168.1.0" is not a CIDR prefix (expected <address>/<bits>)' },
    { in: "192.168.1.0/33", message: '"192.168.1.0/33" is not a CIDR prefix: bits must be 0..32' },
    { in: "::/129", message: '"::/129" is not a CIDR prefix: bits must be 0..128' },
    { in: "10.0.0.0/08", message: '"10.0.0.0/08" is not a CIDR prefix: bits must be 0..32' },
    { in: "10.0.0.0/", message: '"10.0.0.0/" is not a CIDR prefix: bits must be 0..32' },
    { in: "010.0.0.0/8", message: '"010.0.0.0/8" is not a CIDR prefix: bad address' },
    { in: "0xa.0.0.0/8", message: '"0xa.0.0.0/8" is not a CIDR prefix: bad address' },
    { in: "256.0.0.0/8", message: '"256.0.0.0/8" is not a CIDR prefix: bad address' },
    { in: "fe80::%eth0/64", message: '"fe80::%eth0/64" is not a CIDR prefix: bad address' },
    { in: "db-1/24", message: '"db-1/24" is not a CIDR prefix: bad address' },
  ];
  for (const row of bad) {
    it(`rejects ${row.in}`, () => {
      assert.deepEqual(parseCidr(row.in), { ok: false, message: row.message });
    });
  }
});

describe("isIp / canonicalIp / parseCidrOrIp", () => {
  const rows: [string, boolean, string | null][] = [
    ["100.64.0.7", true, "100.64.0.7"],
    ["0.0.0.0", true, "0.0.0.0"],
    ["255.255.255.255", true, "255.255.255.255"],
    ["256.1.1.1", false, null],
    ["1.2.3", false, null],
    ["01.2.3.4", false, null],
    ["1.2.3.4.5", false, null],
    ["1.2.3.4.", false, null],
    [".1.2.3", false, null],
    [" 1.2.3.4", false, null],
    ["1.2.3.-4", false, null],
    ["1.2..4", false, null],
    ["10", false, null],
    ["FD7A:115C:A1E0::1", true, "fd7a:115c:a1e0::1"],
    ["::ffff:1.2.3.4", true, "::ffff:1.2.3.4"],
    ["fe80::1%eth0", false, null],
    ["10.0.0.0/8", false, null],
    ["db-1", false, null],
    ["", false, null],
  ];
  for (const [s, ip, text] of rows) {
    it(`${JSON.stringify(s)} → ${ip}`, () => {
      assert.equal(isIp(s), ip);
      assert.equal(canonicalIp(s), text);
    });
  }
  it("reads a single IP as its host prefix", () => {
    assert.equal(parseCidrOrIp("100.64.0.7")?.text, "100.64.0.7/32");
    assert.equal(parseCidrOrIp("2001:db8::1")?.text, "2001:db8::1/128");
    assert.equal(parseCidrOrIp("10.0.0.0/8")?.text, "10.0.0.0/8");
    assert.equal(parseCidrOrIp("10.0.0.1/8"), null);
    assert.equal(parseCidrOrIp("nope"), null);
  });
});

describe("cidrsOverlap", () => {
  const rows: [string, string, boolean][] = [
    ["10.0.0.0/8", "10.1.0.0/16", true],
    ["10.1.0.0/16", "10.0.0.0/8", true],
    ["10.0.0.0/8", "10.0.0.0/8", true],
    ["10.96.0.0/12", "10.112.0.0/12", false],
    ["10.96.0.0/12", "10.111.255.0/24", true],
    ["192.168.10.0/24", "192.168.11.0/24", false],
    ["0.0.0.0/0", "203.0.113.0/24", true],
    ["192.168.1.0/24", "192.168.1.77", true],
    ["2001:db8::/32", "2001:db8:1::/48", true],
    ["2001:db8::/32", "2001:db9::/32", false],
    ["::/0", "fd00::/8", true],
    ["::/0", "0.0.0.0/0", false],
    ["::ffff:0:0/96", "10.0.0.0/8", false],
    ["10.0.0.0/8", "not-a-cidr", false],
  ];
  for (const [a, b, want] of rows) {
    it(`${a} ∩ ${b} = ${want}`, () => {
      assert.equal(cidrsOverlap(a, b), want);
      assert.equal(cidrsOverlap(b, a), want);
    });
  }
});

describe("cidrContains", () => {
  const rows: [string, string, boolean][] = [
    ["100.64.0.0/10", "100.64.0.7", true],
    ["100.64.0.0/10", "100.128.0.1", false],
    ["100.64.0.0/10", "100.64.0.0/10", true],
    ["100.64.0.0/10", "100.64.0.0/9", false],
    ["100.64.0.0/10", "100.100.0.0/16", true],
    ["192.168.10.0/24", "192.168.10.0/25", true],
    ["192.168.10.128/25", "192.168.10.0/24", false],
    ["0.0.0.0/0", "8.8.8.8", true],
    ["fd7a:115c:a1e0::/48", "fd7a:115c:a1e0::1", true],
    ["fd7a:115c:a1e0::/48", "fd7a:115c:a1e1::1", false],
    ["::/0", "10.0.0.1", false],
    ["0.0.0.0/0", "::1", false],
    ["100.64.0.7", "100.64.0.7", true],
    ["100.64.0.7", "100.64.0.8", false],
    ["garbage", "10.0.0.1", false],
  ];
  for (const [outer, inner, want] of rows) {
    it(`${outer} ⊇ ${inner} = ${want}`, () => {
      assert.equal(cidrContains(outer, inner), want);
    });
  }
  it("accepts parsed prefixes", () => {
    const outer = parseCidrOrIp("10.0.0.0/8");
    const inner = parseCidrOrIp("10.2.3.4");
    assert.ok(outer && inner);
    assert.equal(cidrContains(outer, inner), true);
    assert.equal(cidrContains(inner, outer), false);
  });
});

describe("properties", () => {
  // Random IPv4 prefixes with the host bits cleared (computed here independently).
  const v4 = fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 })).map(([n, bits]) => {
    const masked = bits === 0 ? 0 : (n & ~(2 ** (32 - bits) - 1)) >>> 0;
    const bytes = [masked >>> 24, (masked >>> 16) & 255, (masked >>> 8) & 255, masked & 255];
    return `${bytes.join(".")}/${bits}`;
  });

  it("every four-part decimal IPv4 is an IP and keeps its text", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), (bytes) => {
        const text = bytes.join(".");
        // and a leading zero makes it invalid, as in Go's netip
        return isIp(text) && canonicalIp(text) === text && !isIp(`0${text}`);
      }),
    );
  });

  it("a masked prefix always parses and round-trips", () => {
    fc.assert(
      fc.property(v4, (text) => {
        const r = parseCidr(text);
        return r.ok && r.cidr.text === text;
      }),
    );
  });

  it("overlap is symmetric and means one prefix contains the other", () => {
    fc.assert(
      fc.property(v4, v4, (a, b) => {
        const overlap = cidrsOverlap(a, b);
        return overlap === cidrsOverlap(b, a) && overlap === (cidrContains(a, b) || cidrContains(b, a));
      }),
    );
  });
});
