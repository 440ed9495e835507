// Merges the tailnet policy: the user's base policy (HuJSON) plus the generated
// parts, merged so that every base entry is kept unchanged:
// - tagOwners and autoApprovers.routes: base keys keep their value; a generated key
//   that also exists in the base extends it (base owners first, then the new ones
//   sorted); new keys are added after the base keys;
// - autoApprovers.exitNode: the base list is kept, generated tags not in it follow, sorted;
// - grants: generated grants are appended after the base grants, skipping exact
//   duplicates of a base grant;
// - every other section (acls, groups, hosts, ssh, nodeAttrs, tests, unknown keys…)
//   is passed through untouched.
// Headscale matches policy field names case-insensitively, so "TagOwners" in a base
// is the tagOwners section (never a second one).
import { canonicalJson, policyHash } from "./canonical.js";
import type { GeneratedPolicy, Grant } from "./generated-types.js";
import { parseHuJson } from "./hujson.js";

export interface GeneratedCounts {
  /** Generated tagOwners keys. */
  tags: number;
  /** Generated grants (before de-duplication against base grants). */
  grants: number;
  /** Generated autoApprovers.routes prefixes. */
  routes: number;
}

export type MergeResult =
  | {
      ok: true;
      /** The merged policy. Shares arrays and objects with the parsed base and with `gen`: read-only. */
      policy: Record<string, unknown>;
      /** Compact canonical JSON (sorted keys); what the hash covers, and a valid body to write. */
      canonical: string;
      hash: string;
      generated: GeneratedCounts;
    }
  | { ok: false; reason: "BaseInvalid" | "PolicyEmpty"; message: string };

class BaseInvalid extends Error {}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The key naming `field` in obj, matched case-insensitively; `field` itself when absent. */
function sectionKey(obj: Json, field: string, where: string): string {
  const lower = field.toLowerCase();
  const found = Object.keys(obj).filter((k) => k.toLowerCase() === lower);
  if (found.length > 1) {
    throw new BaseInvalid(`${where}${found.map((k) => JSON.stringify(k)).join(" and ")} name the same section`);
  }
  return found[0] ?? field;
}

function isSortedUnique(xs: readonly string[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1] < xs[i])) return false;
  return true;
}

function mergeKeyedLists(base: unknown, gen: Map<string, string[]>, label: string): Json {
  if (base !== null && base !== undefined && !isObject(base)) throw new BaseInvalid(`${label} must be an object`);
  const out: Json = isObject(base) ? { ...base } : {};
  for (const [key, values] of gen) {
    const fresh = isSortedUnique(values) ? values.slice() : [...new Set(values)].sort();
    const existing = Object.hasOwn(out, key) ? out[key] : null;
    if (existing === null || existing === undefined) {
      out[key] = fresh;
    } else if (Array.isArray(existing)) {
      const kept = new Set<unknown>(existing);
      out[key] = [...existing, ...fresh.filter((v) => !kept.has(v))];
    } else {
      throw new BaseInvalid(`${label}[${JSON.stringify(key)}] must be a list`);
    }
  }
  return out;
}

function mergeList(base: unknown, gen: readonly string[], label: string): unknown[] {
  if (base !== null && base !== undefined && !Array.isArray(base)) throw new BaseInvalid(`${label} must be a list`);
  const out: unknown[] = Array.isArray(base) ? [...base] : [];
  const kept = new Set<unknown>(out);
  for (const v of gen) if (!kept.has(v)) out.push(v);
  return out;
}

/**
 * Identity of a grant for de-duplication, or null for a base grant that cannot equal
 * a generated one (generated grants have exactly src, dst and ip, all string lists).
 */
function grantIdentity(g: unknown): string | null {
  if (!isObject(g)) return null;
  const keys = Object.keys(g);
  if (keys.length !== 3 || !Array.isArray(g.src) || !Array.isArray(g.dst) || !Array.isArray(g.ip)) return null;
  return JSON.stringify([g.src, g.dst, g.ip]);
}

/** Cheap pre-check so only grants that might repeat a base grant get a full identity. */
function roughKey(src: readonly unknown[], dst: readonly unknown[]): string {
  return `${String(src[0])}\u0000${String(dst[0])}\u0000${src.length}\u0000${dst.length}`;
}

function mergeGrants(base: unknown, gen: GeneratedPolicy["grants"], label: string): unknown[] {
  if (base !== null && base !== undefined && !Array.isArray(base)) throw new BaseInvalid(`${label} must be a list`);
  const out: unknown[] = Array.isArray(base) ? [...base] : [];
  const seen = new Set<string>();
  const rough = new Set<string>();
  for (const g of out) {
    const id = grantIdentity(g);
    if (id === null) continue;
    seen.add(id);
    rough.add(roughKey((g as Grant).src, (g as Grant).dst));
  }
  for (const g of gen) {
    if (rough.has(roughKey(g.src, g.dst))) {
      const id = JSON.stringify([g.src, g.dst, g.ip]);
      if (seen.has(id)) continue;
      seen.add(id);
    }
    out.push(g);
  }
  return out;
}

function merge(base: Json, gen: GeneratedPolicy): Json {
  const out: Json = { ...base };

  const ownersKey = sectionKey(base, "tagOwners", "");
  if (gen.tagOwners.size > 0 || out[ownersKey] != null) {
    out[ownersKey] = mergeKeyedLists(out[ownersKey], gen.tagOwners, ownersKey);
  }

  const grantsKey = sectionKey(base, "grants", "");
  if (gen.grants.length > 0 || out[grantsKey] != null) {
    out[grantsKey] = mergeGrants(out[grantsKey], gen.grants, grantsKey);
  }

  const approversKey = sectionKey(base, "autoApprovers", "");
  const approvers = out[approversKey];
  if (approvers !== null && approvers !== undefined && !isObject(approvers)) {
    throw new BaseInvalid(`${approversKey} must be an object`);
  }
  const exitNode = gen.autoApproverExitNode;
  if (gen.autoApproverRoutes.size > 0 || exitNode.length > 0 || approvers != null) {
    const merged: Json = isObject(approvers) ? { ...approvers } : {};
    const routesKey = sectionKey(merged, "routes", `${approversKey}: `);
    if (gen.autoApproverRoutes.size > 0 || merged[routesKey] != null) {
      merged[routesKey] = mergeKeyedLists(merged[routesKey], gen.autoApproverRoutes, `${approversKey}.${routesKey}`);
    }
    const exitKey = sectionKey(merged, "exitNode", `${approversKey}: `);
    if (exitNode.length > 0 || merged[exitKey] != null) {
      merged[exitKey] = mergeList(merged[exitKey], exitNode, `${approversKey}.${exitKey}`);
    }
    out[approversKey] = merged;
  }
  return out;
}

function nonEmptyList(obj: Json, field: string): boolean {
  const v = obj[sectionKey(obj, field, "")];
  return Array.isArray(v) && v.length > 0;
}

/**
 * Base policy text (undefined or blank: no base) + generated parts → the policy to
 * write, its canonical form and hash. Refuses a base that is not valid HuJSON or
 * whose managed sections have the wrong shape (BaseInvalid), and a result with
 * neither acls nor grants (PolicyEmpty).
 */
export function mergePolicy(baseText: string | undefined, gen: GeneratedPolicy): MergeResult {
  let base: Json = {};
  if (baseText !== undefined) {
    const parsed = parseHuJson(baseText);
    if (!parsed.ok) {
      return { ok: false, reason: "BaseInvalid", message: `base policy is not valid HuJSON: ${parsed.message}` };
    }
    base = parsed.value;
  }

  let policy: Json;
  try {
    policy = merge(base, gen);
  } catch (e) {
    if (e instanceof BaseInvalid) return { ok: false, reason: "BaseInvalid", message: `base policy: ${e.message}` };
    throw e;
  }

  if (!nonEmptyList(policy, "acls") && !nonEmptyList(policy, "grants")) {
    return {
      ok: false,
      reason: "PolicyEmpty",
      message: "refused: would lock everyone out: the rendered policy has no acls and no grants",
    };
  }

  const canonical = canonicalJson(policy);
  return {
    ok: true,
    policy,
    canonical,
    hash: policyHash(canonical),
    generated: { tags: gen.tagOwners.size, grants: gen.grants.length, routes: gen.autoApproverRoutes.size },
  };
}

/**
 * The rendered policy as indented text for humans (ConfigMap, `render` CLI, the PUT
 * body if preferred): same content and key order as the canonical form, so
 * hashOfLivePolicy of it equals the rendered hash. Not computed by mergePolicy: it
 * costs as much again as the canonical form.
 */
export function prettyPolicyText(policy: Record<string, unknown>): string {
  return canonicalJson(policy, 2);
}
