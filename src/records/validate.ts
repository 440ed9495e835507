/**
 * What one source may publish (pure). A source is another cluster's records file, so it is read as untrusted
 * input: every record must be an A or AAAA record whose name lies in the source's claim (under Headscale's
 * base domain) and whose value is a tailnet address (inside Headscale's prefixes). Anything else is refused
 * record by record with a reason, and the rest of the source is kept. Headscale itself checks nothing: it
 * unmarshals the file into tailcfg.DNSRecord and hands every record to every client (juanfont/headscale
 * hscontrol/dns/extrarecords.go readExtraRecordsFromPath), and tailscale answers those records before the
 * MagicDNS names of nodes (docs/dns-names.md), so this is the only gate between a cluster and the tailnet's DNS.
 */
import { type Cidr, canonicalIp, cidrContains, parseCidrOrIp } from "../net/cidr.js";

/** One record as Headscale reads it (tailcfg.DNSRecord: name, type, value). */
export interface RecordEntry {
  name: string;
  type: "A" | "AAAA";
  value: string;
}

/** Why a record was refused: the `reason` label of tailnet_records_refused. */
export const REFUSALS = [
  "malformed",
  "invalid_name",
  "outside_base_domain",
  "outside_claim",
  "unsupported_type",
  "invalid_value",
  "not_tailnet_address",
] as const;
export type Refusal = (typeof REFUSALS)[number];

export interface RefusedRecord {
  /** The record as the source gave it, cut to a readable length (it is untrusted text). */
  record: string;
  reason: Refusal;
}

/** A source's claim: names it may publish, already normalized (exact names, or "*.<suffix>" for any name below). */
export interface Claim {
  exact: ReadonlySet<string>;
  /** Suffixes with their leading dot (".a.ts.example.com"): a name matches when it ends with one. */
  below: readonly string[];
}

export interface ValidationPolicy {
  /** Headscale's dns.base_domain, normalized. */
  baseDomain: string;
  /** Headscale's prefixes.v4 / v6 (or narrower): every value must lie inside one. */
  prefixes: readonly Cidr[];
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A DNS name in the form it is compared and written: lower case (tailscale lower-cases the query before
 * looking in the records, net/dns/resolver/tsdns.go rawNameToLower) and without a trailing dot. Null when
 * it is not a host name of letters, digits and hyphens in labels of 1..63, at most 253 characters.
 */
export function normalizeName(raw: string): string | null {
  const name = raw.toLowerCase().replace(/\.$/, "");
  if (name.length === 0 || name.length > 253) return null;
  return name.split(".").every((l) => LABEL.test(l)) ? name : null;
}

/** True when `name` is strictly below `domain` (both normalized): "a.ts.example.com" is below "ts.example.com". */
export const isBelow = (name: string, domain: string): boolean => name.endsWith(`.${domain}`);

export function claimAllows(claim: Claim, name: string): boolean {
  return claim.exact.has(name) || claim.below.some((suffix) => name.endsWith(suffix));
}

/**
 * Parses a claim's patterns: "grafana.ts.example.com" (that name) or "*.a.ts.example.com" (every name below
 * a.ts.example.com, not a.ts.example.com itself). Every pattern must lie below the base domain; the errors
 * name the pattern.
 */
export function parseClaim(patterns: readonly string[], baseDomain: string): { claim: Claim; errors: string[] } {
  const exact = new Set<string>();
  const below: string[] = [];
  const errors: string[] = [];
  for (const p of patterns) {
    const wildcard = p.startsWith("*.");
    const name = normalizeName(wildcard ? p.slice(2) : p);
    if (name === null) errors.push(`${JSON.stringify(p)} is not a DNS name or "*.<name>"`);
    else if (!(isBelow(name, baseDomain) || (wildcard && name === baseDomain))) {
      errors.push(`${JSON.stringify(p)} is not below the base domain ${baseDomain}`);
    } else if (wildcard) below.push(`.${name}`);
    else exact.add(name);
  }
  return { claim: { exact, below }, errors };
}

const show = (x: unknown): string => {
  const text = JSON.stringify(x) ?? String(x);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
};

/** One record checked; the accepted form is normalized (name lower case, canonical address). */
export function checkRecord(
  raw: unknown,
  claim: Claim,
  policy: ValidationPolicy,
): { ok: true; record: RecordEntry } | { ok: false; reason: Refusal } {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { ok: false, reason: "malformed" };
  // Go's encoding/json matches keys case-insensitively, so Headscale reads "Name" as "name": so do we.
  const field = (k: string) => Object.entries(raw).find(([key]) => key.toLowerCase() === k)?.[1];
  const [rawName, type, value] = [field("name"), field("type") ?? "", field("value")];
  if (typeof rawName !== "string" || typeof type !== "string" || typeof value !== "string") {
    return { ok: false, reason: "malformed" };
  }
  const name = normalizeName(rawName);
  if (name === null) return { ok: false, reason: "invalid_name" };
  if (!isBelow(name, policy.baseDomain)) return { ok: false, reason: "outside_base_domain" };
  if (!claimAllows(claim, name)) return { ok: false, reason: "outside_claim" };
  const ip = canonicalIp(value);
  const addr = ip === null ? null : parseCidrOrIp(ip);
  // tailcfg.DNSRecord.Type (tailscale tailcfg/tailcfg.go): "Empty means A or AAAA, depending on value";
  // other types are ignored by clients, so they are refused here rather than written.
  const kind = type === "" ? (addr?.family === 6 ? "AAAA" : "A") : type.toUpperCase();
  if (kind !== "A" && kind !== "AAAA") return { ok: false, reason: "unsupported_type" };
  if (ip === null || addr === null || addr.family !== (kind === "A" ? 4 : 6)) {
    return { ok: false, reason: "invalid_value" };
  }
  if (!policy.prefixes.some((p) => cidrContains(p, addr))) return { ok: false, reason: "not_tailnet_address" };
  return { ok: true, record: { name, type: kind, value: ip } };
}

/** A source's whole records file checked: its accepted records (deduplicated) and what was refused. */
export function checkRecords(
  list: readonly unknown[],
  claim: Claim,
  policy: ValidationPolicy,
): { records: RecordEntry[]; refused: RefusedRecord[] } {
  const records = new Map<string, RecordEntry>();
  const refused: RefusedRecord[] = [];
  for (const raw of list) {
    const r = checkRecord(raw, claim, policy);
    if (r.ok) records.set(`${r.record.name} ${r.record.type} ${r.record.value}`, r.record);
    else refused.push({ record: show(raw), reason: r.reason });
  }
  return { records: sortRecords([...records.values()]), refused };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Sorted by name, then type, then value: the file's order, so equal sets give equal bytes. */
export function sortRecords(records: RecordEntry[]): RecordEntry[] {
  return records.sort((a, b) => cmp(a.name, b.name) || cmp(a.type, b.type) || cmp(a.value, b.value));
}

/** The records file's text: one record per line, valid JSON for Headscale (as the operator's own file). */
export function recordsFileText(records: readonly RecordEntry[]): string {
  if (records.length === 0) return "[]\n";
  return `[\n${records.map((r) => `  ${JSON.stringify({ name: r.name, type: r.type, value: r.value })}`).join(",\n")}\n]\n`;
}
