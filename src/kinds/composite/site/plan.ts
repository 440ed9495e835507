/**
 * TailnetSite plan (pure): the approve_routes calls this sync wants — on each node this site writes to
 * (one writer per node, writer.ts), the announced but unapproved prefixes of every live site claiming
 * the node, this site's first. Nothing is wanted without a readable node list, for a site blocked by
 * RouteConflict, in DryRun, or on a Tailnet that reports HeadscaleCompatible=False (approvalWithheld).
 */
import type { HsNode } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { completesDefaultRoute } from "../../shared/routes.js";
import { tailnetIncompatible } from "../../shared/workload.js";
import { previouslyApproved } from "./advertisers.js";
import { siteConflict } from "./conflict.js";
import type { NodesObservation, SiteObservation, SiteTailnet } from "./observe.js";
import { advertiserFacts, canonicalRoute, carriesAny, nodeName } from "./routes.js";
import type { SiteSpec } from "./spec.js";
import { type NodeWriters, nodeWriters } from "./writer.js";

/** What plan and decide read: the parent and its spec, the related sites, the Tailnet, the node list. */
export interface SitePlanInput {
  parent: K8sObject;
  spec: SiteSpec;
  /** Every TailnetSite (related), the parent included or not. */
  sites: readonly K8sObject[];
  tailnet: SiteTailnet;
  /** Undefined when Headscale was not queried (no Tailnet or no API key). */
  nodes?: NodesObservation;
}

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

export interface SitePlan {
  approvals: ApprovalAction[];
}

const byNodeName = (a: HsNode, b: HsNode) =>
  nodeName(a) < nodeName(b) ? -1 : nodeName(a) > nodeName(b) ? 1 : Number(a.id) - Number(b.id);

export const idOf = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/**
 * Nodes without an `approvedRoutes` field come from a Headscale older than 0.26 (routes were
 * separate objects then): their routes cannot be read, so they are not observed rather than
 * "nothing approved" — and an approval would be a write to a server the operator does not drive.
 */
export function readableNodes(nodes: NodesObservation | undefined): NodesObservation | undefined {
  if (!nodes?.ok || nodes.value.every((n) => n.shape.hasApprovedRoutes)) return nodes;
  return { ok: false, message: "node objects carry no approvedRoutes (Headscale older than 0.26 is not supported)" };
}

/** Why nothing is approved although something may be pending; "" when the operator would approve. */
export function approvalWithheld(input: SitePlanInput, blocked: boolean): string {
  if (blocked) return "the site is blocked by RouteConflict: nothing is approved for it";
  if (input.tailnet.ok && input.tailnet.settings.policyMode === "DryRun") {
    return `Tailnet ${input.tailnet.settings.name} is in DryRun (spec.policy.mode): the operator approves no routes`;
  }
  if (input.tailnet.ok && tailnetIncompatible(input.tailnet.tailnet)) {
    return `Tailnet ${input.tailnet.settings.name} reports HeadscaleCompatible=False: the operator does not write to this server`;
  }
  return "";
}

function approvalsFor(me: string, nodes: readonly HsNode[], writers: NodeWriters): ApprovalAction[] {
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
      // never the route that completes a default route in pieces on this node (shared/routes.ts): halves of
      // two sites on one router would route everything without autoApprovers.exitNode
      const fresh = (fact?.pending ?? []).filter(
        (x) =>
          !seen.has(canonicalRoute(x.route) ?? x.route) && !completesDefaultRoute(node.approvedRoutes, add, x.route),
      );
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

export function planSite(input: SitePlanInput): SitePlan {
  const t = input.tailnet;
  const nodes = readableNodes(input.nodes);
  if (!t.ok || !nodes?.ok) return { approvals: [] };
  const reserved = t.settings.reservedNetworks;
  if (approvalWithheld(input, siteConflict(input.parent, input.sites, reserved).blocked)) return { approvals: [] };
  const writers = nodeWriters(input.parent, input.sites, reserved);
  return { approvals: approvalsFor(idOf(input.parent), nodes.value, writers) };
}

/** The plan's (and decide's) input from the stages' values: the observation without the view. */
export function planInput(parent: K8sObject, spec: SiteSpec, observed: SiteObservation): SitePlanInput {
  return { parent, spec, sites: observed.sites, tailnet: observed.tailnet, nodes: observed.nodes };
}
