/**
 * DNS names an ingress may not publish because a Headscale node holds them (pure; shared by the
 * ingress kind and the Tailnet's dns-records file, so the status and the file agree).
 *
 * Why: tailscale's quad-100 resolver answers from control's extra records before the MagicDNS
 * names of nodes (tailscale v1.102.3 net/dns/resolver/tsdns.go resolveLocal consults `hosts`, the
 * DNS.ExtraRecords, first; ipn/ipnlocal/node_backend.go dnsConfigForNetmap appends a record's
 * address to a name's), and Headscale hands the records file to clients as it is (juanfont/headscale
 * hscontrol/dns/extrarecords.go, hscontrol/types/config.go SetExtraRecords). A record named like a
 * node would take that node's connections. So a node's name always wins, also when the node appears
 * after the ingress published it.
 *
 * A node's names are its given name (its MagicDNS label; Headscale 0.29 suffixes a newcomer's with
 * `-1`, `-2`, … on collision, hscontrol/state/node_store.go resolveGivenName) and the hostname it
 * reported. An ingress's agent nodes register as `<hostname>-<namespace>` (dns-tenancy.ts agentHostname);
 * an earlier version registered them under the ingress's hostname, so that one label of theirs is left
 * to the ingresses (arbitrated by age, ingress-names.ts) until they roll to the new name; their other
 * names (`grafana-monitoring`, a renamed replica's `grafana-1`) are reserved like any node's.
 */
import type { HsNode } from "../../headscale/types.js";
import type { K8sObject } from "../../k8s/objects.js";
import { zoneOf } from "./dns-tenancy.js";
import { namesIn } from "./ingress-names.js";
import { managedNodes } from "./node-owners.js";

const normalize = (name: string) => {
  const n = name.trim().toLowerCase();
  return n.endsWith(".") ? n.replace(/\.+$/, "") : n;
};

/** `nameKey` for one baseDomain, normalized once (the Tailnet keys every node's names with it). */
export function nameKeyer(baseDomain: string | undefined): (name: string) => string {
  const suffix = baseDomain ? `.${normalize(baseDomain)}` : "";
  return (name) => {
    const key = normalize(name);
    return suffix && key.endsWith(suffix) ? key.slice(0, -suffix.length) : key;
  };
}

/** DNS compares names case-insensitively; a trailing dot and the baseDomain do not make another name. */
export function nameKey(name: string, baseDomain: string | undefined): string {
  return nameKeyer(baseDomain)(name);
}

/** A name of an ingress that something else holds: `heldBy` says who, for the condition message. */
export interface NameHolder {
  name: string;
  heldBy: string;
}

/** Name key → holder, for every name a node holds. */
export type ReservedNames = ReadonlyMap<string, string>;

const hostnameOf = (o: K8sObject) => (o.spec as { hostname?: unknown } | undefined)?.hostname;

/**
 * Every node name (key) of the Tailnet's nodes → "Headscale node <id>". `ingresses` are the Tailnet's
 * TailnetIngresses: the hostname label of an agent node one of them registered (with a key it minted,
 * node-owners.ts — not a node merely carrying its tag) is theirs (see the file comment).
 */
export function reservedNames(
  nodes: readonly HsNode[],
  ingresses: readonly K8sObject[],
  tagPrefix: string,
  baseDomain: string | undefined,
  flat?: readonly string[],
  ttlSeconds = 24 * 3600,
): ReservedNames {
  const key = nameKeyer(baseDomain);
  const ownLabel = new Map<K8sObject, string>();
  for (const o of ingresses) {
    const h = hostnameOf(o);
    const label = typeof h === "string" ? h : o.metadata.name;
    // keyed as published: an ingress under its namespace's subtree does not own the flat label
    const zone = zoneOf(o.metadata.namespace ?? "", baseDomain, flat);
    ownLabel.set(o, key(zone ? `${label}.${zone}` : label));
  }
  const agents = managedNodes(ingresses, nodes, { tagPrefix, ttlSeconds });
  const out = new Map<string, string>();
  for (const node of nodes) {
    const owner = agents.get(node);
    const own = owner ? ownLabel.get(owner) : undefined;
    for (const raw of [node.givenName, node.name]) {
      if (!raw) continue;
      const k = key(raw);
      if (out.has(k) || own === k) continue;
      out.set(k, `Headscale node ${node.id}`);
    }
  }
  return out;
}

/** Who holds `name` or one of its parents under the baseDomain (a record below a node's name shadows its subdomains). */
export function holderOf(name: string, reserved: ReservedNames, baseDomain: string | undefined): string | undefined {
  let key = nameKey(name, baseDomain);
  for (;;) {
    const held = reserved.get(key);
    if (held) return held;
    const dot = key.indexOf(".");
    if (dot < 0) return undefined;
    key = key.slice(dot + 1);
  }
}

/** The names of `ingress` that a node holds, in the order of its names; none for an invalid name (it publishes nothing). */
export function reservedConflicts(
  ingress: K8sObject,
  reserved: ReservedNames,
  baseDomain: string | undefined,
  flat?: readonly string[],
): NameHolder[] {
  if (reserved.size === 0) return [];
  const names = namesIn(ingress, baseDomain, flat);
  if (names.invalid.length) return [];
  return names.all.flatMap((name) => {
    const heldBy = holderOf(name, reserved, baseDomain);
    return heldBy ? [{ name, heldBy }] : [];
  });
}

const tailnetRef = (o: K8sObject) => (o.spec as { tailnetRef?: { name?: string } } | undefined)?.tailnetRef?.name;

/**
 * For one ingress's decide: its names that a node of `nodes` (this sync's list) holds, with the
 * TailnetIngresses of its Tailnet among `ingresses` exempting their agents' own hostname label.
 */
export function heldNamesOf(
  ingress: K8sObject,
  ingresses: readonly K8sObject[],
  nodes: readonly HsNode[],
  settings: {
    tagPrefix: string;
    baseDomain?: string;
    dnsFlatNamespaces?: readonly string[];
    authKeyTTLSeconds?: number;
  },
): NameHolder[] {
  const { tagPrefix, baseDomain, dnsFlatNamespaces: flat } = settings;
  const same = ingresses.filter((o) => tailnetRef(o) === tailnetRef(ingress));
  const reserved = reservedNames(nodes, same, tagPrefix, baseDomain, flat, settings.authKeyTTLSeconds);
  return reservedConflicts(ingress, reserved, baseDomain, flat);
}
