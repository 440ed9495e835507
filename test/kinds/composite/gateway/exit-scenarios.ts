/**
 * The exit-node rows of the TailnetGateway decide table (spec.exitNode, issue 27 part 3): one per ExitNode
 * reason and per Ready blocker it adds. decide.test.ts covers them with the other rows; exit.test.ts runs them
 * and asserts messages, writes and the pod's TS_ROUTES.
 */
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { GatewayInputs } from "../../../../src/kinds/composite/gateway/plan.js";
import { leftOutText } from "../../shared/left-out-fixture.js";
import {
  FRESH,
  gateway,
  haHealthy,
  haNode,
  healthy,
  hsKey,
  hsNode,
  liveReplicas,
  ROUTE,
  renderInput,
} from "./fixtures.js";
import type { Row } from "./scenarios.js";

export const PAIR = ["0.0.0.0/0", "::/0"];
export const exitParent = gateway({ exitNode: { allowFrom: ["group:eng"] } });

/** A healthy exit-node gateway whose node advertises (and by default has approved) the exit pair. */
export function exitHealthy(
  node: Partial<HsNode> = {},
  over: Partial<GatewayInputs> = {},
  parent: K8sObject = exitParent,
) {
  const routes = [ROUTE, ...PAIR];
  return healthy({
    ...renderInput(parent),
    parent,
    headscale: {
      nodes: { ok: true, value: [hsNode({ availableRoutes: routes, approvedRoutes: routes, ...node })] },
      keys: { ok: true, value: [hsKey()] },
    },
    ...over,
  });
}

const unapproved = { approvedRoutes: [ROUTE] };

/** replicas 2 with spec.exitNode: node 12 serves the pair, node 13 does not advertise it yet. */
function haExit(): GatewayInputs {
  const parent = gateway({ replicas: 2, exitNode: { allowFrom: ["group:eng"] } });
  const served = { availableRoutes: [ROUTE, ...PAIR], approvedRoutes: [ROUTE, ...PAIR] };
  const base = haHealthy(2, [haNode(0, served), haNode(1)]);
  const r = renderInput(parent);
  return { ...base, ...r, observed: { ...base.observed, ...liveReplicas(r, ["12", "13"]) } };
}

export const exitRows: Row[] = [
  {
    name: "exit node: spec.exitNode.allowFrom outside allowedIngressSources (issue 31 item 5)",
    input: exitHealthy(unapproved, {
      exitNode: {
        state: "refused",
        reason: "PolicyDenied",
        message:
          "spec.exitNode.allowFrom: group:eng not in Tailnet home's spec.allowedIngressSources; the gateway is no exit node (nothing advertised, approved or granted)",
      },
    }),
    expect: { ExitNode: "PolicyDenied", RoutesInSync: "Approved", Ready: "PolicyDenied" },
  },
  {
    name: "the Tailnet left the gateway out of the policy: RoutesInSync says so, its own approval goes on (issue 31 item 4)",
    input: exitHealthy(unapproved, { leftOut: leftOutText() }),
    expect: { RoutesInSync: "LeftOutOfPolicy", ExitNode: "Approved", Ready: "LeftOutOfPolicy" },
  },
  {
    name: "a route overlapping the Tailnet's reservedNetworks: no route approved (issue 31 item 5)",
    input: exitHealthy(unapproved, {
      routeConflict:
        "route 10.96.0.0/12 of TailnetGateway infra/gw overlaps reserved network 10.96.0.0/12 of Tailnet home; no route of this gateway is approved",
    }),
    expect: { RoutesInSync: "OverlapsReserved", Ready: "OverlapsReserved" },
  },
  {
    name: "exit node: the node advertises and has 0.0.0.0/0, ::/0 approved",
    input: exitHealthy(),
    expect: { ExitNode: "Approved", RoutesInSync: "Approved", Ready: "FreshRuntimeReady" },
  },
  {
    name: "exit node: advertised, not approved yet: the operator approves the pair",
    input: exitHealthy(unapproved),
    expect: { ExitNode: "Approved", Ready: "FreshRuntimeReady" },
  },
  {
    name: "exit node: the approval failed",
    input: exitHealthy(unapproved),
    outcome: { deleted: [], approveExit: { ok: false, error: 'node 12 "cluster-gw": Headscale POST …: 500' } },
    expect: { ExitNode: "NotApproved", Ready: "NotApproved" },
  },
  {
    name: "exit node in DryRun: advertised, never approved by the operator",
    input: exitHealthy(unapproved, { tailnet: { ...renderInput(exitParent, "DryRun").tailnet } }),
    expect: { ExitNode: "NotApproved", Ready: "NotApproved" },
  },
  {
    name: "exit node: the node does not advertise the pair yet",
    input: exitHealthy({ availableRoutes: [ROUTE], approvedRoutes: [ROUTE] }),
    expect: { ExitNode: "NotAdvertised", Ready: "NotAdvertised" },
  },
  {
    name: "exit node: no node registered yet",
    input: exitHealthy(
      {},
      { headscale: { nodes: { ok: true, value: [] }, keys: { ok: true, value: [hsKey()] } }, ...FRESH },
    ),
    expect: { ExitNode: "NotAdvertised", Registered: "Provisioning", Ready: "Provisioning" },
  },
  {
    name: "exit node refused by the Tailnet's spec.tenancy.exitNodes",
    input: exitHealthy(
      {},
      {
        exitNode: {
          state: "refused",
          reason: "ExitNodeNotAllowed",
          message: "spec.exitNode: the Tailnet's spec.tenancy.exitNodes is not set",
        },
      },
    ),
    expect: { ExitNode: "ExitNodeNotAllowed", RoutesInSync: "Approved", Ready: "ExitNodeNotAllowed" },
  },
  {
    name: "exit node: Headscale's nodes not read",
    input: exitHealthy(
      {},
      { headscale: { nodes: { ok: false, error: "GET /api/v1/node: 503" }, keys: { ok: true, value: [hsKey()] } } },
    ),
    expect: { ExitNode: "NotObserved", Ready: "NotObserved" },
  },
  {
    name: "exit node: the namespace's labels not observed (the live pod keeps what it advertises)",
    input: exitHealthy(
      {},
      { exitNode: { state: "unknown", message: "the labels of namespace infra are not observed", keep: true } },
    ),
    expect: { ExitNode: "NotObserved", Ready: "NotObserved", WorkloadCurrent: "PodCurrent" },
  },
  {
    name: "exit node with replicas 2: one node serves the pair, the other does not advertise it yet",
    input: haExit(),
    expect: { ExitNode: "Approved", Ready: "FreshRuntimeReady" },
  },
];
