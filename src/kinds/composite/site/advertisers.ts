/**
 * status.advertisers[] of a TailnetSite: each node carrying an advertiser tag that announces a site prefix,
 * and whether all of them are approved. It is the operator's only memory of what was approved (the server
 * keeps none): re-approving what the last status recorded counts as a replay.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { canonicalRoute } from "./routes.js";

/** Canonical prefixes an advertiser of the site's last status had fully approved. */
export function previouslyApproved(site: K8sObject): Set<string> {
  const out = new Set<string>();
  for (const a of previousAdvertisers(site)) {
    if (!a.approved) continue;
    for (const p of a.prefixes) {
      const c = canonicalRoute(p);
      if (c) out.add(c);
    }
  }
  return out;
}

/** One entry of status.advertisers[]. */
export interface AdvertiserStatus {
  node: string;
  prefixes: string[];
  approved: boolean;
}

/** The advertisers[] of the last status: the memory of what was approved (the server keeps none). */
export function previousAdvertisers(site: K8sObject): AdvertiserStatus[] {
  const status = site.status as { advertisers?: unknown } | undefined;
  if (!Array.isArray(status?.advertisers)) return [];
  return status.advertisers.flatMap((a: unknown) => {
    const x = a as Partial<AdvertiserStatus> | null;
    if (!x || typeof x.node !== "string" || !Array.isArray(x.prefixes) || typeof x.approved !== "boolean") return [];
    return [
      { node: x.node, prefixes: x.prefixes.filter((p): p is string => typeof p === "string"), approved: x.approved },
    ];
  });
}
