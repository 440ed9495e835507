/**
 * TailnetSite decisions (pure): conditions and status.advertisers from the spec, the related sites and
 * Tailnet, the Headscale node list and the outcomes of this sync's approvals (folded in, so a route
 * approved in this sync is reported Approved). Which approvals to make is the plan's (plan.ts).
 */
import { blockerFrom, type ConditionInput, deriveReady } from "../../../conditions/condition.js";
import { conditionsOf } from "../../../conditions/table.js";
import { SiteCondition as C, SiteReason as R, SITE_REASONS } from "../../../conditions/tables/site.js";
import type { HsNode } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { DecideInput, Decision } from "../../../pipeline/run.js";
import { leftOutIn } from "../../shared/policy-left-out.js";
import type { ApprovalOutcome, SiteOutcome } from "./act.js";
import { type AdvertiserStatus, previousAdvertisers } from "./advertisers.js";
import { siteConflict } from "./conflict.js";
import type { SiteObservation } from "./observe.js";
import { approvalWithheld, idOf, planInput, readableNodes, type SitePlan, type SitePlanInput } from "./plan.js";
import {
  type AdvertiserFact,
  advertiserFacts,
  type SitePrefix,
  type UnmanagedRoute,
  unmanagedRoutes,
} from "./routes.js";
import type { SiteSpec } from "./spec.js";
import { type NodeWriters, nodeWriters } from "./writer.js";

const { cond } = conditionsOf(SITE_REASONS);

/** Seconds until the next look while waiting on Headscale (a router to announce, an approval to land). */
export const WAIT_RESYNC_SECONDS = 30;
/** At most this many nodes are named in one message; the rest are counted. */
const MAX_NAMED = 5;

export interface SiteDecideInput extends SitePlanInput {
  /** The outcomes of this sync's approvals (act); empty when none were made. */
  outcomes: readonly ApprovalOutcome[];
}

export interface SiteDecision extends Decision {
  children: [];
  fields: { advertisers: AdvertiserStatus[] };
}

const list = (items: readonly string[]) => items.join(", ");
const tagsText = (tags: readonly string[]) => tags.join(" or ");

function named<T>(items: readonly T[], text: (item: T) => string): string {
  const shown = items.slice(0, MAX_NAMED).map(text).join("; ");
  return items.length > MAX_NAMED ? `${shown}; and ${items.length - MAX_NAMED} more` : shown;
}

/** Nodes with this sync's successful approvals applied (the approve_routes answer is the new truth). */
function foldOutcomes(nodes: readonly HsNode[], outcomes: readonly ApprovalOutcome[]): HsNode[] {
  return nodes.map((n) => {
    const done = outcomes.find((o) => o.ok && o.nodeId === n.id);
    return done?.ok ? { ...n, approvedRoutes: done.approvedRoutes } : n;
  });
}

function routeConflict(input: SiteDecideInput, spec: SiteSpec): ConditionInput {
  const t = input.tailnet;
  // Without the Tailnet the reserved networks are unknown, but an older site's claim is still a fact.
  const conflict = siteConflict(input.parent, input.sites, t.settings?.reservedNetworks ?? []);
  if (conflict.blocked) return cond(C.RouteConflict, "True", conflict.reason, conflict.message);
  if (!t.settings) {
    const why = t.ok ? "" : `: ${t.message}`;
    return cond(C.RouteConflict, "Unknown", R.NoTailnet, `reservedNetworks unknown${why}`);
  }
  return cond(
    C.RouteConflict,
    "False",
    R.NoConflict,
    spec.exitNode
      ? `exit-node site: exit routes claim no network, so they overlap no reserved network of Tailnet ${t.settings.name} and no other TailnetSite`
      : `no prefix overlaps a reserved network of Tailnet ${t.settings.name} or an older TailnetSite`,
  );
}

function unmanagedOverlap(found: readonly UnmanagedRoute[], spec: SiteSpec): ConditionInput {
  if (spec.exitNode) {
    return cond(
      C.UnmanagedOverlap,
      "False",
      R.None,
      "exit-node site: no route competes with exit routes (clients choose an exit node; subnet routes are more specific)",
    );
  }
  if (found.length === 0) {
    return cond(
      C.UnmanagedOverlap,
      "False",
      R.None,
      `no node without an advertiser tag advertises a route overlapping ${list(spec.prefixes.map((p) => p.text))}`,
    );
  }
  const nodes = new Set(found.map((u) => u.node)).size;
  const head =
    nodes === 1
      ? `node without an advertiser tag (${tagsText(spec.advertiserTags)}) advertises an overlapping route`
      : `${nodes} nodes without an advertiser tag (${tagsText(spec.advertiserTags)}) advertise overlapping routes`;
  const body = named(found, (u) => `${u.node} ${u.route} (overlaps ${u.overlaps})`);
  return cond(C.UnmanagedOverlap, "True", R.Unmanaged, `${head}: ${body}`);
}

function advertised(facts: readonly AdvertiserFact[], spec: SiteSpec): ConditionInput {
  const by = (p: SitePrefix) => facts.filter((f) => f.advertised.includes(p.text)).map((f) => f.node);
  const missing = spec.prefixes.filter((p) => by(p).length === 0).map((p) => p.text);
  if (missing.length > 0) {
    return cond(
      C.Advertised,
      "False",
      R.NotAdvertised,
      `no node tagged ${tagsText(spec.advertiserTags)} advertises ${list(missing)}`,
    );
  }
  const text = named(spec.prefixes, (p) => `${p.text} by ${list(by(p))}`);
  return cond(C.Advertised, "True", R.Advertised, `advertised: ${text}`);
}

/** Why this site does not write to nodes with its pending routes: another site is their writer. */
function writtenElsewhere(input: SiteDecideInput, pending: readonly AdvertiserFact[], writers?: NodeWriters): string[] {
  if (!writers) return [];
  const me = idOf(input.parent);
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
  input: SiteDecideInput,
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
    return cond(C.Approved, "True", R.Approved, `approved: ${text}`);
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
  return cond(C.Approved, "False", R.NotApproved, parts.join("; "));
}

/** Approved=False/LeftOutOfPolicy when the Tailnet's status lists this site (shared/policy-left-out.ts). */
function leftOutApproved(input: SiteDecideInput, tailnet: K8sObject): ConditionInput | undefined {
  const message = leftOutIn(tailnet, input.parent, "TailnetSite");
  return message ? cond(C.Approved, "False", R.LeftOutOfPolicy, message) : undefined;
}

/** The decide stage (src/pipeline/run.ts DecideInput): what plan saw, with the outcomes of the approvals. */
export function decideSiteSync({
  req,
  spec,
  observed,
  outcome,
}: DecideInput<SiteSpec, SiteObservation, SitePlan, SiteOutcome>): SiteDecision {
  return decideSite({ ...planInput(req.parent, spec, observed), outcomes: outcome.approvals });
}

export function decideSite(input: SiteDecideInput): SiteDecision {
  const { spec } = input;
  const conflict = routeConflict(input, spec);
  const blocked = conflict.status === "True";
  const t = input.tailnet;
  const nodes = readableNodes(input.nodes);

  if (!t.ok || !nodes?.ok) {
    // Headscale not queried or not answering: nothing is known about routes, and the last
    // advertisers[] stay (they are the memory for replays).
    const why = !t.ok ? t.message : nodes?.ok === false ? nodes.message : "no observation";
    const message = `routes not observed: ${why}`;
    const observed = [
      cond(C.UnmanagedOverlap, "Unknown", R.NotObserved, message),
      cond(C.Advertised, "Unknown", R.NotObserved, message),
      cond(C.Approved, "Unknown", R.NotObserved, message),
    ];
    const ready = !t.ok
      ? cond(C.Ready, "False", t.reason, t.message)
      : deriveReady([blockerFrom(conflict, "False"), blockerFrom(observed[1]), blockerFrom(observed[2])], R.Ready);
    return {
      children: [],
      conditions: [conflict, ...observed, ready],
      fields: { advertisers: previousAdvertisers(input.parent) },
      resyncAfterSeconds: t.ok ? WAIT_RESYNC_SECONDS : undefined,
    };
  }

  const current = foldOutcomes(nodes.value, input.outcomes);
  const facts = advertiserFacts(current, spec.prefixes, spec.advertiserTags);
  const writers = nodeWriters(input.parent, input.sites, t.settings.reservedNetworks);
  const conditions = [
    conflict,
    unmanagedOverlap(unmanagedRoutes(current, spec.prefixes, spec.advertiserTags), spec),
    advertised(facts, spec),
    // the Tailnet left the site's grant and auto-approvals out of the policy: say so where approval is judged
    leftOutApproved(input, t.tailnet) ?? approved(input, facts, spec, blocked, writers),
  ];
  const ready = deriveReady(
    [blockerFrom(conflict, "False"), blockerFrom(conditions[2]), blockerFrom(conditions[3])],
    R.Ready,
    "every prefix is advertised and approved",
  );
  return {
    children: [],
    conditions: [...conditions, ready],
    fields: {
      advertisers: facts.map((f) => ({ node: f.node, prefixes: f.advertised, approved: f.pending.length === 0 })),
    },
    // A blocked site waits on a spec change (which syncs it), not on Headscale.
    resyncAfterSeconds: ready.status === "True" || blocked ? undefined : WAIT_RESYNC_SECONDS,
  };
}
