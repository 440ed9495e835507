/**
 * Per-target state of an egress (pure): where each target lives in the tailnet (a node, or an
 * address behind a subnet route), whether the agent's netmap holds it, and whether the agent's
 * probe reached it. Headscale tells NotAdvertised from NotApproved; the agent's netmap tells
 * NoGrant (a route or node the policy does not grant is absent from it); the agent's probe tells
 * Unreachable. Without a scrape nothing is claimed: ProbeFailed.
 */

import { TargetReason } from "../../../conditions/tables/egress.js";
import type { AgentStatus } from "../../../contract/agent-status.js";
import type { Obs } from "../../../headscale/errors.js";
import { nodeIndex } from "../../../headscale/lists.js";
import type { HsNode } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { type Cidr, canonicalIp, cidrContains, isIp, parseCidrOrIp } from "../../../net/cidr.js";
import type { ScrapeResult } from "../../../pipeline/types.js";
import { buildNodeIndex, nodeAddress, resolveTargetHost } from "../../../policy/targets.js";
import { listNames, nodeLabel } from "../../shared/node-names.js";
import type { EgressTarget } from "./spec.js";

export type AgentObservation =
  | { ok: true; agents: { pod: string; status: AgentStatus }[] }
  | { ok: false; message: string };

type TargetReasonValue = (typeof TargetReason)[keyof typeof TargetReason];
export type RouteReason =
  | ""
  | typeof TargetReason.NotAdvertised
  | typeof TargetReason.NotApproved
  | typeof TargetReason.NoGrant
  | typeof TargetReason.TargetNotAllowed
  | typeof TargetReason.ProbeFailed;

export type DialVerdict =
  | { state: "reachable" }
  | { state: "unreachable"; error: string }
  /** The dial succeeded, but through the pod network, not the tailnet (the agent's /status `via`). */
  | { state: "outside"; message: string }
  | { state: "unknown"; message: string };

export interface TargetVerdict {
  name: string;
  host: string;
  /** Tailnet address the target resolved to ("" when unknown). */
  address: string;
  route: { reason: RouteReason; message: string };
  dial: DialVerdict;
  /** The target's reason in status: the route's, else the dial's ("" when Ready). */
  reason: "" | TargetReasonValue;
  message: string;
}

/** Route reasons that make RoutesGranted False (ProbeFailed makes it Unknown). */
export const ROUTE_MISSING: ReadonlySet<string> = new Set([
  TargetReason.NotAdvertised,
  TargetReason.NotApproved,
  TargetReason.NoGrant,
  TargetReason.TargetNotAllowed,
]);

/** Pods worth scraping: running and not being deleted (a terminating pod's answer is stale). */
export function scrapeablePods(pods: readonly K8sObject[]): K8sObject[] {
  return pods.filter(
    (p) => !p.metadata.deletionTimestamp && (p.status as { phase?: unknown } | undefined)?.phase === "Running",
  );
}

/** The status of the Pod's Ready condition ("True", "False"), undefined when it has none. */
function podReadyStatus(pod: K8sObject): string | undefined {
  const conditions = (pod.status as { conditions?: unknown } | undefined)?.conditions;
  if (!Array.isArray(conditions)) return undefined;
  const ready = conditions.find((c: { type?: unknown } | null) => c?.type === "Ready") as
    | { status?: unknown }
    | undefined;
  return typeof ready?.status === "string" ? ready.status : undefined;
}

/** Folds the scrape results into one observation: every pod answered and is ready, or ProbeFailed. */
export function agentObservation(pods: readonly K8sObject[], results: readonly ScrapeResult[]): AgentObservation {
  if (pods.length === 0) {
    return { ok: false, message: "no running agent pod to scrape (no replica is running yet, or replicas is 0)" };
  }
  const sorted = [...results].sort((a, b) => a.pod.localeCompare(b.pod));
  const failed = sorted.flatMap((r) => (r.ok ? [] : [`${r.pod} (${r.error})`]));
  if (failed.length) {
    return {
      ok: false,
      message: `agent pod ${listNames(failed)} not scraped: the pod is down or a NetworkPolicy blocks TCP 9080 from the operator`,
    };
  }
  // A Running pod the kubelet reports not Ready (a container down or restarting, a failing probe) is
  // no endpoint of the target Services, whatever its agent's last /status says: the agent probes on
  // a timer, so after its tailscaled died it still answers "ready" for up to a probe interval (seen
  // in test/real/egress.test.ts with the tailscale container restarting).
  const unready = pods.filter((p) => podReadyStatus(p) === "False").map((p) => p.metadata.name);
  if (unready.length) {
    return {
      ok: false,
      message: `agent pod ${listNames(unready.sort())} is not Ready (a container is down or fails its readiness probe), so the target Services have no endpoint there`,
    };
  }
  const agents = sorted.flatMap((r) => (r.ok ? [{ pod: r.pod, status: r.status }] : []));
  const notReady = agents.filter((a) => !a.status.ready).map((a) => a.pod);
  if (notReady.length) {
    return {
      ok: false,
      message: `agent pod ${listNames(notReady)} reports not ready: tailscaled is not running, so its netmap cannot be read`,
    };
  }
  return { ok: true, agents };
}

/** Where a target lives, as far as Headscale's node list tells. */
type Placement =
  | { kind: "node"; node: HsNode; address: string }
  | { kind: "subnet"; prefix: Cidr; address: string }
  | { kind: "unknownName" }
  | { kind: "unobserved"; error: string; address: string };

function place(host: string, nodes: Obs<HsNode[]>, baseDomain: string | undefined): Placement {
  if (!nodes.ok) return { kind: "unobserved", error: nodes.error.message, address: canonicalIp(host) ?? "" };
  const resolved = resolveTargetHost(host, buildNodeIndex(nodes.value, baseDomain));
  if (!resolved) return { kind: "unknownName" };
  // the index's node is one of this list's (by identity): a lookup, not a scan of every node per target
  const node = resolved.node ? nodeIndex(nodes.value).position.has(resolved.node as HsNode) : false;
  if (node) {
    const n = resolved.node as HsNode;
    return { kind: "node", node: n, address: nodeAddress(n) ?? resolved.address };
  }
  return { kind: "subnet", prefix: resolved.prefix, address: resolved.kind === "cidr" ? "" : resolved.address };
}

/** Subnet routes (never the /0 exit routes) that cover the prefix. */
const covering = (routes: readonly string[], prefix: Cidr): Cidr[] =>
  routes.flatMap((r) => {
    const c = parseCidrOrIp(r);
    return c && c.bits > 0 && cidrContains(c, prefix) ? [c] : [];
  });

const mostSpecific = (a: Cidr, b: Cidr) => b.bits - a.bits || a.text.localeCompare(b.text);

/** The most specific route covering the prefix that satisfies `pick`, with the nodes holding it. */
function routeHolders(
  nodes: readonly HsNode[],
  prefix: Cidr,
  pick: (node: HsNode, route: Cidr) => boolean,
): { route: string; nodes: string[] } | undefined {
  const pairs = nodes.flatMap((n) =>
    covering(n.availableRoutes, prefix).flatMap((r) => (pick(n, r) ? [{ n, r }] : [])),
  );
  if (!pairs.length) return undefined;
  const best = pairs.map((p) => p.r).sort(mostSpecific)[0];
  const holders = pairs.filter((p) => p.r.text === best.text).map((p) => nodeLabel(p.n));
  return { route: best.text, nodes: [...new Set(holders)].sort() };
}

const approvedOn = (node: HsNode, route: Cidr) =>
  node.approvedRoutes.some((a) => parseCidrOrIp(a)?.text === route.text);

/** The target is in this agent's netmap: a peer holds one of its IPs, or serves a route covering it. */
function inNetmap(status: AgentStatus, ips: readonly string[], prefix: Cidr | null): boolean {
  const peerIps = new Set(status.peers.flatMap((p) => p.tailscaleIPs.map((ip) => canonicalIp(ip) ?? ip)));
  if (ips.some((ip) => peerIps.has(canonicalIp(ip) ?? ip))) return true;
  return prefix !== null && status.peers.some((p) => covering(p.primaryRoutes, prefix).length > 0);
}

function routeVerdict(target: EgressTarget, where: Placement, status: AgentStatus, tag: string, nodes: Obs<HsNode[]>) {
  const agentAddress = status.targets.find((t) => t.name === target.name)?.address ?? "";
  const agentIp = isIp(agentAddress) ? [agentAddress] : [];
  const ok = { reason: "" as RouteReason, message: "" };
  switch (where.kind) {
    case "node": {
      if (inNetmap(status, [...where.node.ipAddresses, ...agentIp], null)) return ok;
      return {
        reason: TargetReason.NoGrant,
        message: `${nodeLabel(where.node)} (${where.address}) is not in the agent's netmap: the policy does not grant ${tag} access to it`,
      };
    }
    case "subnet": {
      if (inNetmap(status, where.address ? [where.address] : [], where.prefix)) return ok;
      const all = nodes.ok ? nodes.value : [];
      const what = where.address || where.prefix.text;
      const advertised = routeHolders(all, where.prefix, () => true);
      if (!advertised) {
        return { reason: TargetReason.NotAdvertised, message: `no node advertises a route covering ${what}` };
      }
      const approved = routeHolders(all, where.prefix, approvedOn);
      if (!approved) {
        return {
          reason: TargetReason.NotApproved,
          message: `route ${advertised.route} advertised by ${listNames(advertised.nodes)} is not approved (a route inside a TailnetSite is approved on the next policy reconcile)`,
        };
      }
      return {
        reason: TargetReason.NoGrant,
        message: `route ${approved.route} is approved on ${listNames(approved.nodes)} but not in the agent's netmap: the policy does not grant ${tag} access to ${what}`,
      };
    }
    case "unknownName": {
      if (inNetmap(status, agentIp, null)) return ok;
      return {
        reason: TargetReason.NotAdvertised,
        message: `"${target.host}" is not a tailnet node (node names, and MagicDNS names under the Tailnet's dns.baseDomain, resolve)`,
      };
    }
    case "unobserved": {
      const ips = [where.address, ...agentIp].filter(Boolean);
      const prefix = ips.length ? parseCidrOrIp(ips[0]) : null;
      if (inNetmap(status, ips, prefix)) return ok;
      return { reason: TargetReason.ProbeFailed, message: `${where.error} (routes cannot be checked)` };
    }
  }
}

function dialVerdict(target: EgressTarget, pod: string, status: AgentStatus): DialVerdict {
  const probe = status.targets.find((t) => t.name === target.name);
  if (!probe) {
    return {
      state: "unknown",
      message: `agent pod ${pod} does not serve this target yet (its config predates the spec)`,
    };
  }
  if (!probe.reachable) return { state: "unreachable", error: probe.error };
  if (probe.via === "outside") {
    return {
      state: "outside",
      message: `agent pod ${pod} reached ${probe.address} outside the tailnet, through the pod network: no peer holds it, or the agent does not accept the peers' subnet routes (--accept-routes)`,
    };
  }
  return { state: "reachable" };
}

const ROUTE_RANK: Record<RouteReason, number> = {
  [TargetReason.TargetNotAllowed]: -1,
  [TargetReason.NotAdvertised]: 0,
  [TargetReason.NotApproved]: 1,
  [TargetReason.NoGrant]: 2,
  [TargetReason.ProbeFailed]: 3,
  "": 4,
};

export interface TargetInputs {
  targets: readonly EgressTarget[];
  tag: string;
  nodes: Obs<HsNode[]>;
  /** The Tailnet's dns.baseDomain, to resolve MagicDNS names. */
  baseDomain?: string;
  agents: AgentObservation;
  /**
   * Targets the Tailnet renders no grant for, name → why: another object's agent node that does not admit
   * this egress (node-owners.ts refusedTargets). Known without the agents: no scrape can change it.
   */
  refused?: ReadonlyMap<string, string>;
}

/** One verdict per target, in spec order; with several agent pods the worst answer wins. */
export function evaluateTargets(inputs: TargetInputs): TargetVerdict[] {
  return inputs.targets.map((target) => {
    const where = place(target.host, inputs.nodes, inputs.baseDomain);
    const placedAddress =
      where.kind === "node" || where.kind === "subnet" || where.kind === "unobserved" ? where.address : "";
    const refusal = inputs.refused?.get(target.name);
    if (refusal !== undefined) {
      const reason = TargetReason.TargetNotAllowed;
      const message = `no grant: ${refusal}`;
      return {
        name: target.name,
        host: target.host,
        address: placedAddress,
        route: { reason, message },
        dial: { state: "unknown", message },
        reason,
        message,
      };
    }
    if (!inputs.agents.ok || inputs.agents.agents.length === 0) {
      const message = inputs.agents.ok ? "no agent pod was scraped" : inputs.agents.message;
      return {
        name: target.name,
        host: target.host,
        address: placedAddress,
        route: { reason: TargetReason.ProbeFailed, message },
        dial: { state: "unknown", message },
        reason: TargetReason.ProbeFailed,
        message,
      };
    }
    const routes = inputs.agents.agents.map((a) => routeVerdict(target, where, a.status, inputs.tag, inputs.nodes));
    const route = routes.reduce((worst, r) => (ROUTE_RANK[r.reason] < ROUTE_RANK[worst.reason] ? r : worst));
    const dials = inputs.agents.agents.map((a) => dialVerdict(target, a.pod, a.status));
    const dial =
      dials.find((d) => d.state === "unknown") ??
      dials.find((d) => d.state === "unreachable") ??
      dials.find((d) => d.state === "outside") ??
      dials[0];
    const agentAddress = inputs.agents.agents[0].status.targets.find((t) => t.name === target.name)?.address ?? "";
    const address = placedAddress || (isIp(agentAddress) ? agentAddress : "");
    const [reason, message]: ["" | TargetReasonValue, string] =
      route.reason !== ""
        ? [route.reason, route.message]
        : dial.state === "unknown"
          ? [TargetReason.ProbeFailed, dial.message]
          : dial.state === "unreachable"
            ? [TargetReason.Unreachable, dial.error]
            : dial.state === "outside"
              ? [TargetReason.OutsideTailnet, dial.message]
              : ["", ""];
    return { name: target.name, host: target.host, address, route, dial, reason, message };
  });
}
