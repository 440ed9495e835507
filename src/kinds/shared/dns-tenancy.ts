/**
 * Whose DNS names go where (Tailnet `spec.tenancy.dns`, pure). Unset, every namespace's ingresses
 * publish flat names, `<host>.<baseDomain>`, first come first served (ingress-names.ts) and never a
 * Headscale node's (dns-owners.ts). With `flatNamespaces` set, only the listed namespaces publish flat
 * names; every other namespace publishes under a subtree of its own, `<host>.<namespace>.<baseDomain>`.
 * No one else can publish there: a flat name is one label, and another namespace's subtree ends in its
 * own name (namespace names are unique DNS labels).
 */

const record = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** Tailnet spec.tenancy.dns.flatNamespaces (sorted, deduplicated); undefined when unset: every namespace is flat. */
export function flatNamespacesOf(tailnetSpec: unknown): string[] | undefined {
  const list = record(record(record(tailnetSpec).tenancy).dns).flatNamespaces;
  if (!Array.isArray(list)) return undefined;
  return [...new Set(list.filter((x): x is string => typeof x === "string"))].sort();
}

/** The domain a namespace's ingress names are appended to: the baseDomain, or the namespace's subtree of it. */
export function zoneOf(
  namespace: string,
  baseDomain: string | undefined,
  flatNamespaces: readonly string[] | undefined,
): string | undefined {
  if (!flatNamespaces || flatNamespaces.includes(namespace)) return baseDomain;
  return baseDomain ? `${namespace}.${baseDomain}` : namespace;
}

/**
 * The host name an ingress's agent node registers with (Headscale makes its MagicDNS label of it):
 * spec.hostname, or `<hostname>-<namespace>` for a namespace under its own subtree, so that its agent
 * does not take the flat label `<hostname>` as a node name (a node's name wins over any record,
 * dns-owners.ts). Cut to a DNS label by the agent (dnsLabel).
 */
export function agentHostname(
  hostname: string,
  namespace: string,
  flatNamespaces: readonly string[] | undefined,
): string | undefined {
  return !flatNamespaces || flatNamespaces.includes(namespace) ? undefined : `${hostname}-${namespace}`;
}
