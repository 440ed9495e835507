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
 * `<hostname>-<namespace>`, in every namespace — never the bare `<hostname>` users type. The user-facing
 * name is a record in the Tailnet's records file (ingress-names.ts), and a record gives way to any node
 * that holds its name (dns-owners.ts): so an administrator's machine `vault` joining after a tenant's
 * ingress `vault` gets the bare name (Headscale hands the agent none of it) and the record is dropped
 * (issue 31 item 7). Were the agent registered as `vault`, Headscale would give the machine `vault-1`
 * (juanfont/headscale hscontrol/state/node_store.go resolveGivenName) and `vault.<baseDomain>` would stay
 * the tenant's agent — a node name no record rule can take back. An agent registered under the bare name
 * by an earlier version is renamed when its pod restarts with the new TS_HOSTNAME: Headscale 0.29
 * re-derives an auto-derived given name from a changed hostname (hscontrol/state/state.go). Cut to a DNS
 * label by the agent (dnsLabel). `flatNamespaces` no longer changes the agent's name, only where the
 * records go (zoneOf).
 */
export function agentHostname(
  hostname: string,
  namespace: string,
  _flatNamespaces?: readonly string[] | undefined,
): string {
  return `${hostname}-${namespace}`;
}
