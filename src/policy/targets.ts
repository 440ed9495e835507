// Egress target resolution and the Tailnet's egress allowlist.
//
// Shared by the policy collector (which grants) and the egress kind (which reports
// per-target state): both must agree on what a host resolves to and whether it is
// allowed, so both call these.
import { type Cidr, canonicalIp, cidrContains, parseCidr, parseCidrOrIp } from "../net/cidr.js";

export interface NodeRef {
  givenName: string;
  name: string;
  ipAddresses: string[];
  tags: string[];
}

export interface NodeIndex {
  /** givenName (lower-case) → node; Headscale keeps given names unique. */
  byGivenName: Map<string, NodeRef>;
  /** hostname (lower-case) → nodes; hostnames are not unique. */
  byName: Map<string, NodeRef[]>;
  /** canonical IP → node. */
  byIp: Map<string, NodeRef>;
  /** lower-case base domain without surrounding dots, "" when unset. */
  baseDomain: string;
}

export interface ResolvedTarget {
  /** How the host was written: an IP, a CIDR, or a node name / MagicDNS name. */
  kind: "ip" | "cidr" | "node";
  /** What a grant names: canonical IP or CIDR text (never a host name). */
  address: string;
  /** The address as a prefix (a single IP as /32 or /128), for allowlist checks. */
  prefix: Cidr;
  /** The tailnet node behind the address, when known. */
  node: NodeRef | null;
}

export interface EgressAllowlist {
  cidrs: Cidr[];
  tags: Set<string>;
}

function normalizeDomain(d: string | undefined): string {
  return (d ?? "")
    .trim()
    .toLowerCase()
    .replace(/^\.+|\.+$/g, "");
}

/** Builds the lookups once per render so resolution is O(1) per target. */
export function buildNodeIndex(nodes: readonly NodeRef[], baseDomain?: string): NodeIndex {
  const byGivenName = new Map<string, NodeRef>();
  const byName = new Map<string, NodeRef[]>();
  const byIp = new Map<string, NodeRef>();
  for (const node of nodes) {
    if (node.givenName) byGivenName.set(node.givenName.toLowerCase(), node);
    if (node.name) {
      const key = node.name.toLowerCase();
      const list = byName.get(key);
      if (list) list.push(node);
      else byName.set(key, [node]);
    }
    for (const ip of node.ipAddresses) {
      const text = canonicalIp(ip);
      if (text) byIp.set(text, node);
    }
  }
  return { byGivenName, byName, byIp, baseDomain: normalizeDomain(baseDomain) };
}

/** The address written into grants for a node: its IPv4, else its first IPv6. */
export function nodeAddress(node: NodeRef): string | null {
  let v6: string | null = null;
  for (const ip of node.ipAddresses) {
    const text = canonicalIp(ip);
    if (!text) continue;
    if (!text.includes(":")) return text;
    v6 ??= text;
  }
  return v6;
}

function lookupNodeName(host: string, index: NodeIndex): NodeRef | null {
  let label = host.toLowerCase();
  if (label.endsWith(".")) label = label.slice(0, -1);
  if (label.includes(".")) {
    // A MagicDNS FQDN: <givenName>.<baseDomain>; any other dotted name is not ours.
    const suffix = `.${index.baseDomain}`;
    if (index.baseDomain === "" || !label.endsWith(suffix)) return null;
    const given = label.slice(0, -suffix.length);
    if (given === "" || given.includes(".")) return null;
    return index.byGivenName.get(given) ?? null;
  }
  const given = index.byGivenName.get(label);
  if (given) return given;
  // Fall back to the hostname, but only when it names exactly one node.
  const named = index.byName.get(label);
  return named?.length === 1 ? named[0] : null;
}

/**
 * Resolves an egress target host (IP, CIDR, node name or MagicDNS FQDN with or
 * without the trailing dot) to the address a grant names. Null: not resolvable yet.
 */
export function resolveTargetHost(host: string, index: NodeIndex): ResolvedTarget | null {
  const h = host.trim();
  if (h.includes("/")) {
    const r = parseCidr(h);
    return r.ok ? { kind: "cidr", address: r.cidr.text, prefix: r.cidr, node: null } : null;
  }
  const ip = parseCidrOrIp(h);
  if (ip) return { kind: "ip", address: ip.addr, prefix: ip, node: index.byIp.get(ip.addr) ?? null };
  const node = lookupNodeName(h, index);
  const address = node ? nodeAddress(node) : null;
  const prefix = address ? parseCidrOrIp(address) : null;
  return node && address && prefix ? { kind: "node", address, prefix, node } : null;
}

/**
 * Compiles Tailnet.spec.allowedEgressTargets: CIDRs (a bare IP counts as its host
 * prefix) and node tags. Entries that are neither are ignored here; the Tailnet's
 * own validation reports them.
 */
export function compileAllowlist(entries: readonly string[]): EgressAllowlist {
  const cidrs: Cidr[] = [];
  const tags = new Set<string>();
  for (const raw of entries) {
    const e = raw.trim();
    if (e.startsWith("tag:")) {
      tags.add(e);
      continue;
    }
    const c = parseCidrOrIp(e);
    if (c) cidrs.push(c);
  }
  return { cidrs, tags };
}

/**
 * A target is allowed when its address (or whole prefix) lies within an allowed
 * CIDR, or when it is a known node (named, or addressed by one of its IPs) that
 * carries an allowed tag.
 */
export function isTargetAllowed(target: ResolvedTarget, allow: EgressAllowlist): boolean {
  for (const c of allow.cidrs) if (cidrContains(c, target.prefix)) return true;
  if (target.node && allow.tags.size > 0) {
    for (const t of target.node.tags) if (allow.tags.has(t)) return true;
  }
  return false;
}
