/**
 * The Tailnet's policy and DNS records from its inputs (pure): every workload object of this
 * Tailnet mapped to the policy module's CollectInput (effective tags, denied ingresses, blocked
 * sites), merged into the base policy; and the A records of every published ingress name. Linear
 * in the number of objects (see bench in test/kinds/composite/tailnet/decide.bench.ts).
 */
import type { HsNode } from "../../../headscale/types.js";
import { sortByAge } from "../../../k8s/age.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { isIp } from "../../../net/cidr.js";
import type { Contribution } from "../../../policy/contribution.js";
import { collectContributions, combineContributions } from "../../../policy/generated.js";
import type { CollectInput, GeneratedPolicy, InvalidInput } from "../../../policy/generated-types.js";
import { parseHuJson } from "../../../policy/hujson.js";
import { type GeneratedCounts, mergePolicy } from "../../../policy/merge.js";
import { composeShared } from "../../../policy/sections.js";
import type { NodeRef } from "../../../policy/targets.js";
import { screenContributions } from "../../../policy/validate.js";
import { holderOf, reservedNames } from "../../shared/dns-owners.js";
import { exposePort } from "../../shared/expose-port.js";
import { nameOwners } from "../../shared/ingress-names.js";
import { managedNodes, type OwnedNodeRef, refusedTargets } from "../../shared/node-owners.js";
import { reservedOverlap } from "../../shared/routes.js";
import { explicitTag } from "../../shared/tenancy.js";
import { effectiveTag } from "../../shared/workload.js";
import { dnsNodesPrint, type Lazy, type LazyCollectInput, type MemoSlot } from "./compose-memo.js";
import type { TailnetInputs } from "./inputs.js";
import { type LeftOut, leftOutOf } from "./left-out.js";
import { type SharedCandidate, type SharedContext, sharedCandidate, sharedKey } from "./shared-render.js";
import { blockedSites } from "./sites.js";

export interface PolicyCandidate {
  /** The merged policy (read-only: shares arrays with the parsed base). */
  policy: Record<string, unknown>;
  /** Compact canonical JSON: what the hash covers and what the policy ConfigMap holds. */
  canonical: string;
  hash: string;
  generated: GeneratedCounts;
  /** Workload values left out because Headscale would reject the whole policy over them. */
  invalid: InvalidInput[];
  /** Per object, what was left out of the policy and why (status.policy.leftOut), sorted. */
  leftOut: LeftOut[];
  /** What the policy was merged from, so that a subset can be rendered (isolate.ts). Read only. */
  parts: RenderParts;
  /**
   * The render among the live policy's cluster sections (policy/sections.ts): what is written between the
   * marker and the body, this cluster's section, and the contests. Absent when rendered without a live
   * policy context (the render CLI, tests): then the body is base + this cluster's parts alone.
   */
  shared?: SharedCandidate;
}

/** The base text, the Tailnet's tag owners and the contributions merged (those screened out as tags only). */
export interface RenderParts {
  baseText: string | undefined;
  tagOwners: readonly string[];
  contributions: readonly Contribution[];
}

export type RenderFailureReason = "BaseMissing" | "BaseInvalid" | "PolicyEmpty" | "CannotVerify";

export type TailnetRender =
  | { ok: true; candidate: PolicyCandidate }
  | { ok: false; reason: RenderFailureReason; message: string };

type Spec = Record<string, unknown>;
const record = (v: unknown): Spec => (v && typeof v === "object" && !Array.isArray(v) ? (v as Spec) : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const records = (v: unknown): Spec[] => (Array.isArray(v) ? v.map(record) : []);
const ns = (o: K8sObject) => o.metadata.namespace ?? "";

/**
 * The node list decides egress targets (name → IP, tag allowlist) and whether an explicit tag is the
 * object's (tenancy.ts tagTakenBy: another's node carrying it renders nothing): unknown, nothing renders.
 */
export function needsNodes(inputs: TailnetInputs): boolean {
  return inputs.egresses.length > 0 || [...inputs.ingresses, ...inputs.gateways].some((o) => explicitTag(o));
}

const NONE_REFUSED: ReadonlySet<string> = new Set();

type Item<K extends "egresses" | "ingresses" | "sites" | "gateways"> = CollectInput[K][number];

/** `refused`: targets node-owners.ts targetRefusal refuses (another object's agent node): no grant. */
function egressItem(o: K8sObject, tagPrefix: string, refused: ReadonlySet<string>): Item<"egresses"> {
  return {
    namespace: ns(o),
    name: o.metadata.name,
    tag: effectiveTag(o, tagPrefix),
    targets: egressTargetsOf(o)
      .filter((t) => !refused.has(String(t.name ?? "")))
      .map((t) => ({
        name: String(t.name ?? ""),
        host: String(t.host ?? ""),
        ports: records(t.ports).map((p) => ({
          port: Number(p.port),
          protocol: typeof p.protocol === "string" ? p.protocol : undefined,
        })),
      })),
  };
}

const egressTargetsOf = (o: K8sObject) => records(record(o.spec).targets);

/**
 * Per egress ("namespace/name"), the names of its targets that resolve to a node the operator registered for
 * another object which does not admit the egress's tag (node-owners.ts, the rule the egress's status uses).
 */
export function refusedEgressTargets(inputs: TailnetInputs, nodes: readonly OwnedNodeRef[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  if (!inputs.egresses.length) return out;
  const { tagPrefix, authKeyTTLSeconds, baseDomain } = inputs.settings;
  const settings = { tagPrefix, ttlSeconds: authKeyTTLSeconds, baseDomain };
  const owners = [...inputs.ingresses, ...inputs.egresses, ...inputs.gateways];
  const managed = managedNodes(owners, nodes, settings);
  if (!managed.size) return out;
  for (const o of inputs.egresses) {
    const targets = egressTargetsOf(o).map((t) => ({ name: String(t.name ?? ""), host: String(t.host ?? "") }));
    const refused = refusedTargets(o, effectiveTag(o, tagPrefix), targets, nodes, owners, settings, managed);
    if (refused.size) out.set(`${ns(o)}/${o.metadata.name}`, new Set(refused.keys()));
  }
  return out;
}

function ingressItem(o: K8sObject, tagPrefix: string, allowedSources: ReadonlySet<string>): Item<"ingresses"> {
  const allowFrom = strings(record(o.spec).allowFrom);
  return {
    namespace: ns(o),
    name: o.metadata.name,
    tag: effectiveTag(o, tagPrefix),
    allowFrom,
    ports: records(record(o.spec).exposes).map((e) => exposePort(record(o.spec).mode, e.port)),
    // allowFrom ⊄ allowedIngressSources: PolicyDenied on the ingress, no grant here.
    denied: allowFrom.some((a) => !allowedSources.has(a)),
  };
}

function siteItem(o: K8sObject, blocked: boolean): Item<"sites"> {
  return {
    namespace: ns(o),
    name: o.metadata.name,
    prefixes: strings(record(o.spec).prefixes),
    advertiserTags: strings(record(o.spec).advertiserTags),
    allowFrom: strings(record(o.spec).allowFrom),
    blocked,
  };
}

function gatewayItem(
  o: K8sObject,
  tagPrefix: string,
  admitted: boolean,
  reserved: readonly string[],
): Item<"gateways"> {
  const exit = record(record(o.spec).exitNode);
  const routes = strings(record(o.spec).routes);
  // a route into reservedNetworks: the gateway approves none of its routes (RoutesInSync=False/OverlapsReserved),
  // and none is auto-approved here (shared/routes.ts, the gateway's own rule)
  const who = { kind: "TailnetGateway", id: `${ns(o)}/${o.metadata.name}`, tailnet: "" };
  return {
    namespace: ns(o),
    name: o.metadata.name,
    tag: effectiveTag(o, tagPrefix),
    routes: reservedOverlap(routes, reserved, who) ? [] : routes,
    ...(admitted ? { exitNode: { allowFrom: strings(exit.allowFrom) } } : {}),
  };
}

/**
 * Every workload object of the Tailnet as the policy collector's input, each entry built only when asked
 * for, with a cheap key when the object has a uid and a resourceVersion (which changes with any change to
 * it): its entry is then a function of that, of `context` (the settings every entry reads) and of the
 * flags other objects decide (a site blocked, a gateway's exit node admitted), which the key names.
 */
export function lazyCollectInput(inputs: TailnetInputs, nodes: readonly NodeRef[]): LazyCollectInput {
  const { settings } = inputs;
  const { tagPrefix } = settings;
  const allowedSources = new Set(settings.allowedIngressSources);
  const blocked = blockedSites(inputs.sites, settings.reservedNetworks);
  const refused = refusedEgressTargets(inputs, nodes);
  const lazy = <T>(o: K8sObject, item: () => T, flag = ""): Lazy<T> => {
    const { uid, resourceVersion } = o.metadata;
    return {
      id: `${ns(o)}/${o.metadata.name}`,
      key: uid && resourceVersion ? `${uid}\u0000${resourceVersion}\u0000${flag}` : undefined,
      item,
    };
  };
  return {
    tagOwners: inputs.tagOwners,
    allowedEgressTargets: settings.allowedEgressTargets,
    baseDomain: settings.baseDomain,
    nodes: nodes as NodeRef[],
    context: JSON.stringify([tagPrefix, settings.allowedIngressSources, settings.reservedNetworks]),
    egresses: inputs.egresses.map((o) => {
      const r = refused.get(`${ns(o)}/${o.metadata.name}`) ?? NONE_REFUSED;
      return lazy(o, () => egressItem(o, tagPrefix, r), [...r].sort().join("\u0000"));
    }),
    ingresses: inputs.ingresses.map((o) => lazy(o, () => ingressItem(o, tagPrefix, allowedSources))),
    // A site being deleted renders nothing: its finalize withdraws its route approvals only once the
    // live policy no longer auto-approves them (Headscale would re-approve them on the next reload).
    // oldest first, the order of the site writer (site/plan.ts): the older site keeps a route that would
    // complete a default route in pieces for a router's tag (generated.ts exitRoutesAcross)
    sites: sortByAge(inputs.sites.filter((o) => !o.metadata.deletionTimestamp)).map((o) => {
      const b = blocked.has(`${ns(o)}/${o.metadata.name}`);
      return lazy(o, () => siteItem(o, b), b ? "blocked" : "");
    }),
    gateways: inputs.gateways.map((o) => {
      const admitted = inputs.exitNodeGateways.has(`${ns(o)}/${o.metadata.name}`);
      return lazy(o, () => gatewayItem(o, tagPrefix, admitted, settings.reservedNetworks), admitted ? "exit" : "");
    }),
  };
}

/** Every workload object of the Tailnet as the policy collector's input. */
export function collectInput(inputs: TailnetInputs, nodes: readonly NodeRef[]): CollectInput {
  const l = lazyCollectInput(inputs, nodes);
  const all = <T>(list: Lazy<T>[]) => list.map((x) => x.item());
  return {
    tagOwners: l.tagOwners,
    allowedEgressTargets: l.allowedEgressTargets,
    baseDomain: l.baseDomain,
    nodes: l.nodes,
    egresses: all(l.egresses),
    ingresses: all(l.ingresses),
    sites: all(l.sites),
    gateways: all(l.gateways),
  };
}

const NOTHING_GENERATED: GeneratedPolicy = {
  tagOwners: new Map(),
  grants: [],
  autoApproverRoutes: new Map(),
  autoApproverExitNode: [],
};

/**
 * Base + generated → the policy candidate, or why there is none. `nodes` null means the node list
 * is not available (no API key, or it failed): a render that needs it is CannotVerify, never a
 * policy with the node-named targets silently left out.
 */
export function composeTailnetPolicy(
  inputs: TailnetInputs,
  nodes: readonly NodeRef[] | null,
  nodesUnavailable = "the Headscale node list is not available",
  /** The memo and the Tailnet's uid: reuse what did not change since its last render (compose-memo.ts); none, render fresh. */
  memo?: MemoSlot,
  /** Render among the live policy's cluster sections (policy/sections.ts); absent: this cluster's parts alone. */
  shared?: SharedContext,
): TailnetRender {
  const { base } = inputs;
  if (base.kind === "missing") return { ok: false, reason: "BaseMissing", message: base.message };
  const baseText = base.kind === "text" ? base.text : undefined;
  const where = base.kind === "text" ? `ConfigMap ${base.source}: ` : "";
  if (nodes === null && needsNodes(inputs)) {
    // A broken base is reported even without nodes; anything else needs the node list.
    const probe = mergePolicy(baseText, NOTHING_GENERATED);
    if (!probe.ok && probe.reason === "BaseInvalid") {
      return { ok: false, reason: "BaseInvalid", message: `${where}${probe.message}` };
    }
    return {
      ok: false,
      reason: "CannotVerify",
      message: `not rendered: egress targets and explicit tags' owners are judged on the Headscale node list: ${nodesUnavailable}`,
    };
  }
  const render = (contributions: readonly Contribution[]): TailnetRender => {
    // what Headscale would refuse the whole policy over is left out before the merge (policy/validate.ts)
    // without a base of its own, this cluster's parts are merged into another cluster's base (policy/sections.ts)
    const effectiveBase = baseText ?? shared?.live?.base?.data.text;
    const parsedBase = effectiveBase === undefined ? undefined : parseHuJson(effectiveBase);
    const screened = screenContributions(parsedBase?.ok ? parsedBase.value : undefined, contributions);
    const collected = combineContributions(inputs.tagOwners, screened.merged);
    const sharedInput = shared ? { ...shared, baseText, gen: collected.generated } : undefined;
    const s = sharedInput ? composeShared(sharedInput) : undefined;
    const r = s ? s.merged : mergePolicy(baseText, collected.generated);
    if (!r.ok)
      return { ok: false, reason: r.reason, message: r.reason === "BaseInvalid" ? `${where}${r.message}` : r.message };
    return {
      ok: true,
      candidate: {
        policy: r.policy,
        canonical: r.canonical,
        hash: r.hash,
        generated: r.generated,
        invalid: collected.invalid,
        leftOut: leftOutOf(contributions, collected.invalid, screened.refused),
        parts: { baseText, tagOwners: inputs.tagOwners, contributions: screened.merged },
        ...(s && sharedInput ? { shared: sharedCandidate(s, sharedInput) } : {}),
      },
    };
  };
  if (memo === undefined) {
    // as the memo keeps them (compose-memo.ts kept): the render reads no egress target outcomes
    const contributions = collectContributions(collectInput(inputs, nodes ?? []));
    return render(contributions.map((c) => (c.egressTargets.length ? { ...c, egressTargets: [] } : c)));
  }
  return memo.memo.policy(
    memo.tailnet,
    lazyCollectInput(inputs, nodes ?? []),
    JSON.stringify([where, baseText ?? null, shared ? sharedKey(shared) : null]),
    render,
  );
}

/** One entry of Headscale's `dns.extra_records_path` file. */
export interface DnsRecord {
  name: string;
  type: "A";
  value: string;
}

const byNumericId = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/** The better of two nodes to answer for an ingress: an online one first, then the newest (highest id). */
const better = (a: HsNode, b: HsNode) =>
  (a.online && !b.online) || (a.online === b.online && byNumericId(a.id, b.id) > 0) ? a : b;

/**
 * Ingress ("namespace/name") → its agent nodes: those registered with a key it minted (node-owners.ts), never
 * whatever carries its tag — an administrator's node under the derived tag answers for no ingress's names.
 */
function agentNodesOf(inputs: TailnetInputs, nodes: readonly HsNode[]): Map<string, HsNode[]> {
  const { tagPrefix, authKeyTTLSeconds } = inputs.settings;
  const out = new Map<string, HsNode[]>();
  for (const [node, owner] of managedNodes(inputs.ingresses, nodes, { tagPrefix, ttlSeconds: authKeyTTLSeconds })) {
    const id = `${ns(owner)}/${owner.metadata.name}`;
    const list = out.get(id);
    if (list) list.push(node as HsNode);
    else out.set(id, [node as HsNode]);
  }
  return out;
}

const ipv4Of = (node: HsNode) => node.ipAddresses.find((ip) => ip.includes(".") && isIp(ip));

/**
 * A records for every published ingress name and alias (only the oldest claimant of a name
 * publishes it, see `nameOwners`, and never a name a Headscale node holds, see dns-owners.ts) with the IPv4 of every online agent node of
 * the ingress (replicas; registered with a key it minted, node-owners.ts), or else of its best one; names whose node is not
 * registered yet are left out. Several records of one name all answer: tailscale appends them
 * (v1.102.3 ipn/ipnlocal/node_backend.go dnsConfigForNetmap). Sorted by name, then value.
 */
export function dnsRecords(inputs: TailnetInputs, nodes: readonly HsNode[], memo?: MemoSlot): DnsRecord[] {
  const key = memo === undefined ? undefined : dnsKey(inputs, nodes);
  if (memo === undefined || key === undefined) return freshDnsRecords(inputs, nodes);
  return memo.memo.dns(memo.tailnet, key, () => freshDnsRecords(inputs, nodes));
}

/**
 * What the records are computed from: the settings they read, the node list's fingerprint and each ingress's
 * uid and resourceVersion (which changes with any change to the object). Undefined (no memo) when an ingress
 * has neither, as objects built in tests may.
 */
function dnsKey(inputs: TailnetInputs, nodes: readonly HsNode[]): string | undefined {
  const { baseDomain, tagPrefix, dnsFlatNamespaces } = inputs.settings;
  const parts: string[] = [
    JSON.stringify([baseDomain ?? null, tagPrefix, dnsFlatNamespaces ?? null]),
    dnsNodesPrint(nodes),
  ];
  for (const o of inputs.ingresses) {
    const { uid, resourceVersion } = o.metadata;
    if (!uid || !resourceVersion) return undefined;
    parts.push(`${uid}/${resourceVersion}`);
  }
  return parts.join("\n");
}

function freshDnsRecords(inputs: TailnetInputs, nodes: readonly HsNode[]): DnsRecord[] {
  const { settings } = inputs;
  const byId = new Map(inputs.ingresses.map((o) => [`${ns(o)}/${o.metadata.name}`, o]));
  const agents = agentNodesOf(inputs, nodes);
  // An ingress owns several names: resolve its addresses once.
  const addressesOf = new Map<string, string[]>();
  // A name a Headscale node holds is never published (dns-owners.ts): it would shadow that node.
  const flat = settings.dnsFlatNamespaces;
  const reserved = reservedNames(
    nodes,
    inputs.ingresses,
    settings.tagPrefix,
    settings.baseDomain,
    flat,
    settings.authKeyTTLSeconds,
  );
  const owners = nameOwners(
    inputs.ingresses,
    settings.baseDomain,
    (n) => holderOf(n, reserved, settings.baseDomain) !== undefined,
    flat,
  );
  // Names are unique (map keys), so sorting the names alone (and each name's values) gives the
  // name-then-value order; the native sort without a comparator orders strings by code units, as `<` does.
  const names = [...owners.keys()].sort();
  const out: DnsRecord[] = [];
  for (const name of names) {
    const owner = owners.get(name) as string;
    let values = addressesOf.get(owner);
    if (values === undefined) {
      const own = byId.has(owner) ? (agents.get(owner) ?? []) : [];
      const up = own.filter((n) => n.online);
      const chosen = up.length > 1 ? up : own.length ? [own.reduce(better)] : [];
      values = [...new Set(chosen.flatMap((n) => ipv4Of(n) ?? []))].sort();
      addressesOf.set(owner, values);
    }
    for (const value of values) out.push({ name, type: "A", value });
  }
  return out;
}
