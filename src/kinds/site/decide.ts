/**
 * TailnetSite decisions (pure): conditions, status.advertisers and the route approvals to make,
 * from the parent, the related sites and Tailnet, the Headscale node list, and — on the second
 * call of a sync — the outcomes of the approvals made (folded back, so a route approved in this
 * sync is reported Approved).
 */
import { blockerFrom, type ConditionInput, cond, deriveReady } from "../../conditions/condition.js";
import { type CommonReason, SiteCondition, SiteReason } from "../../conditions/reasons.js";
import type { HsNode } from "../../headscale/types.js";
import type { K8sObject } from "../../k8s/objects.js";
import { isExitNodePrefixes } from "../../net/exit.js";
import { type TailnetSettings, tailnetIncompatible } from "../shared/workload.js";
import { siteConflict } from "./conflict.js";
import {
  type AdvertiserFact,
  advertiserFacts,
  canonicalRoute,
  carriesAny,
  nodeName,
  type SitePrefix,
  sitePrefixes,
  type UnmanagedRoute,
  unmanagedRoutes,
} from "./routes.js";
import { type NodeWriters, nodeWriters } from "./writer.js";

const byNodeName = (a: HsNode, b: HsNode) =>
  nodeName(a) < nodeName(b) ? -1 : nodeName(a) > nodeName(b) ? 1 : Number(a.id) - Number(b.id);

/** Seconds until the next look while waiting on Headscale (a router to announce, an approval to land). */
export const WAIT_RESYNC_SECONDS = 30;
/** At most this many nodes are named in one message; the rest are counted. */
const MAX_NAMED = 5;

export type NodesObservation = { ok: true; value: readonly HsNode[] } | { ok: false; message: string };

/** resolveWorkload's answer, without the connection (decide needs no credentials). */
export type SiteTailnet =
  | { ok: true; tailnet: K8sObject; settings: TailnetSettings }
  | {
      ok: false;
      reason: typeof CommonReason.NoTailnet | typeof CommonReason.NoAPIKey;
      message: string;
      settings?: TailnetSettings;
    };

/** One approve_routes call: the routes to add to the node's approved set. */
export interface ApprovalAction {
  nodeId: string;
  node: string;
  /** Routes as the node announces them. */
  add: string[];
  /** The subset of this site's whose prefix its last status recorded as approved: re-approvals (replays). */
  replays: string[];
  /**
   * Routes of other sites claiming the node that this site writes for (one writer per node,
   * writer.ts), with their replays; absent when there are none.
   */
  others?: { namespace: string; name: string; replays: string[] }[];
}

export type ApprovalOutcome =
  | { ok: true; nodeId: string; node: string; added: string[]; approvedRoutes: string[] }
  | { ok: false; nodeId: string; node: string; error: string };

export interface SiteInput {
  parent: K8sObject;
  /** Every TailnetSite (related), the parent included or not. */
  sites: readonly K8sObject[];
  tailnet: SiteTailnet;
  /** Undefined when Headscale was not queried (no Tailnet or no API key). */
  nodes?: NodesObservation;
  outcomes?: readonly ApprovalOutcome[];
}

export interface AdvertiserStatus {
  node: string;
  prefixes: string[];
  approved: boolean;
}

export interface SiteDecision {
  conditions: ConditionInput[];
  advertisers: AdvertiserStatus[];
  approvals: ApprovalAction[];
  resyncAfterSeconds?: number;
}

interface SiteSpec {
  prefixes: SitePrefix[];
  advertiserTags: string[];
  /** Exactly 0.0.0.0/0 and ::/0: the advertisers are exit nodes (src/net/exit.ts). */
  exitNode: boolean;
}

function specOf(parent: K8sObject): SiteSpec {
  const spec = (parent.spec ?? {}) as { prefixes?: unknown; advertiserTags?: unknown };
  const tags = Array.isArray(spec.advertiserTags)
    ? spec.advertiserTags.filter((t): t is string => typeof t === "string")
    : [];
  const prefixes = sitePrefixes(spec.prefixes);
  return {
    prefixes,
    advertiserTags: [...new Set(tags)].sort(),
    exitNode: isExitNodePrefixes(prefixes.map((p) => p.cidr)),
  };
}

const list = (items: readonly string[]) => items.join(", ");
const tagsText = (tags: readonly string[]) => tags.join(" or ");

function named<T>(items: readonly T[], text: (item: T) => string): string {
  const shown = items.slice(0, MAX_NAMED).map(text).join("; ");
  return items.length > MAX_NAMED ? `${shown}; and ${items.length - MAX_NAMED} more` : shown;
}

/** The advertisers[] of the last status: the memory of what was approved (the server keeps none). */
export function previousAdvertisers(parent: K8sObject): AdvertiserStatus[] {
  const status = parent.status as { advertisers?: unknown } | undefined;
  if (!Array.isArray(status?.advertisers)) return [];
  return status.advertisers.flatMap((a: unknown) => {
    const x = a as Partial<AdvertiserStatus> | null;
    if (!x || typeof x.node !== "string" || !Array.isArray(x.prefixes) || typeof x.approved !== "boolean") return [];
    return [
      { node: x.node, prefixes: x.prefixes.filter((p): p is string => typeof p === "string"), approved: x.approved },
    ];
  });
}

/** Canonical prefixes an advertiser of the last status had fully approved. */
export function previouslyApproved(parent: K8sObject): Set<string> {
  const out = new Set<string>();
  for (const a of previousAdvertisers(parent)) {
    if (!a.approved) continue;
    for (const p of a.prefixes) {
      const c = canonicalRoute(p);
      if (c) out.add(c);
    }
  }
  return out;
}

/** Nodes with this sync's successful approvals applied (the approve_routes answer is the new truth). */
function foldOutcomes(nodes: readonly HsNode[], outcomes: readonly ApprovalOutcome[]): HsNode[] {
  return nodes.map((n) => {
    const done = outcomes.find((o) => o.ok && o.nodeId === n.id);
    return done?.ok ? { ...n, approvedRoutes: done.approvedRoutes } : n;
  });
}

function routeConflict(input: SiteInput, spec: SiteSpec): ConditionInput {
  const t = input.tailnet;
  // Without the Tailnet the reserved networks are unknown, but an older site's claim is still a fact.
  const conflict = siteConflict(input.parent, input.sites, t.settings?.reservedNetworks ?? []);
  if (conflict.blocked) return cond(SiteCondition.RouteConflict, "True", conflict.reason, conflict.message);
  if (!t.settings) {
    const why = t.ok ? "" : `: ${t.message}`;
    return cond(SiteCondition.RouteConflict, "Unknown", SiteReason.NoTailnet, `reservedNetworks unknown${why}`);
  }
  return cond(
    SiteCondition.RouteConflict,
    "False",
    SiteReason.NoConflict,
    spec.exitNode
      ? `exit-node site: exit routes claim no network, so they overlap no reserved network of Tailnet ${t.settings.name} and no other TailnetSite`
      : `no prefix overlaps a reserved network of Tailnet ${t.settings.name} or an older TailnetSite`,
  );
}

function unmanagedOverlap(found: readonly UnmanagedRoute[], spec: SiteSpec): ConditionInput {
  if (spec.exitNode) {
    return cond(
      SiteCondition.UnmanagedOverlap,
      "False",
      SiteReason.None,
      "exit-node site: no route competes with exit routes (clients choose an exit node; subnet routes are more specific)",
    );
  }
  if (found.length === 0) {
    return cond(
      SiteCondition.UnmanagedOverlap,
      "False",
      SiteReason.None,
      `no node without an advertiser tag advertises a route overlapping ${list(spec.prefixes.map((p) => p.text))}`,
    );
  }
  const nodes = new Set(found.map((u) => u.node)).size;
  const head =
    nodes === 1
      ? `node without an advertiser tag (${tagsText(spec.advertiserTags)}) advertises an overlapping route`
      : `${nodes} nodes without an advertiser tag (${tagsText(spec.advertiserTags)}) advertise overlapping routes`;
  const body = named(found, (u) => `${u.node} ${u.route} (overlaps ${u.overlaps})`);
  return cond(SiteCondition.UnmanagedOverlap, "True", SiteReason.Unmanaged, `${head}: ${body}`);
}

function advertised(facts: readonly AdvertiserFact[], spec: SiteSpec): ConditionInput {
  const by = (p: SitePrefix) => facts.filter((f) => f.advertised.includes(p.text)).map((f) => f.node);
  const missing = spec.prefixes.filter((p) => by(p).length === 0).map((p) => p.text);
  if (missing.length > 0) {
    return cond(
      SiteCondition.Advertised,
      "False",
      SiteReason.NotAdvertised,
      `no node tagged ${tagsText(spec.advertiserTags)} advertises ${list(missing)}`,
    );
  }
  const text = named(spec.prefixes, (p) => `${p.text} by ${list(by(p))}`);
  return cond(SiteCondition.Advertised, "True", SiteReason.Advertised, `advertised: ${text}`);
}

/** Why nothing was approved although something is pending; "" when the operator would approve. */
function approvalWithheld(input: SiteInput, blocked: boolean): string {
  if (blocked) return "the site is blocked by RouteConflict: nothing is approved for it";
  if (input.tailnet.ok && input.tailnet.settings.policyMode === "DryRun") {
    return `Tailnet ${input.tailnet.settings.name} is in DryRun (spec.policy.mode): the operator approves no routes`;
  }
  if (input.tailnet.ok && tailnetIncompatible(input.tailnet.tailnet)) {
    return `Tailnet ${input.tailnet.settings.name} reports HeadscaleCompatible=False: the operator does not write to this server`;
  }
  return "";
}

/** Why this site does not write to nodes with its pending routes: another site is their writer. */
function writtenElsewhere(input: SiteInput, pending: readonly AdvertiserFact[], writers?: NodeWriters): string[] {
  if (!writers) return [];
  const me = `${input.parent.metadata.namespace ?? ""}/${input.parent.metadata.name}`;
  const out: string[] = [];
  for (const f of pending) {
    const node = input.nodes?.ok ? input.nodes.value.find((n) => n.id === f.nodeId) : undefined;
    const w = node ? writers.writerOf(node) : undefined;
    if (!w || w.claim.id === me) continue;
    out.push(
      w.deleting
        ? `TailnetSite ${w.claim.id} is being deleted and alone writes to ${f.node} until it is gone (one writer per node)`
        : `TailnetSite ${w.claim.id} approves them on ${f.node} (one writer per node)`,
    );
  }
  return out;
}

function approved(
  input: SiteInput,
  facts: readonly AdvertiserFact[],
  spec: SiteSpec,
  blocked: boolean,
  writers?: NodeWriters,
): ConditionInput {
  const pending = facts.filter((f) => f.pending.length > 0);
  const unadvertised = spec.prefixes
    .filter((p) => !facts.some((f) => f.advertised.includes(p.text)))
    .map((p) => p.text);
  if (pending.length === 0 && unadvertised.length === 0) {
    const text = named(
      facts.filter((f) => f.approved.length > 0),
      (f) => `${list(f.approved)} on ${f.node}`,
    );
    return cond(SiteCondition.Approved, "True", SiteReason.Approved, `approved: ${text}`);
  }
  const parts: string[] = [];
  if (pending.length > 0) {
    parts.push(
      `advertised but not approved: ${named(pending, (f) => `${list(f.pending.map((x) => x.prefix))} on ${f.node}`)}`,
    );
    const withheld = approvalWithheld(input, blocked);
    if (withheld) parts.push(withheld);
    else parts.push(...writtenElsewhere(input, pending, writers));
    for (const o of input.outcomes ?? []) if (!o.ok) parts.push(`approving on ${o.node} failed: ${o.error}`);
  }
  if (unadvertised.length > 0) parts.push(`not advertised, so not approved: ${list(unadvertised)}`);
  return cond(SiteCondition.Approved, "False", SiteReason.NotApproved, parts.join("; "));
}

/**
 * The approve_routes calls of this sync: on each node this site writes to (writer.ts), the
 * announced but unapproved prefixes of every live site claiming the node — this site's first.
 */
function approvalsFor(
  input: SiteInput,
  nodes: readonly HsNode[],
  blocked: boolean,
  writers: NodeWriters,
): ApprovalAction[] {
  if (input.outcomes || approvalWithheld(input, blocked)) return [];
  const me = `${input.parent.metadata.namespace ?? ""}/${input.parent.metadata.name}`;
  const out: ApprovalAction[] = [];
  for (const node of [...nodes].sort(byNodeName)) {
    const w = writers.writerOf(node);
    if (!w || w.deleting || w.claim.id !== me) continue;
    const add: string[] = [];
    const seen = new Set<string>();
    let replays: string[] = [];
    const others: { namespace: string; name: string; replays: string[] }[] = [];
    // This site first (its own claim as the parent carries it), then the others oldest first.
    const claims = [w.claim, ...writers.live.filter((c) => c.id !== me)].filter((c) => carriesAny(node, c.tags));
    for (const claim of claims) {
      const fact = advertiserFacts([node], claim.prefixes, claim.tags)[0];
      const fresh = (fact?.pending ?? []).filter((x) => !seen.has(canonicalRoute(x.route) ?? x.route));
      if (fresh.length === 0) continue;
      for (const x of fresh) {
        seen.add(canonicalRoute(x.route) ?? x.route);
        add.push(x.route);
      }
      const before = previouslyApproved(claim.site);
      const replayed = fresh.filter((x) => before.has(canonicalRoute(x.prefix) ?? "")).map((x) => x.route);
      if (claim.id === me) replays = replayed;
      else others.push({ namespace: claim.namespace, name: claim.name, replays: replayed });
    }
    if (add.length === 0) continue;
    out.push({
      nodeId: node.id,
      node: nodeName(node),
      add,
      replays,
      ...(others.length > 0 ? { others } : {}),
    });
  }
  return out;
}

/**
 * Nodes without an `approvedRoutes` field come from a Headscale older than 0.26 (routes were
 * separate objects then): their routes cannot be read, so they are not observed rather than
 * "nothing approved" — and an approval would be a write to a server the operator does not drive.
 */
function routesReadable(nodes: NodesObservation | undefined): NodesObservation | undefined {
  if (!nodes?.ok || nodes.value.every((n) => n.shape.hasApprovedRoutes)) return nodes;
  return { ok: false, message: "node objects carry no approvedRoutes (Headscale older than 0.26 is not supported)" };
}

export function decideSite(input: SiteInput): SiteDecision {
  const spec = specOf(input.parent);
  const conflict = routeConflict(input, spec);
  const blocked = conflict.status === "True";
  const t = input.tailnet;
  const nodes = routesReadable(input.nodes);

  if (!t.ok || !nodes?.ok) {
    // Headscale not queried or not answering: nothing is known about routes, and the last
    // advertisers[] stay (they are the memory for replays).
    const why = !t.ok ? t.message : nodes?.ok === false ? nodes.message : "no observation";
    const message = `routes not observed: ${why}`;
    const unknown = (type: string) => cond(type, "Unknown", SiteReason.NotObserved, message);
    const observed = [
      unknown(SiteCondition.UnmanagedOverlap),
      unknown(SiteCondition.Advertised),
      unknown(SiteCondition.Approved),
    ];
    const ready = !t.ok
      ? cond(SiteCondition.Ready, "False", t.reason, t.message)
      : deriveReady(
          [blockerFrom(conflict, "False"), blockerFrom(observed[1]), blockerFrom(observed[2])],
          SiteReason.Ready,
        );
    return {
      conditions: [conflict, ...observed, ready],
      advertisers: previousAdvertisers(input.parent),
      approvals: [],
      resyncAfterSeconds: t.ok ? WAIT_RESYNC_SECONDS : undefined,
    };
  }

  const current = foldOutcomes(nodes.value, input.outcomes ?? []);
  const facts = advertiserFacts(current, spec.prefixes, spec.advertiserTags);
  const writers = nodeWriters(input.parent, input.sites, t.settings.reservedNetworks);
  const conditions = [
    conflict,
    unmanagedOverlap(unmanagedRoutes(current, spec.prefixes, spec.advertiserTags), spec),
    advertised(facts, spec),
    approved(input, facts, spec, blocked, writers),
  ];
  const ready = deriveReady(
    [blockerFrom(conflict, "False"), blockerFrom(conditions[2]), blockerFrom(conditions[3])],
    SiteReason.Ready,
    "every prefix is advertised and approved",
  );
  return {
    conditions: [...conditions, ready],
    advertisers: facts.map((f) => ({
      node: f.node,
      prefixes: f.advertised,
      approved: f.pending.length === 0,
    })),
    approvals: approvalsFor(input, current, blocked, writers),
    // A blocked site waits on a spec change (which syncs it), not on Headscale.
    resyncAfterSeconds: ready.status === "True" || blocked ? undefined : WAIT_RESYNC_SECONDS,
  };
}
