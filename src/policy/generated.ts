// What the workload kinds contribute to the tailnet policy (api.md, Tailnet
// "Policy rendering"): tag owners, grants and auto-approved routes.
//
// Kind-agnostic: callers map their objects to CollectInput. The output is sorted
// throughout, so it is the same for any input order (and so is its hash).
import { type Cidr, parseCidr } from "../net/cidr.js";
import { coveredDefaultRoutes, INTERNET, isExitNodePrefixes, isExitRoute } from "../net/exit.js";
import {
  buildNodeIndex,
  compileAllowlist,
  type EgressAllowlist,
  isTargetAllowed,
  type NodeIndex,
  type NodeRef,
  resolveTargetHost,
} from "./targets.js";

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
  field: "tag" | "advertiserTags" | "prefixes" | "routes" | "ports" | "targets";
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

/**
 * What one object contributes to the generated policy, before merging: its tags, grants (ip specs as the
 * object lists them), approved routes, exit-node tags, left-out values and egress target outcomes. The
 * Tailnet's render memoises these per object (src/kinds/composite/tailnet/render-memo.ts), so a contribution is never
 * modified after it is made: combining copies what it keeps.
 */
export interface Contribution {
  /** Whose contribution this is (the objects' "kind/namespace/name" ids order the left-out lists). */
  owner: ContributionOwner;
  tags: string[];
  grants: Grant[];
  routes: [prefix: string, approvers: string[]][];
  exitNode: string[];
  invalid: InvalidInput[];
  egressTargets: EgressTargetOutcome[];
}

export interface ContributionOwner {
  kind: "ingress" | "egress" | "site" | "gateway";
  namespace: string;
  name: string;
}

/** What an egress contribution reads besides the object: the node list (resolution) and the allowlist. */
export interface EgressContext {
  index: NodeIndex;
  allow: EgressAllowlist;
}

export function egressContext(
  input: Pick<CollectInput, "nodes" | "baseDomain" | "allowedEgressTargets">,
): EgressContext {
  return { index: buildNodeIndex(input.nodes, input.baseDomain), allow: compileAllowlist(input.allowedEgressTargets) };
}

function emptyContribution(kind: ContributionOwner["kind"], o: { namespace: string; name: string }): Contribution {
  return {
    owner: { kind, namespace: o.namespace, name: o.name },
    tags: [],
    grants: [],
    routes: [],
    exitNode: [],
    invalid: [],
    egressTargets: [],
  };
}

/**
 * The routes of `cidrs` that are no exit route in pieces: those of a family the set covers whole
 * (coveredDefaultRoutes: 0.0.0.0/1 + 128.0.0.0/1, …) are recorded as invalid under `field`.
 */
function withoutCoveredFamilies(c: Contribution, cidrs: Cidr[], field: "prefixes" | "routes"): Cidr[] {
  const covered = coveredDefaultRoutes(cidrs.filter((x) => !isExitRoute(x)));
  if (covered.length === 0) return cidrs;
  const families = new Set(covered.map((r) => (r.includes(":") ? 6 : 4)));
  const { namespace, name } = c.owner;
  for (const x of cidrs)
    if (families.has(x.family) && !isExitRoute(x)) c.invalid.push({ namespace, name, field, value: x.text });
  return cidrs.filter((x) => !families.has(x.family) || isExitRoute(x));
}

/** Validators that record what they refuse in `c.invalid`. */
function validators(c: Contribution, namespace: string, name: string) {
  return {
    tag: (field: InvalidInput["field"], tag: string): boolean => {
      if (isValidTag(tag)) return true;
      c.invalid.push({ namespace, name, field, value: tag });
      return false;
    },
    port: (port: number): boolean => {
      if (isPort(port)) return true;
      c.invalid.push({ namespace, name, field: "ports", value: String(port) });
      return false;
    },
    cidrs: (field: InvalidInput["field"], list: string[]): Cidr[] => {
      const out: Cidr[] = [];
      for (const p of list) {
        const r = parseCidr(p.trim());
        if (r.ok) out.push(r.cidr);
        else c.invalid.push({ namespace, name, field, value: p });
      }
      return out;
    },
  };
}

export function ingressContribution(ing: CollectInput["ingresses"][number]): Contribution {
  const c = emptyContribution("ingress", ing);
  const valid = validators(c, ing.namespace, ing.name);
  if (!valid.tag("tag", ing.tag)) return c;
  c.tags.push(ing.tag);
  if (ing.denied || ing.allowFrom.length === 0) return c;
  const ports = ing.ports.filter((p) => valid.port(p));
  if (ports.length > 0) c.grants.push({ src: ing.allowFrom, dst: [ing.tag], ip: ports.map((p) => `tcp:${p}`) });
  return c;
}

export function egressContribution(eg: CollectInput["egresses"][number], ctx: EgressContext): Contribution {
  const c = emptyContribution("egress", eg);
  const valid = validators(c, eg.namespace, eg.name);
  const tagOk = valid.tag("tag", eg.tag);
  if (tagOk) c.tags.push(eg.tag);
  for (const t of eg.targets) {
    const resolved = resolveTargetHost(t.host, ctx.index);
    const outcome: EgressTargetOutcome = {
      namespace: eg.namespace,
      name: eg.name,
      target: t.name,
      host: t.host,
      address: resolved?.address ?? null,
      granted: false,
    };
    c.egressTargets.push(outcome);
    const specs = t.ports
      .filter((p) => valid.port(p.port))
      .map((p) => `${(p.protocol ?? "tcp").toLowerCase()}:${p.port}`);
    if (!resolved || !tagOk || specs.length === 0 || !isTargetAllowed(resolved, ctx.allow)) continue;
    // A default route as a grant destination makes Headscale refuse the whole policy (types.go
    // ErrGrantDefaultRouteCIDR), even where allowedEgressTargets holds a /0: the target is left out.
    if (isExitRoute(resolved.prefix)) {
      c.invalid.push({ namespace: eg.namespace, name: eg.name, field: "targets", value: t.host });
      continue;
    }
    c.grants.push({ src: [eg.tag], dst: [resolved.address], ip: specs });
    outcome.granted = true;
  }
  return c;
}

export function siteContribution(site: CollectInput["sites"][number]): Contribution {
  const c = emptyContribution("site", site);
  if (site.blocked) return c;
  const valid = validators(c, site.namespace, site.name);
  const advertisers = site.advertiserTags.filter((t) => valid.tag("advertiserTags", t));
  const parsed = valid.cidrs("prefixes", site.prefixes);
  const cidrs = isExitNodePrefixes(parsed) ? parsed : withoutCoveredFamilies(c, parsed, "prefixes");
  c.tags.push(...advertisers);
  if (isExitNodePrefixes(cidrs)) {
    // An exit-node site: approved through autoApprovers.exitNode, used through autogroup:internet.
    c.exitNode.push(...advertisers);
    if (site.allowFrom.length > 0) c.grants.push({ src: site.allowFrom, dst: [INTERNET], ip: ["*"] });
    return c;
  }
  // A default route beside other prefixes (or one family alone) is InvalidSpec on the site: as a grant
  // destination Headscale would refuse the whole policy, as a routes key it approves no exit node.
  const prefixes: string[] = [];
  for (const r of cidrs) {
    if (isExitRoute(r))
      c.invalid.push({ namespace: site.namespace, name: site.name, field: "prefixes", value: r.text });
    else prefixes.push(r.text);
  }
  if (advertisers.length > 0) for (const p of prefixes) c.routes.push([p, advertisers]);
  if (site.allowFrom.length > 0 && prefixes.length > 0)
    c.grants.push({ src: site.allowFrom, dst: prefixes, ip: ["*"] });
  return c;
}

export function gatewayContribution(gw: CollectInput["gateways"][number]): Contribution {
  const c = emptyContribution("gateway", gw);
  const valid = validators(c, gw.namespace, gw.name);
  if (!valid.tag("tag", gw.tag)) return c;
  c.tags.push(gw.tag);
  for (const r of withoutCoveredFamilies(c, valid.cidrs("routes", gw.routes), "routes")) {
    // A default route in routes is InvalidSpec on the gateway (spec.exitNode is the way): as a routes key
    // it would approve no exit node, and the tenancy check would be bypassed.
    if (isExitRoute(r)) c.invalid.push({ namespace: gw.namespace, name: gw.name, field: "routes", value: r.text });
    else c.routes.push([r.text, [gw.tag]]);
  }
  if (gw.exitNode) {
    // Headscale 0.29 approves exit routes only through autoApprovers.exitNode and refuses a default
    // route as a grant destination: the right to use the exit node is a grant to autogroup:internet.
    c.exitNode.push(gw.tag);
    if (gw.exitNode.allowFrom.length > 0) c.grants.push({ src: gw.exitNode.allowFrom, dst: [INTERNET], ip: ["*"] });
  }
  return c;
}

/**
 * Routes that, approved for one tag together with those of other objects, would make that tag's nodes route
 * a whole address family (coveredDefaultRoutes): the one object's own routes are judged when it is made, but
 * two sites (or a site naming a gateway's tag) can each bring a half. Walking the contributions in order, the
 * route that completes the cover is not approved for that tag and is reported on its object. Only tags whose
 * union covers a family are walked, so the usual render pays one union per tag.
 */
function exitRoutesAcross(contributions: readonly Contribution[]): {
  dropped: Map<Contribution, Set<string>>;
  invalid: InvalidInput[];
} {
  const byTag = new Map<string, Cidr[]>();
  const parsedOf = new Map<string, Cidr | null>();
  const parse = (prefix: string): Cidr | null => {
    let c = parsedOf.get(prefix);
    if (c === undefined) {
      const r = parseCidr(prefix);
      c = r.ok ? r.cidr : null;
      parsedOf.set(prefix, c);
    }
    return c;
  };
  for (const c of contributions) {
    for (const [prefix, approvers] of c.routes) {
      const cidr = parse(prefix);
      if (!cidr) continue;
      for (const t of approvers) {
        const list = byTag.get(t);
        if (list) list.push(cidr);
        else byTag.set(t, [cidr]);
      }
    }
  }
  const flagged = new Set([...byTag].filter(([, cidrs]) => coveredDefaultRoutes(cidrs).length > 0).map(([t]) => t));
  const dropped = new Map<Contribution, Set<string>>();
  const invalid: InvalidInput[] = [];
  if (flagged.size === 0) return { dropped, invalid };
  const kept = new Map<string, Cidr[]>();
  for (const c of contributions) {
    for (const [prefix, approvers] of c.routes) {
      const cidr = parse(prefix);
      if (!cidr) continue;
      let left = false;
      for (const t of approvers) {
        if (!flagged.has(t)) continue;
        const so = kept.get(t) ?? [];
        if (coveredDefaultRoutes([...so, cidr]).length > 0) {
          const set = dropped.get(c) ?? new Set<string>();
          dropped.set(c, set);
          set.add(`${prefix}\u0000${t}`);
          left = true;
        } else {
          kept.set(t, [...so, cidr]);
        }
      }
      if (left) {
        const field = c.owner.kind === "site" ? "prefixes" : "routes";
        invalid.push({ namespace: c.owner.namespace, name: c.owner.name, field, value: prefix });
      }
    }
  }
  return { dropped, invalid };
}

/**
 * The contributions merged (in the order given: ingresses, egresses, sites, gateways, as collectGenerated
 * walks them) into the generated policy. Every output list is sorted, so the result does not depend on
 * that order; the contributions are only read.
 */
export function combineContributions(
  tagOwners: readonly string[],
  contributions: Iterable<Contribution>,
): CollectResult {
  const owners = sortedUnique(tagOwners);
  const tags = new Set<string>();
  const routes = new Map<string, Set<string>>();
  const grants = new GrantSet();
  const exitNode = new Set<string>();
  const invalid: InvalidInput[] = [];
  const egressTargets: EgressTargetOutcome[] = [];
  const list = [...contributions];
  const split = exitRoutesAcross(list);
  for (const c of list) {
    for (const t of c.tags) tags.add(t);
    for (const g of c.grants) grants.add(g.src, g.dst, g.ip);
    const dropped = split.dropped.get(c);
    for (const [prefix, approvers] of c.routes) {
      const set = routes.get(prefix) ?? new Set<string>();
      routes.set(prefix, set);
      for (const t of approvers) if (!dropped?.has(`${prefix}\u0000${t}`)) set.add(t);
      if (set.size === 0) routes.delete(prefix);
    }
    for (const t of c.exitNode) exitNode.add(t);
    if (c.invalid.length > 0) invalid.push(...c.invalid);
    if (c.egressTargets.length > 0) egressTargets.push(...c.egressTargets);
  }
  invalid.push(...split.invalid);
  const tagOwnersOut = new Map<string, string[]>();
  for (const t of [...tags].sort()) tagOwnersOut.set(t, owners.slice());
  egressTargets.sort(byObject((x) => x.target));
  invalid.sort(byObject((x) => `${x.field}\u0000${x.value}`));
  return {
    generated: {
      tagOwners: tagOwnersOut,
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

/** Every object's contribution, in the order the render merges them: ingresses, egresses, sites, gateways. */
export function collectContributions(input: CollectInput): Contribution[] {
  const ctx = egressContext(input);
  return [
    ...input.ingresses.map(ingressContribution),
    ...input.egresses.map((eg) => egressContribution(eg, ctx)),
    ...input.sites.map(siteContribution),
    ...input.gateways.map(gatewayContribution),
  ];
}

export function collectGenerated(input: CollectInput): CollectResult {
  return combineContributions(input.tagOwners, collectContributions(input));
}
