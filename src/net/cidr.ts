// CIDR and IP helpers shared by the policy renderer (egress allowlist, site prefixes)
// and the kinds' validation (reserved networks, site overlap).
//
// Parsing is deliberately as strict as Go's net/netip, which is what Headscale and
// Tailscale use: IPv4 only in four-part decimal without leading zeros (no octal/hex
// forms that ipaddr.js would accept), no IPv6 zone ids, prefix lengths without
// leading zeros, and a prefix with host bits set is an error rather than silently
// masked.
import ipaddr from "ipaddr.js";

export type IpFamily = 4 | 6;

export interface Cidr {
  /** Canonical network address, e.g. "192.168.1.0" or "2001:db8::". */
  addr: string;
  /** Prefix length. */
  bits: number;
  family: IpFamily;
  /** Canonical text "<addr>/<bits>" (IPv6 lower-case and compressed as in RFC 5952). */
  text: string;
  /** Network address bytes (4 or 16), used for containment and overlap checks. */
  bytes: readonly number[];
}

export type CidrParseResult = { ok: true; cidr: Cidr } | { ok: false; message: string };

const BITS_STRICT = /^(0|[1-9]\d{0,2})$/;

export interface ParsedIp {
  family: IpFamily;
  bytes: number[];
  text: string;
}

/**
 * Four-part decimal IPv4 without leading zeros, as Go's netip accepts it. Hand-written
 * because it runs for every node IP and egress target on every render, and ipaddr.js
 * accepts octal, hex and short forms that Headscale would not.
 */
function parseIpv4(s: string): number[] | null {
  const bytes: number[] = [];
  let value = -1;
  let digits = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46; // a virtual "." closes the last part
    if (c === 46) {
      if (digits === 0 || bytes.length === 4) return null;
      bytes.push(value);
      value = -1;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && value === 0) return null; // leading zero
      value = digits === 0 ? c - 48 : value * 10 + (c - 48);
      if (value > 255) return null;
      digits++;
    } else {
      return null;
    }
  }
  return bytes.length === 4 ? bytes : null;
}

function parseIpStrict(s: string): ParsedIp | null {
  if (!s.includes(":")) {
    const bytes = parseIpv4(s);
    return bytes ? { family: 4, bytes, text: s } : null;
  }
  let known = ipv6Seen.get(s);
  if (known === undefined) {
    // Zone ids ("fe80::1%eth0") are not addresses a policy can name.
    if (s.includes("%") || !ipaddr.IPv6.isValid(s)) known = null;
    else {
      const v6 = ipaddr.IPv6.parse(s);
      known = { bytes: v6.toByteArray(), text: ipv6Text(v6) };
    }
    if (ipv6Seen.size >= IPV6_SEEN_MAX) ipv6Seen.clear();
    ipv6Seen.set(s, known);
  }
  return known && { family: 6, bytes: known.bytes.slice(), text: known.text };
}

/**
 * ipaddr.js takes ~20 µs to validate, parse and print one IPv6 address; a Tailnet render reads the
 * IPv6 of every Headscale node (20,000 at scale) again after each node-list refresh. Parses are
 * kept by text (bounded: cleared when full).
 */
const IPV6_SEEN_MAX = 65_536;
const ipv6Seen = new Map<string, { bytes: number[]; text: string } | null>();

function ipv6Text(v6: ipaddr.IPv6): string {
  // Go's netip prints IPv4-mapped addresses with the dotted tail; keep that shape.
  if (v6.isIPv4MappedAddress()) return `::ffff:${v6.toIPv4Address().toString()}`;
  return v6.toString();
}

function textOfBytes(family: IpFamily, bytes: number[]): string {
  return family === 4 ? bytes.join(".") : ipv6Text(ipaddr.fromByteArray(bytes) as ipaddr.IPv6);
}

function maskBytes(bytes: readonly number[], bits: number): number[] {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return keep === 8 ? b : b & ((0xff << (8 - keep)) & 0xff);
  });
}

/** True when the first `bits` bits of a and b (same length) are equal. */
function samePrefix(a: readonly number[], b: readonly number[], bits: number): boolean {
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[whole] & mask) === (b[whole] & mask);
}

/** True for a single IPv4 (four-part decimal) or IPv6 address (no zone, no prefix). */
export function isIp(s: string): boolean {
  return parseIpStrict(s) !== null;
}

/** Canonical text of an IP address, or null when `s` is not one. */
export function canonicalIp(s: string): string | null {
  return parseIpStrict(s)?.text ?? null;
}

/**
 * Parses "<addr>/<bits>". Host bits set is an error worded like Tailscale's:
 * "192.168.1.1/24 has non-address bits set; expected 192.168.1.0/24".
 */
export function parseCidr(s: string): CidrParseResult {
  const p = parsePrefix(s);
  if (!p.ok) return p;
  const { ip, bits, max } = p;
  const masked = maskBytes(ip.bytes, bits);
  const addr = textOfBytes(ip.family, masked);
  const text = `${addr}/${bits}`;
  if (!samePrefix(masked, ip.bytes, max)) {
    return { ok: false, message: `${s} has non-address bits set; expected ${text}` };
  }
  return { ok: true, cidr: { addr, bits, family: ip.family, text, bytes: masked } };
}

/**
 * "<addr>/<bits>" as Go's netip.ParsePrefix reads it: host bits allowed (parseCidr refuses them). Also what
 * the kube-apiserver's CEL `isCIDR` accepts (k8s.io/apiserver pkg/cel/library/cidr.go: netip.ParsePrefix),
 * except that CEL also refuses IPv4-mapped IPv6 (`mapped`).
 */
export function parsePrefix(
  s: string,
): { ok: true; ip: ParsedIp; bits: number; max: number; mapped: boolean } | { ok: false; message: string } {
  const slash = s.indexOf("/");
  if (slash < 0) return { ok: false, message: `${JSON.stringify(s)} is not a CIDR prefix (expected <address>/<bits>)` };
  const ip = parseIpStrict(s.slice(0, slash));
  if (!ip) return { ok: false, message: `${JSON.stringify(s)} is not a CIDR prefix: bad address` };
  const bitsText = s.slice(slash + 1);
  const max = ip.family === 4 ? 32 : 128;
  const bits = BITS_STRICT.test(bitsText) ? Number(bitsText) : Number.NaN;
  if (!(bits >= 0 && bits <= max)) {
    return { ok: false, message: `${JSON.stringify(s)} is not a CIDR prefix: bits must be 0..${max}` };
  }
  const mapped =
    ip.family === 6 && ip.bytes.slice(0, 10).every((b) => b === 0) && ip.bytes[10] === 255 && ip.bytes[11] === 255;
  return { ok: true, ip, bits, max, mapped };
}

/** Whether a prefix Go parses has host bits set (CEL: `cidr(s) != cidr(s).masked()`). */
export function prefixHasHostBits(p: { ip: ParsedIp; bits: number; max: number }): boolean {
  return !samePrefix(maskBytes(p.ip.bytes, p.bits), p.ip.bytes, p.max);
}

/** A CIDR, or a single IP read as its host prefix (/32 or /128). Null when neither. */
export function parseCidrOrIp(s: string): Cidr | null {
  if (s.includes("/")) {
    const r = parseCidr(s);
    return r.ok ? r.cidr : null;
  }
  const ip = parseIpStrict(s);
  if (!ip) return null;
  const bits = ip.family === 4 ? 32 : 128;
  return { addr: ip.text, bits, family: ip.family, text: `${ip.text}/${bits}`, bytes: ip.bytes };
}

function toCidr(x: string | Cidr): Cidr | null {
  return typeof x === "string" ? parseCidrOrIp(x) : x;
}

/**
 * True when the two prefixes share at least one address: one contains the other
 * (nested prefixes overlap). Different families never overlap. Accepts CIDR or IP
 * strings or parsed Cidrs; anything unparsable overlaps nothing.
 */
export function cidrsOverlap(a: string | Cidr, b: string | Cidr): boolean {
  const x = toCidr(a);
  const y = toCidr(b);
  if (!x || !y || x.family !== y.family) return false;
  return samePrefix(x.bytes, y.bytes, Math.min(x.bits, y.bits));
}

/**
 * True when every address of `inner` (a CIDR or a single IP) lies within `outer`.
 * Different families are never contained; anything unparsable is not contained.
 */
export function cidrContains(outer: string | Cidr, inner: string | Cidr): boolean {
  const o = toCidr(outer);
  const i = toCidr(inner);
  if (!o || !i || o.family !== i.family || o.bits > i.bits) return false;
  return samePrefix(o.bytes, i.bytes, o.bits);
}
