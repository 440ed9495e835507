/**
 * A TailnetSite's spec, read once and typed (`readSiteSpec`, for the parent and for every related site the
 * one-writer rule and the withdrawal look at), and what the CRD schema cannot catch (`siteSpecProblem`, the
 * module's `specProblem`): a default route outside the exit-node pair, a CIDR with host bits, two of its own
 * prefixes overlapping. The message names the field.
 */
import { cidrList } from "../../../api/validate.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { parseCidr } from "../../../net/cidr.js";
import { isExitNodePrefixes, isExitRoute } from "../../../net/exit.js";
import { exitRouteProblem } from "../../shared/routes.js";
import { type SitePrefix, sitePrefixes } from "./routes.js";

export interface SiteSpec {
  /** spec.tailnetRef.name */
  tailnet: string | undefined;
  /** The valid prefixes, deduplicated by canonical form, in address order. */
  prefixes: SitePrefix[];
  /** Deduplicated and sorted. */
  advertiserTags: string[];
  /** Exactly 0.0.0.0/0 and ::/0: the advertisers are exit nodes (src/net/exit.ts). */
  exitNode: boolean;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

export function readSiteSpec(site: K8sObject): SiteSpec {
  const spec = (site.spec ?? {}) as { prefixes?: unknown; advertiserTags?: unknown; tailnetRef?: { name?: unknown } };
  const prefixes = sitePrefixes(spec.prefixes);
  return {
    tailnet: typeof spec.tailnetRef?.name === "string" ? spec.tailnetRef.name : undefined,
    prefixes,
    advertiserTags: [...new Set(strings(spec.advertiserTags))].sort(),
    exitNode: isExitNodePrefixes(prefixes.map((p) => p.cidr)),
  };
}

/**
 * A site's default routes: only the exact pair 0.0.0.0/0 + ::/0 (an exit-node site) is meaningful —
 * Headscale approves and serves exit routes only as a pair, and a default route is no subnet route.
 */
function exitRoutes(values: unknown): string | undefined {
  if (!Array.isArray(values)) return undefined;
  const parsed = values.map((v) => parseCidr(String(v)));
  const cidrs = parsed.flatMap((r) => (r.ok ? [r.cidr] : []));
  if (parsed.length !== cidrs.length || isExitNodePrefixes(cidrs)) return undefined;
  const i = cidrs.findIndex(isExitRoute);
  if (i < 0) return undefined;
  return `spec.prefixes[${i}]: ${String(values[i])} is a default route: an exit-node site lists exactly 0.0.0.0/0 and ::/0 (Headscale approves and serves them only as a pair); other prefixes belong in another TailnetSite`;
}

/**
 * Prefixes that together cover 0.0.0.0/0 or ::/0 without a literal default route (shared/routes.ts): Headscale
 * would approve them as subnet routes, and the router would route everything without autoApprovers.exitNode.
 */
function exitRoutesInPieces(values: unknown): string | undefined {
  if (!Array.isArray(values)) return undefined;
  const exit = exitRouteProblem(values.map(String));
  if (!exit || exit.routes.some((r) => r.trim().endsWith("/0"))) return undefined;
  return `spec.prefixes: ${exit.routes.join(", ")} together cover ${exit.covers.join(", ")}: a default route in pieces; an exit-node site lists exactly 0.0.0.0/0 and ::/0 (Headscale approves them only through autoApprovers.exitNode)`;
}

/** The first problem of a schema-valid site spec, naming the field; undefined when there is none. */
export function siteSpecProblem(site: K8sObject): string | undefined {
  const prefixes = (site.spec as { prefixes?: unknown } | undefined)?.prefixes;
  return exitRoutes(prefixes) ?? exitRoutesInPieces(prefixes) ?? cidrList(prefixes, "prefixes");
}
