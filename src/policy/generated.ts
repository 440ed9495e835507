// What the workload kinds contribute to the tailnet policy (api.md, Tailnet
// "Policy rendering"): tag owners, grants and auto-approved routes.
//
// Kind-agnostic: callers map their objects to CollectInput. The output is sorted
// throughout, so it is the same for any input order (and so is its hash).
import { type Cidr, parseCidr } from "../net/cidr.js";
import { INTERNET, isExitNodePrefixes, isExitRoute } from "../net/exit.js";
import { buildNodeIndex, compileAllowlist, isTargetAllowed, type NodeRef, resolveTargetHost } from "./targets.js";

/** One grant in Headscale 0.29 syntax, e.g. {src:["tag:a"], dst:["100.64.0.7"], ip:["tcp:5432"]}. */
export interface Grant {
  src: string[];
  dst: string[];
  ip: string[];
}

export interface GeneratedPolicy {
  /** tag → owners (Tailnet.spec.policy.tagOwners). */
  tagOwners: Map<string, string[]>;
  grants: Grant[];
  /** prefix → tags allowed to advertise it (autoApprovers.routes). */
  autoApproverRoutes: Map<string, string[]>;
  /**
   * Tags whose nodes Headscale approves as exit nodes (autoApprovers.exitNode), sorted: exit routes
   * are approved only through this list, never through a `routes` key (see src/net/exit.ts).
   */
  autoApproverExitNode: string[];
}

export interface CollectInput {
  /** Tailnet.spec.policy.tagOwners. */
  tagOwners: string[];
  /** Tailnet.spec.allowedEgressTargets: CIDRs or node tags. */
  allowedEgressTargets: string[];
  egresses: {
    namespace: string;
    name: string;
    tag: string;
    targets: { name: string; host: string; ports: { port: number; protocol?: string }[] }[];
  }[];
  ingresses: {
    namespace: string;
    name: string;
    tag: string;
    allowFrom: string[];
    ports: number[];
    /** allowFrom outside Tailnet.spec.allowedIngressSources: no grant (the tag is still owned). */
    denied: boolean;
  }[];
  sites: {
    namespace: string;
    name: string;
    prefixes: string[];
    advertiserTags: string[];
    allowFrom: string[];
    /** RouteConflict: renders nothing. */
    blocked: boolean;
  }[];
  gateways: {
    namespace: string;
    name: string;
    tag: string;
    routes: string[];
    /** spec.exitNode, only when the Tailnet's tenancy admits it (tenancy.ts exitNodeAdmission). */
    exitNode?: { allowFrom: string[] };
  }[];
  /** Headscale nodes, to resolve node names and MagicDNS names to tailnet IPs. */
  nodes: NodeRef[];
  /** Headscale dns.base_domain, for MagicDNS FQDNs. */
  baseDomain?: string;
}

export interface UnresolvedTarget {
  namespace: string;
  name: string;
  target: string;
  host: string;
}

/** Every egress target, with what it resolved to and whether a grant was generated. */
export interface EgressTargetOutcome extends UnresolvedTarget {
  /** Address written in the grant; null when the host is not resolvable yet. */
  address: string | null;
  /** False when unresolved or outside allowedEgressTargets (NoGrant unless the base grants it). */
  granted: boolean;
}

/** An input value left out of the policy because Headscale would reject the whole policy over it. */
export interface InvalidInput {
  namespace: string;
  name: string;
  field: "tag" | "advertiserTags" | "prefixes" | "routes" | "ports";
  value: string;
}

export interface CollectResult {
  generated: GeneratedPolicy;
  unresolved: UnresolvedTarget[];
  egressTargets: EgressTargetOutcome[];
  invalid: InvalidInput[];
}

/** api.md: "tag:" followed by 1–63 of [a-z0-9-], starting with a letter. */
const TAG_RE = /^tag:[a-z][a-z0-9-]{0,62}$/;

export function isValidTag(tag: string): boolean {
  return TAG_RE.test(tag);
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Note: Array.prototype.sort() without a comparator orders strings by UTF-16 code
// units, the same order as byCodeUnits, and is much faster on large arrays.

function sortedUnique(values: readonly string[]): string[] {
  // Most lists have one entry or are already sorted: skip the Set and the sort then.
  let ordered = true;
  for (let i = 1; i < values.length && ordered; i++) ordered = values[i - 1] < values[i];
  return ordered ? values.slice() : [...new Set(values)].sort();
}

/** "*" first, then by protocol, then numerically by port ("tcp:80" before "tcp:443"). */
function compareIpSpec(a: string, b: string): number {
  if (a === b) return 0;
  if (a === "*") return -1;
  if (b === "*") return 1;
  const ia = a.indexOf(":");
  const ib = b.indexOf(":");
  const protoOrder = byCodeUnits(a.slice(0, ia), b.slice(0, ib));
  return protoOrder || Number(a.slice(ia + 1)) - Number(b.slice(ib + 1)) || byCodeUnits(a, b);
}

function sortIpSpecs(specs: string[]): string[] {
  if (specs.length < 2) return specs;
  if (specs.includes("*")) return ["*"];
  if (specs.length === 2) {
    const order = compareIpSpec(specs[0], specs[1]);
    return order < 0 ? specs : order === 0 ? [specs[0]] : [specs[1], specs[0]];
  }
  return [...new Set(specs)].sort(compareIpSpec);
}

function isPort(p: number): boolean {
  return Number.isInteger(p) && p >= 1 && p <= 65535;
}

/** Grants keyed by (src, dst); the same pair from two objects unions its ip specs. */
class GrantSet {
  private readonly byKey = new Map<string, Grant>();

  add(src: string[], dst: string[], ip: string[]): void {
    const s = sortedUnique(src);
    const d = sortedUnique(dst);
    const key = `${s.join("\n")}\u0000${d.join("\n")}`;
    const entry = this.byKey.get(key);
    if (entry) entry.ip.push(...ip);
    else this.byKey.set(key, { src: s, dst: d, ip: ip.slice() });
  }

  sorted(): Grant[] {
    const keys = [...this.byKey.keys()].sort();
    const out: Grant[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const g = this.byKey.get(keys[i]) as Grant;
      // keys in canonical (sorted) order, so the canonical serializer can share the grant as it is
      out[i] = { dst: g.dst, ip: sortIpSpecs(g.ip), src: g.src };
    }
    return out;
  }
}

function sortedMap(m: Map<string, Set<string>>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const k of [...m.keys()].sort()) out.set(k, sortedUnique([...(m.get(k) ?? [])]));
  return out;
}

function byObject<T extends { namespace: string; name: string }>(extra: (x: T) => string) {
  return (a: T, b: T) =>
    byCodeUnits(a.namespace, b.namespace) || byCodeUnits(a.name, b.name) || byCodeUnits(extra(a), extra(b));
}

export function collectGenerated(input: CollectInput): CollectResult {
  const owners = sortedUnique(input.tagOwners);
  const tags = new Set<string>();
  const routes = new Map<string, Set<string>>();
  const grants = new GrantSet();
  const invalid: InvalidInput[] = [];
  const egressTargets: EgressTargetOutcome[] = [];

  const validTag = (namespace: string, name: string, field: InvalidInput["field"], tag: string): boolean => {
    if (isValidTag(tag)) return true;
    invalid.push({ namespace, name, field, value: tag });
    return false;
  };
  const validPort = (namespace: string, name: string, port: number): boolean => {
    if (isPort(port)) return true;
    invalid.push({ namespace, name, field: "ports", value: String(port) });
    return false;
  };
  const validCidrs = (namespace: string, name: string, field: InvalidInput["field"], list: string[]): Cidr[] => {
    const out: Cidr[] = [];
    for (const p of list) {
      const r = parseCidr(p.trim());
      if (r.ok) out.push(r.cidr);
      else invalid.push({ namespace, name, field, value: p });
    }
    return out;
  };
  const exitNode = new Set<string>();
  const approve = (prefix: string, approvers: string[]): void => {
    const set = routes.get(prefix) ?? new Set<string>();
    routes.set(prefix, set);
    for (const t of approvers) set.add(t);
  };

  for (const ing of input.ingresses) {
    if (!validTag(ing.namespace, ing.name, "tag", ing.tag)) continue;
    tags.add(ing.tag);
    if (ing.denied || ing.allowFrom.length === 0) continue;
    const ports = ing.ports.filter((p) => validPort(ing.namespace, ing.name, p));
    if (ports.length > 0)
      grants.add(
        ing.allowFrom,
        [ing.tag],
        ports.map((p) => `tcp:${p}`),
      );
  }

  const index = buildNodeIndex(input.nodes, input.baseDomain);
  const allow = compileAllowlist(input.allowedEgressTargets);
  for (const eg of input.egresses) {
    const tagOk = validTag(eg.namespace, eg.name, "tag", eg.tag);
    if (tagOk) tags.add(eg.tag);
    for (const t of eg.targets) {
      const resolved = resolveTargetHost(t.host, index);
      const outcome: EgressTargetOutcome = {
        namespace: eg.namespace,
        name: eg.name,
        target: t.name,
        host: t.host,
        address: resolved?.address ?? null,
        granted: false,
      };
      egressTargets.push(outcome);
      const specs = t.ports
        .filter((p) => validPort(eg.namespace, eg.name, p.port))
        .map((p) => `${(p.protocol ?? "tcp").toLowerCase()}:${p.port}`);
      if (!resolved || !tagOk || specs.length === 0 || !isTargetAllowed(resolved, allow)) continue;
      grants.add([eg.tag], [resolved.address], specs);
      outcome.granted = true;
    }
  }

  for (const site of input.sites) {
    if (site.blocked) continue;
    const advertisers = site.advertiserTags.filter((t) => validTag(site.namespace, site.name, "advertiserTags", t));
    const cidrs = validCidrs(site.namespace, site.name, "prefixes", site.prefixes);
    for (const t of advertisers) tags.add(t);
    if (isExitNodePrefixes(cidrs)) {
      // An exit-node site: approved through autoApprovers.exitNode, used through autogroup:internet.
      for (const t of advertisers) exitNode.add(t);
      if (site.allowFrom.length > 0) grants.add(site.allowFrom, [INTERNET], ["*"]);
      continue;
    }
    // A default route beside other prefixes (or one family alone) is InvalidSpec on the site: as a grant
    // destination Headscale would refuse the whole policy, as a routes key it approves no exit node.
    const prefixes: string[] = [];
    for (const c of cidrs) {
      if (isExitRoute(c))
        invalid.push({ namespace: site.namespace, name: site.name, field: "prefixes", value: c.text });
      else prefixes.push(c.text);
    }
    if (advertisers.length > 0) for (const p of prefixes) approve(p, advertisers);
    if (site.allowFrom.length > 0 && prefixes.length > 0) grants.add(site.allowFrom, prefixes, ["*"]);
  }

  for (const gw of input.gateways) {
    if (!validTag(gw.namespace, gw.name, "tag", gw.tag)) continue;
    tags.add(gw.tag);
    for (const c of validCidrs(gw.namespace, gw.name, "routes", gw.routes)) {
      // A default route in routes is InvalidSpec on the gateway (spec.exitNode is the way): as a routes key
      // it would approve no exit node, and the tenancy check would be bypassed.
      if (isExitRoute(c)) invalid.push({ namespace: gw.namespace, name: gw.name, field: "routes", value: c.text });
      else approve(c.text, [gw.tag]);
    }
    if (gw.exitNode) {
      // Headscale 0.29 approves exit routes only through autoApprovers.exitNode and refuses a default
      // route as a grant destination: the right to use the exit node is a grant to autogroup:internet.
      exitNode.add(gw.tag);
      if (gw.exitNode.allowFrom.length > 0) grants.add(gw.exitNode.allowFrom, [INTERNET], ["*"]);
    }
  }

  const tagOwners = new Map<string, string[]>();
  for (const t of [...tags].sort()) tagOwners.set(t, owners.slice());
  egressTargets.sort(byObject((x) => x.target));
  invalid.sort(byObject((x) => `${x.field}\u0000${x.value}`));
  return {
    generated: {
      tagOwners,
      grants: grants.sorted(),
      autoApproverRoutes: sortedMap(routes),
      autoApproverExitNode: [...exitNode].sort(),
    },
    unresolved: egressTargets
      .filter((o) => o.address === null)
      .map(({ namespace, name, target, host }) => ({ namespace, name, target, host })),
    egressTargets,
    invalid,
  };
}
