/**
 * DNS names of TailnetIngresses (pure; shared by the ingress kind and the Tailnet's dns-records
 * ConfigMap). The ingress-level name is <hostname>.<zone>; in http mode each expose adds
 * <host or hostname>.<zone> and its aliases. The zone is the baseDomain, or the namespace's subtree
 * of it when the Tailnet restricts flat names (dns-tenancy.ts). A name claimed by an older ingress
 * (creationTimestamp, then namespace/name) stays with it; the newer one gets DNSNameConflict and
 * its conflicting names are not published. An ingress with an invalid name publishes nothing and
 * so claims nothing: `nameConflicts` and `nameOwners` agree on who owns every name.
 */
import { isOlder, sortByAge } from "../../k8s/age.js";
import type { K8sObject } from "../../k8s/objects.js";
import { zoneOf } from "./dns-tenancy.js";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface IngressNames {
  /** <hostname>.<baseDomain> (or the bare hostname without a baseDomain). */
  dnsName: string;
  exposes: { name: string; dnsName: string; dnsAliases: string[] }[];
  /** Every name this ingress publishes, ingress-level first, deduplicated, in a stable order. */
  all: string[];
  /** Labels that are not valid DNS labels (InvalidDNSName). */
  invalid: string[];
  /** Where each invalid label was written, in spec order (one entry per field). */
  invalidAt: { field: string; label: string }[];
}

interface ExposeSpec {
  name?: string;
  host?: string;
  aliases?: unknown;
}

const fqdn = (label: string, baseDomain?: string) => (baseDomain ? `${label}.${baseDomain}` : label);

export function ingressNames(ingress: K8sObject, baseDomain: string | undefined): IngressNames {
  const spec = (ingress.spec ?? {}) as { hostname?: string; mode?: string; exposes?: ExposeSpec[] };
  const hostname = spec.hostname ?? ingress.metadata.name;
  const invalid: string[] = [];
  const invalidAt: { field: string; label: string }[] = [];
  const check = (label: string, field: string) => {
    if (!DNS_LABEL.test(label)) {
      invalidAt.push({ field, label });
      if (!invalid.includes(label)) invalid.push(label);
    }
    return label;
  };
  const dnsName = fqdn(check(hostname, "spec.hostname"), baseDomain);
  const http = spec.mode === "http";
  const exposes = (spec.exposes ?? []).map((e, i) => {
    const host = http && e.host ? check(e.host, `spec.exposes[${i}].host`) : hostname;
    const aliases = http && Array.isArray(e.aliases) ? e.aliases.filter((a): a is string => typeof a === "string") : [];
    return {
      name: e.name ?? "",
      dnsName: fqdn(host, baseDomain),
      dnsAliases: aliases.map((a, j) => fqdn(check(a, `spec.exposes[${i}].aliases[${j}]`), baseDomain)),
    };
  });
  const seen = new Set<string>([dnsName]);
  for (const e of exposes) {
    seen.add(e.dnsName);
    for (const a of e.dnsAliases) seen.add(a);
  }
  const all = [...seen];
  return { dnsName, exposes, all, invalid, invalidAt };
}

const tailnetOf = (o: K8sObject) => (o.spec as { tailnetRef?: { name?: string } } | undefined)?.tailnetRef?.name;
const idOf = (o: K8sObject) => `${o.metadata.namespace}/${o.metadata.name}`;
const byAge = (a: K8sObject, b: K8sObject) => (isOlder(a, b) ? -1 : isOlder(b, a) ? 1 : 0);

/** An ingress's names under its namespace's zone (dns-tenancy.ts: the baseDomain or its namespace's subtree). */
export const namesIn = (o: K8sObject, baseDomain: string | undefined, flat?: readonly string[]) =>
  ingressNames(o, zoneOf(o.metadata.namespace ?? "", baseDomain, flat));

/**
 * For one ingress: the names an older ingress of the same Tailnet already claims, with the
 * claimant (`namespace/name`), in the order of this ingress's names. Empty when it owns all of
 * them. Older ingresses being deleted or with an invalid name claim nothing.
 */
export function nameConflicts(
  ingress: K8sObject,
  all: readonly K8sObject[],
  baseDomain: string | undefined,
  flat?: readonly string[],
): { name: string; claimedBy: string }[] {
  const claimed = new Map<string, string>();
  const older = all
    .filter(
      (o) =>
        idOf(o) !== idOf(ingress) &&
        tailnetOf(o) === tailnetOf(ingress) &&
        !o.metadata.deletionTimestamp &&
        isOlder(o, ingress),
    )
    .sort(byAge);
  for (const o of older) {
    const names = namesIn(o, baseDomain, flat);
    if (names.invalid.length) continue;
    for (const n of names.all) if (!claimed.has(n)) claimed.set(n, idOf(o));
  }
  return namesIn(ingress, baseDomain, flat).all.flatMap((name) => {
    const claimedBy = claimed.get(name);
    return claimedBy ? [{ name, claimedBy }] : [];
  });
}

/**
 * The names an ingress actually publishes: its own minus those an older ingress claims and those
 * `held` says belong to someone else (a Headscale node, see dns-owners.ts).
 */
export function publishedNames(
  ingress: K8sObject,
  all: readonly K8sObject[],
  baseDomain: string | undefined,
  held: (name: string) => boolean = () => false,
  flat?: readonly string[],
): string[] {
  const names = namesIn(ingress, baseDomain, flat);
  if (names.invalid.length) return [];
  const lost = new Set(nameConflicts(ingress, all, baseDomain, flat).map((c) => c.name));
  return names.all.filter((n) => !lost.has(n) && !held(n));
}

/**
 * Every published name of a Tailnet's ingresses → the `namespace/name` of its owner (the oldest
 * claimant), computed once in O(n log n) for the Tailnet's dns-records ConfigMap. Ingresses with an
 * invalid name publish nothing; a name `held` by someone else (a Headscale node) is nobody's.
 */
export function nameOwners(
  ingresses: readonly K8sObject[],
  baseDomain: string | undefined,
  held: (name: string) => boolean = () => false,
  flat?: readonly string[],
): Map<string, string> {
  const owners = new Map<string, string>();
  const sorted = sortByAge(ingresses.filter((o) => !o.metadata.deletionTimestamp));
  for (const ing of sorted) {
    const names = namesIn(ing, baseDomain, flat);
    if (names.invalid.length) continue;
    for (const n of names.all) if (!owners.has(n) && !held(n)) owners.set(n, idOf(ing));
  }
  return owners;
}

/** A route's host (an Ingress rule's, a Gateway listener's) as a label of the zone, or undefined when it is not a name the tailnet can publish. */
export function hostLabel(host: string, zone: string | undefined): string | undefined {
  const h = host.replace(/\.$/, "");
  if (DNS_LABEL.test(h)) return h;
  if (zone && h.endsWith(`.${zone}`)) {
    const label = h.slice(0, -zone.length - 1);
    if (DNS_LABEL.test(label)) return label;
  }
  return undefined;
}
