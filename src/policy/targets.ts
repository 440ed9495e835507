// Egress target resolution and the Tailnet's egress allowlist.
//
// Shared by the policy collector (which grants) and the egress kind (which reports
// per-target state): both must agree on what a host resolves to and whether it is
// allowed, so both call these.
import { attachedMemo } from "../k8s/attached.js";
import { type Cidr, canonicalIp, cidrContains, parseCidr, parseCidrOrIp } from "../net/cidr.js";

export interface NodeRef {
  givenName: string;
  name: string;
  ipAddresses: string[];
  tags: string[];
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

/**
 * Lookups over the node list, built once per render so that resolving a target is
 * O(1). Node addresses and the IP → node map are computed on first use only.
 */
export class NodeIndex {
  /** Lower-case base domain without surrounding dots, "" when unset. */
  readonly baseDomain: string;
  /** givenName (lower-case) → node; Headscale keeps given names unique. */
  private readonly byGivenName = new Map<string, NodeRef>();
  /** hostname (lower-case) → nodes; hostnames are not unique. */
  private readonly byName = new Map<string, NodeRef[]>();
  private byIp: Map<string, NodeRef> | null = null;
  private readonly addresses = new Map<NodeRef, Cidr | null>();

  constructor(
    private readonly nodes: readonly NodeRef[],
    baseDomain?: string,
  ) {
    this.baseDomain = normalizeDomain(baseDomain);
    for (const node of nodes) {
      if (node.givenName) this.byGivenName.set(node.givenName.toLowerCase(), node);
      if (node.name) {
        const key = node.name.toLowerCase();
        const list = this.byName.get(key);
        if (list) list.push(node);
        else this.byName.set(key, [node]);
      }
    }
  }

  /** A node name or MagicDNS FQDN (with or without the trailing dot) → node; null when unknown or ambiguous. */
  lookupName(host: string): NodeRef | null {
    let label = host.toLowerCase();
    if (label.endsWith(".")) label = label.slice(0, -1);
    if (label.includes(".")) {
      // A MagicDNS FQDN: <givenName>.<baseDomain>; any other dotted name is not ours.
      const suffix = `.${this.baseDomain}`;
      if (this.baseDomain === "" || !label.endsWith(suffix)) return null;
      const given = label.slice(0, -suffix.length);
      if (given === "" || given.includes(".")) return null;
      return this.byGivenName.get(given) ?? null;
    }
    const given = this.byGivenName.get(label);
    if (given) return given;
    // Fall back to the hostname, but only when it names exactly one node.
    const named = this.byName.get(label);
    return named?.length === 1 ? named[0] : null;
  }

  /** The node holding a canonical IP, if any. */
  nodeByIp(ip: string): NodeRef | null {
    if (!this.byIp) {
      this.byIp = new Map();
      for (const node of this.nodes) {
        for (const raw of node.ipAddresses) {
          const text = canonicalIp(raw);
          if (text) this.byIp.set(text, node);
        }
      }
    }
    return this.byIp.get(ip) ?? null;
  }

  /** The node's grant address as a host prefix: its IPv4, else its first IPv6; null without IPs. */
  addressOf(node: NodeRef): Cidr | null {
    let found = this.addresses.get(node);
    if (found === undefined) {
      found = null;
      for (const raw of node.ipAddresses) {
        const c = parseCidrOrIp(raw);
        if (!c || c.bits !== (c.family === 4 ? 32 : 128)) continue;
        if (c.family === 4) {
          found = c;
          break;
        }
        found ??= c;
      }
      this.addresses.set(node, found);
    }
    return found;
  }
}

/**
 * One index per node list and base domain: the list is the Headscale view's cached snapshot,
 * shared by every sync within its TTL (never modified), so its IP map (a parse of every node's
 * IPv4 and IPv6: ~150 ms at 20,000 nodes) is built once per snapshot, not once per render.
 */
const indexes = attachedMemo<readonly NodeRef[], Map<string, NodeIndex>>("nodeIpIndex");

export function buildNodeIndex(nodes: readonly NodeRef[], baseDomain?: string): NodeIndex {
  const byDomain = indexes.of(nodes, () => new Map());
  const key = baseDomain ?? "";
  let index = byDomain.get(key);
  if (!index) {
    index = new NodeIndex(nodes, baseDomain);
    byDomain.set(key, index);
  }
  return index;
}

/** The address written into grants for a node: its IPv4, else its first IPv6. */
export function nodeAddress(node: NodeRef): string | null {
  return new NodeIndex([node]).addressOf(node)?.addr ?? null;
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
  if (ip) return { kind: "ip", address: ip.addr, prefix: ip, node: index.nodeByIp(ip.addr) };
  const node = index.lookupName(h);
  const prefix = node ? index.addressOf(node) : null;
  return node && prefix ? { kind: "node", address: prefix.addr, prefix, node } : null;
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
