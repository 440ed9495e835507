// What the workload kinds contribute to the tailnet policy (api.md, Tailnet
// "Policy rendering"): tag owners, grants and auto-approved routes.
//
// Kind-agnostic: callers map their objects to CollectInput. The output is sorted
// throughout, so it is the same for any input order (and so is its hash).
import { type Cidr, parseCidr } from "../net/cidr.js";
import { coveredDefaultRoutes } from "../net/exit.js";
import {
  type Contribution,
  egressContext,
  egressContribution,
  gatewayContribution,
  ingressContribution,
  siteContribution,
} from "./contribution.js";
import type { CollectInput, CollectResult, EgressTargetOutcome, Grant, InvalidInput } from "./generated-types.js";

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
