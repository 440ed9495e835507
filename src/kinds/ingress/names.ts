/**
 * DNS names of TailnetIngresses (pure; shared by the ingress kind and the Tailnet's dns-records
 * ConfigMap). The ingress-level name is <hostname>.<baseDomain>; in http mode each expose adds
 * <host or hostname>.<baseDomain> and its aliases. A name claimed by an older ingress
 * (creationTimestamp, then namespace/name) stays with it; the newer one gets DNSNameConflict and
 * its conflicting names are not published.
 */
import type { K8sObject } from "../../k8s/objects.js";
import { isOlder } from "../site/conflict.js";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface IngressNames {
  /** <hostname>.<baseDomain> (or the bare hostname without a baseDomain). */
  dnsName: string;
  exposes: { name: string; dnsName: string; dnsAliases: string[] }[];
  /** Every name this ingress publishes, ingress-level first, deduplicated, in a stable order. */
  all: string[];
  /** Labels that are not valid DNS labels (InvalidDNSName). */
  invalid: string[];
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
  const check = (label: string) => {
    if (!DNS_LABEL.test(label) && !invalid.includes(label)) invalid.push(label);
    return label;
  };
  const dnsName = fqdn(check(hostname), baseDomain);
  const http = spec.mode === "http";
  const exposes = (spec.exposes ?? []).map((e) => {
    const host = http && e.host ? check(e.host) : hostname;
    const aliases = http && Array.isArray(e.aliases) ? e.aliases.filter((a): a is string => typeof a === "string") : [];
    return {
      name: e.name ?? "",
      dnsName: fqdn(host, baseDomain),
      dnsAliases: aliases.map((a) => fqdn(check(a), baseDomain)),
    };
  });
  const all = [...new Set([dnsName, ...exposes.flatMap((e) => [e.dnsName, ...e.dnsAliases])])];
  return { dnsName, exposes, all, invalid };
}

const tailnetOf = (o: K8sObject) => (o.spec as { tailnetRef?: { name?: string } } | undefined)?.tailnetRef?.name;

/**
 * For one ingress: the names an older ingress of the same Tailnet already claims, with the
 * claimant (`namespace/name`). Empty when it owns all its names.
 */
export function nameConflicts(
  ingress: K8sObject,
  all: readonly K8sObject[],
  baseDomain: string | undefined,
): { name: string; claimedBy: string }[] {
  const mine = ingressNames(ingress, baseDomain).all;
  const out: { name: string; claimedBy: string }[] = [];
  const older = all
    .filter(
      (o) =>
        !(o.metadata.namespace === ingress.metadata.namespace && o.metadata.name === ingress.metadata.name) &&
        tailnetOf(o) === tailnetOf(ingress) &&
        !o.metadata.deletionTimestamp &&
        isOlder(o, ingress),
    )
    .sort((a, b) => (isOlder(a, b) ? -1 : 1));
  for (const name of mine) {
    const owner = older.find((o) => ingressNames(o, baseDomain).all.includes(name));
    if (owner) out.push({ name, claimedBy: `${owner.metadata.namespace}/${owner.metadata.name}` });
  }
  return out;
}

/** The names an ingress actually publishes: its own minus those an older ingress claims. */
export function publishedNames(
  ingress: K8sObject,
  all: readonly K8sObject[],
  baseDomain: string | undefined,
): string[] {
  const lost = new Set(nameConflicts(ingress, all, baseDomain).map((c) => c.name));
  const names = ingressNames(ingress, baseDomain);
  if (names.invalid.length) return [];
  return names.all.filter((n) => !lost.has(n));
}

/**
 * Every published name of a Tailnet's ingresses → the `namespace/name` of its owner (the oldest
 * claimant), computed once in O(n log n) for the Tailnet's dns-records ConfigMap. Ingresses with an
 * invalid name publish nothing.
 */
export function nameOwners(ingresses: readonly K8sObject[], baseDomain: string | undefined): Map<string, string> {
  const owners = new Map<string, string>();
  const byAge = ingresses.filter((o) => !o.metadata.deletionTimestamp).sort((a, b) => (isOlder(a, b) ? -1 : 1));
  for (const ing of byAge) {
    const names = ingressNames(ing, baseDomain);
    if (names.invalid.length) continue;
    for (const n of names.all) if (!owners.has(n)) owners.set(n, `${ing.metadata.namespace}/${ing.metadata.name}`);
  }
  return owners;
}
