/**
 * What deleting a TailnetSite withdraws (pure): the site's own prefixes from the approved routes of
 * the nodes carrying one of its advertiser tags — nothing else.
 *
 * Headscale's auto-approval is additive and re-runs for every node on every policy reload (each
 * PUT, even of identical text) and on route re-announcements (hscontrol/policy/policy.go
 * ApproveRoutesWithPolicy; NOTES §4), so an approval the live policy still auto-approves comes
 * back. The order is therefore: first the live policy without the site's autoApprovers (the
 * Tailnet renders nothing for a site being deleted), then the withdrawal. Per approved site route
 * on an advertiser node:
 * - another live TailnetSite of the Tailnet lists the same prefix and the node carries one of its
 *   advertiser tags → kept: it is that site's route now;
 * - the live policy auto-approves it through an entry this site does not render (a containing
 *   `routes` key, another tag of the node: a gateway, the base policy) → kept: not this site's alone;
 * - the live policy auto-approves it only through entries this site renders (its exact prefix, or
 *   `exitNode`, for one of its advertiser tags) → wait: the Tailnet has not written the policy
 *   without the site yet. After WITHDRAW_WAIT_SECONDS from the deletion the route is kept instead
 *   (the same entry is in the base policy, or the Tailnet cannot write), so a deletion never hangs;
 * - otherwise → withdrawn.
 * Exit routes are withdrawn as the pair (Headscale stores both when either is approved).
 */
import { type ConditionInput, cond } from "../../../conditions/condition.js";
import { SiteCondition, SiteReason } from "../../../conditions/tables/site.js";
import type { HsNode } from "../../../headscale/types.js";
import { isOlder, sortByAge } from "../../../k8s/age.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { type Cidr, cidrContains, parseCidr } from "../../../net/cidr.js";
import { EXIT_ROUTES, isExitRoute } from "../../../net/exit.js";
import { parseHuJson } from "../../../policy/hujson.js";
import { carriesAny, nodeName } from "./routes.js";
import { readSiteSpec } from "./spec.js";

/** How long a deletion waits for the live policy to drop the site's autoApprovers before keeping a route. */
export const WITHDRAW_WAIT_SECONDS = 600;

/** One approve_routes call: the node's approved set without `remove`. */
export interface Withdrawal {
  nodeId: string;
  node: string;
  /** Routes as the node's approved set spells them. */
  remove: string[];
}

export interface HeldRoute {
  node: string;
  route: string;
  why: string;
}

export interface WithdrawalPlan {
  withdraw: Withdrawal[];
  /** Still auto-approved by the live policy through this site's own entries: wait for the Tailnet. */
  waiting: HeldRoute[];
  /** Left in place: another site's, another approver's, or the wait ran out. */
  kept: HeldRoute[];
}

/** The live policy's autoApprovers, as Headscale reads them (field names case-insensitive). */
export interface LiveApprovers {
  routes: { key: string; cidr: Cidr; approvers: string[] }[];
  exitNode: string[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
function field(obj: Json, name: string): unknown {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/** autoApprovers of a live policy text; null text (no policy stored) approves nothing. */
export function liveApprovers(
  text: string | null,
): { ok: true; value: LiveApprovers } | { ok: false; message: string } {
  const none: LiveApprovers = { routes: [], exitNode: [] };
  if (text === null || text.trim() === "") return { ok: true, value: none };
  const parsed = parseHuJson(text);
  if (!parsed.ok) return { ok: false, message: `the live policy is not valid HuJSON: ${parsed.message}` };
  const approvers = field(parsed.value, "autoApprovers");
  if (!isObject(approvers)) return { ok: true, value: none };
  const routes = field(approvers, "routes");
  return {
    ok: true,
    value: {
      routes: isObject(routes)
        ? Object.entries(routes).flatMap(([key, list]) => {
            const r = parseCidr(key);
            return r.ok ? [{ key, cidr: r.cidr, approvers: strings(list) }] : [];
          })
        : [],
      exitNode: strings(field(approvers, "exitNode")),
    },
  };
}

export interface WithdrawalInput {
  parent: K8sObject;
  /** Every TailnetSite (related). */
  sites: readonly K8sObject[];
  nodes: readonly HsNode[];
  live: LiveApprovers;
  now: Date;
}

interface SiteView {
  id: string;
  tailnet: string | undefined;
  /** Canonical prefixes. */
  prefixes: Set<string>;
  tags: string[];
}

/** A site's claim; default routes only when it is an exit-node site (elsewhere they are InvalidSpec). */
function viewOf(site: K8sObject): SiteView {
  const spec = readSiteSpec(site);
  return {
    id: `${site.metadata.namespace ?? ""}/${site.metadata.name}`,
    tailnet: spec.tailnet,
    prefixes: new Set(spec.prefixes.filter((p) => spec.exitNode || !isExitRoute(p.cidr)).map((p) => p.cidr.text)),
    tags: spec.advertiserTags,
  };
}

/** Seconds since the deletion started; 0 when the timestamp is missing or in the future. */
function deletingFor(parent: K8sObject, now: Date): number {
  const at = Date.parse(parent.metadata.deletionTimestamp ?? "");
  return Number.isFinite(at) ? Math.max(0, (now.getTime() - at) / 1000) : 0;
}

/** The live approver entries that auto-approve `route` on `node`, as "where: tag". */
function coveringEntries(
  live: LiveApprovers,
  route: Cidr,
  node: HsNode,
): { where: string; tag: string; key?: string }[] {
  const out: { where: string; tag: string; key?: string }[] = [];
  if (isExitRoute(route)) {
    for (const tag of live.exitNode) if (node.tags.includes(tag)) out.push({ where: "autoApprovers.exitNode", tag });
    return out;
  }
  // A routes key also approves announced sub-prefixes; a 0.0.0.0/0 key approves every subnet route, never an exit route.
  for (const entry of live.routes) {
    if (!cidrContains(entry.cidr, route)) continue;
    for (const tag of entry.approvers) {
      if (node.tags.includes(tag))
        out.push({ where: `autoApprovers.routes["${entry.key}"]`, tag, key: entry.cidr.text });
    }
  }
  return out;
}

export function planWithdrawal(input: WithdrawalInput): WithdrawalPlan {
  const me = viewOf(input.parent);
  const others = input.sites
    .filter((s) => !s.metadata.deletionTimestamp)
    .map(viewOf)
    .filter((s) => s.id !== me.id && s.tailnet === me.tailnet);
  // One writer per node (writer.ts): of two sites being deleted that claim a node, the older writes first.
  const olderDeleting = sortByAge(input.sites)
    .filter(
      (s) =>
        s.metadata.deletionTimestamp &&
        isOlder(s, input.parent) &&
        viewOf(s).tailnet === me.tailnet &&
        viewOf(s).id !== me.id,
    )
    .map(viewOf);
  const expired = deletingFor(input.parent, input.now) >= WITHDRAW_WAIT_SECONDS;
  const plan: WithdrawalPlan = { withdraw: [], waiting: [], kept: [] };
  const byName = (a: HsNode, b: HsNode) =>
    nodeName(a) < nodeName(b) ? -1 : nodeName(a) > nodeName(b) ? 1 : Number(a.id) - Number(b.id);

  for (const node of [...input.nodes].filter((n) => carriesAny(n, me.tags)).sort(byName)) {
    const name = nodeName(node);
    const remove: string[] = [];
    let exitDone = false;
    for (const route of node.approvedRoutes) {
      const r = parseCidr(route);
      if (!r.ok || !me.prefixes.has(r.cidr.text)) continue;
      const exit = isExitRoute(r.cidr);
      if (exit && exitDone) continue;
      const text = exit ? EXIT_ROUTES.join(" + ") : r.cidr.text;
      const hold = (list: HeldRoute[], why: string) => {
        list.push({ node: name, route: text, why });
        if (exit) exitDone = true;
      };
      const first = olderDeleting.find((o) => carriesAny(node, o.tags));
      if (first) {
        hold(
          plan.waiting,
          `TailnetSite ${first.id}, also being deleted, writes to this node first (one writer per node)`,
        );
        continue;
      }
      const claimant = others.find((o) => o.prefixes.has(r.cidr.text) && carriesAny(node, o.tags));
      if (claimant) {
        hold(plan.kept, `TailnetSite ${claimant.id} lists it too`);
        continue;
      }
      const covering = coveringEntries(input.live, r.cidr, node);
      const foreign = covering.find((c) => !me.tags.includes(c.tag) || (c.key !== undefined && c.key !== r.cidr.text));
      if (foreign) {
        hold(plan.kept, `the live policy auto-approves it through ${foreign.where} for ${foreign.tag}`);
        continue;
      }
      if (covering.length > 0) {
        const where = `${covering[0].where} for ${covering[0].tag}`;
        if (expired) {
          hold(
            plan.kept,
            `the live policy still auto-approves it through ${where} ${WITHDRAW_WAIT_SECONDS} s after the deletion (the same entry in the base policy, or the Tailnet cannot write)`,
          );
        } else {
          hold(
            plan.waiting,
            `Tailnet ${me.tailnet ?? ""} has not written the policy without this site yet: it still auto-approves it through ${where}`,
          );
        }
        continue;
      }
      if (exit) {
        exitDone = true;
        for (const x of node.approvedRoutes) {
          const c = parseCidr(x);
          if (c.ok && isExitRoute(c.cidr)) remove.push(x);
        }
      } else {
        remove.push(route);
      }
    }
    if (remove.length > 0) plan.withdraw.push({ nodeId: node.id, node: name, remove });
  }
  return plan;
}

/** The approved set to send: everything but `remove` (exit routes as the pair), in the node's order. */
export function remainingRoutes(approved: readonly string[], remove: readonly string[]): string[] {
  const gone = new Set(remove.map((r) => parseCidr(r)).flatMap((r) => (r.ok ? [r.cidr.text] : [])));
  const exit = [...gone].some((t) => EXIT_ROUTES.includes(t as (typeof EXIT_ROUTES)[number]));
  return approved.filter((route) => {
    const r = parseCidr(route);
    if (!r.ok) return true;
    return !(gone.has(r.cidr.text) || (exit && isExitRoute(r.cidr)));
  });
}

/** At most this many routes are named in one message; the rest are counted. */
const MAX_NAMED = 5;

function named(items: readonly HeldRoute[]): string {
  const shown = items
    .slice(0, MAX_NAMED)
    .map((h) => `${h.route} on ${h.node} (${h.why})`)
    .join("; ");
  return items.length > MAX_NAMED ? `${shown}; and ${items.length - MAX_NAMED} more` : shown;
}

/** Ready's message while a deletion waits (deterministic: plan order). */
export function waitingMessage(waiting: readonly HeldRoute[]): string {
  return `withdrawing route approvals: waiting on ${named(waiting)}`;
}

/** The log line's text for routes a deletion left approved. */
export function keptMessage(kept: readonly HeldRoute[]): string {
  return `route approvals left in place: ${named(kept)}`;
}

const SITE_CONDITION_TYPES = Object.values(SiteCondition);

/**
 * The status of a site being deleted: its last conditions as they were, and — while the deletion
 * waits — Ready=False/Withdrawing with `waiting` as the message.
 */
export function finalizeConditions(parent: K8sObject, waiting?: string): ConditionInput[] {
  const status = parent.status as { conditions?: unknown } | undefined;
  const previous = Array.isArray(status?.conditions) ? (status.conditions as Partial<ConditionInput>[]) : [];
  return SITE_CONDITION_TYPES.flatMap((type) => {
    if (type === SiteCondition.Ready && waiting !== undefined) {
      return [cond(type, "False", SiteReason.Withdrawing, waiting)];
    }
    const c = previous.find((x) => x?.type === type);
    if (!c || typeof c.reason !== "string") return [];
    const s = c.status === "True" || c.status === "False" ? c.status : "Unknown";
    return [cond(type, s, c.reason, typeof c.message === "string" ? c.message : "")];
  });
}
