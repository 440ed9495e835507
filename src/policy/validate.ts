/**
 * One object's contribution judged on its own before the merge, by what Headscale 0.29's policy validator
 * refuses of the parts the operator generates (juanfont/headscale hscontrol/policy/v2/types.go
 * Policy.validate; test/fakes/headscale/policy.ts models the whole of it): a grant source or destination
 * naming a group or host the base does not define, or a tag no tagOwners entry owns; an autogroup on the
 * wrong side; a raw default route as a destination (ErrGrantDefaultRouteCIDR). Headscale refuses the whole
 * policy over any of these, so a contribution that has one is left out (its tags stay owned: another object's
 * grant may name them) and everyone else's is merged. What only Headscale can tell (its `tests`, users) is
 * found afterwards with POST /api/v1/policy/check (src/kinds/composite/tailnet/isolate.ts).
 */
import { parseCidr } from "../net/cidr.js";
import type { Contribution } from "./contribution.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/** What a base policy defines, by the section names Headscale matches case-insensitively. */
export interface BaseNames {
  groups: ReadonlySet<string>;
  hosts: ReadonlySet<string>;
  tags: ReadonlySet<string>;
}

function keysOf(base: Json, section: string): Set<string> {
  const key = Object.keys(base).find((k) => k.toLowerCase() === section.toLowerCase());
  const v = key === undefined ? undefined : base[key];
  return new Set(isObject(v) ? Object.keys(v) : []);
}

export function baseNames(base: Json | undefined): BaseNames {
  const b = base ?? {};
  return { groups: keysOf(b, "groups"), hosts: keysOf(b, "hosts"), tags: keysOf(b, "tagOwners") };
}

const SRC_AUTOGROUPS = ["autogroup:member", "autogroup:tagged", "autogroup:danger-all"];
const DST_AUTOGROUPS = ["autogroup:internet", "autogroup:member", "autogroup:tagged", "autogroup:self"];

/** Headscale's words for a refused alias on one side of a grant; undefined when it is accepted. */
function aliasProblem(alias: string, side: "src" | "dst", names: BaseNames, tags: ReadonlySet<string>) {
  if (alias === "*" || alias.includes("@")) return undefined;
  if (alias.startsWith("autogroup:")) {
    if (side === "src") {
      if (alias === "autogroup:internet") return "autogroup:internet can only be used in ACL destinations";
      if (alias === "autogroup:self") return '"autogroup:self" not valid on the src side of a rule';
      if (!SRC_AUTOGROUPS.includes(alias))
        return `autogroup not supported for ACL sources, can be ${SRC_AUTOGROUPS.join(" ")}`;
      return undefined;
    }
    if (alias === "autogroup:danger-all") return "cannot use autogroup:danger-all as a dst";
    if (!DST_AUTOGROUPS.includes(alias))
      return `autogroup not supported for ACL destinations, can be ${DST_AUTOGROUPS.join(" ")}`;
    return undefined;
  }
  if (alias.startsWith("group:")) return names.groups.has(alias) ? undefined : "group not defined in policy";
  if (alias.startsWith("tag:")) return tags.has(alias) || names.tags.has(alias) ? undefined : "tag not found";
  const prefix = alias.includes("/") ? parseCidr(alias) : parseCidr(`${alias}/${alias.includes(":") ? 128 : 32}`);
  if (prefix.ok) {
    return side === "dst" && prefix.cidr.bits === 0
      ? 'a grant may not name a default route (Headscale: to allow all IP addresses, use "*" or "autogroup:internet")'
      : undefined;
  }
  return names.hosts.has(alias) ? undefined : "host not defined in policy";
}

/** The first problem Headscale would refuse the whole policy over in `c`; undefined when there is none. */
export function contributionProblem(c: Contribution, names: BaseNames, tags: ReadonlySet<string>): string | undefined {
  for (const g of c.grants) {
    for (const src of g.src) {
      const p = aliasProblem(src, "src", names, tags);
      if (p) return `grant source ${JSON.stringify(src)}: ${p}`;
    }
    for (const dst of g.dst) {
      const p = aliasProblem(dst, "dst", names, tags);
      if (p) return `grant destination ${JSON.stringify(dst)}: ${p}`;
      if (dst === "autogroup:self" && g.src.some((s) => !(s.startsWith("group:") || s.includes("@")))) {
        return `grant destination "autogroup:self": autogroup:self can only be used with users, groups, or supported autogroups`;
      }
    }
  }
  return undefined;
}

/** A contribution without its grants, routes and exit-node approvals: what is kept of one left out (its tags). */
export function tagsOnly(c: Contribution): Contribution {
  return { ...c, grants: [], routes: [], exitNode: [], invalid: [] };
}

/**
 * The contributions as merged: each one `contributionProblem` refuses is replaced by its tags alone, with the
 * problem. Every contribution's tags count as owned (they are all kept in tagOwners).
 */
export function screenContributions(
  base: Json | undefined,
  contributions: readonly Contribution[],
): { merged: Contribution[]; refused: { contribution: Contribution; message: string }[] } {
  const names = baseNames(base);
  const tags = new Set<string>();
  for (const c of contributions) for (const t of c.tags) tags.add(t);
  const merged: Contribution[] = [];
  const refused: { contribution: Contribution; message: string }[] = [];
  for (const c of contributions) {
    const problem = c.grants.length ? contributionProblem(c, names, tags) : undefined;
    if (problem === undefined) merged.push(c);
    else {
      merged.push(tagsOnly(c));
      refused.push({ contribution: c, message: problem });
    }
  }
  return { merged, refused };
}
