/**
 * The decide() scenarios of the TailnetGateway table: one row per reason, in the order of the
 * reasons page (Suspended; Provisioning / FreshBlocked / IdentityChanged / FreshRuntimeReady;
 * Approved / NotApproved; PodCurrent / PodTemplateStale;
 * LoadBalancerAssigned / LBPending; ExternallyManaged), then the remaining reasons, plus
 * "all healthy". decide.test.ts runs the table; messages.test.ts asserts the messages verbatim.
 */
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { isRecord, type K8sObject } from "../../../../src/k8s/objects.js";
import type { GatewayWriteOutcome } from "../../../../src/kinds/composite/gateway/act.js";
import { decideGateway, type GatewayDecideInput } from "../../../../src/kinds/composite/gateway/decide.js";
import {
  type GatewayInputs,
  type GatewayPlan,
  gatewayWrites,
  NO_WRITES,
} from "../../../../src/kinds/composite/gateway/plan.js";
import { readGatewaySpec } from "../../../../src/kinds/composite/gateway/spec.js";
import { validateChildren } from "../../../helpers/validate.js";
import {
  corednsConfigMap,
  dnsServiceLive,
  FRESH,
  gateway,
  haHealthy,
  haNode,
  healthy,
  hsKey,
  hsNode,
  KEY_ID,
  liveReplicas,
  liveStatefulSet,
  podSpecOf,
  renderInput,
  unserved,
  ZONE,
} from "./fixtures.js";
import { identityRows } from "./identity-scenarios.js";

export const NEW_KEY = `nodekey:${"b".repeat(64)}`;
const NO_OUTCOME: GatewayWriteOutcome = { deleted: [] };

/** The plan for these facts: the node writes the rules want (the key work is act's and is not run here). */
export function planFor(input: GatewayDecideInput): GatewayPlan {
  return { writes: "unserved" in input ? NO_WRITES : gatewayWrites(input) };
}

/** plan → decide over one input; `decision.actions` are the plan's writes, `suspended` its withdrawal. */
export function run(given: GatewayDecideInput, outcomes: GatewayWriteOutcome = NO_OUTCOME) {
  // as in a sync, the spec is the parent's (the spec stage reads it): a row that swaps the parent gets its spec
  const input = { ...given, spec: readGatewaySpec(given.parent) };
  const plan = planFor(input);
  const decided = decideGateway(input, plan, outcomes);
  validateChildren(decided.children);
  const decision = { ...decided, actions: plan.writes, suspended: decided.withdrawn === true };
  const conditions = decided.conditions;
  const by = Object.fromEntries(conditions.map((c) => [c.type, c])) as Record<string, ConditionInput>;
  return { decision, conditions, by };
}

/** The input with replica 0's live StatefulSet edited (a copy). */
export function withStatefulSet(input: GatewayInputs, edit: (d: Record<string, unknown>) => void): GatewayInputs {
  const [live, ...rest] = input.observed.statefulSets;
  if (!live) throw new Error("the input has no live StatefulSet");
  const d: K8sObject = structuredClone(live);
  edit(d);
  const children = input.observed.children.map((c) => (c === live ? d : c));
  return { ...input, observed: { ...input.observed, statefulSets: [d, ...rest], children } };
}

/** Observed children of a settled gateway `p` (node 12 bound to replica 0), with this Service. */
const observedFor = (p: K8sObject, service: K8sObject) => ({
  service,
  ...liveReplicas(renderInput(p), ["12"]),
  legacyKeySecrets: [],
});

/** An offline node of ours (key 6, recorded) that no replica holds, registered long ago: stale. */
const staleNode = () => hsNode({ id: "5", keyId: "6", createdAt: "2026-11-29T09:00:00Z", online: false });

export interface Row {
  name: string;
  input: GatewayDecideInput;
  /** What act did with the plan's writes (default: nothing to do). */
  outcome?: GatewayWriteOutcome;
  /** Condition type → reason. */
  expect: Record<string, string>;
}

const suspendedParent = gateway({ suspend: true });
const lbParent = gateway({ service: { type: "LoadBalancer" } });

export const rows: Row[] = [
  {
    name: "suspended gateway",
    input: healthy({ ...renderInput(suspendedParent), parent: suspendedParent }),
    expect: { Ready: "Suspended", DNSReady: "NotServing", Registered: "FreshRuntimeReady" },
  },
  {
    name: "no node has registered yet",
    input: healthy({
      headscale: { nodes: { ok: true, value: [] }, keys: { ok: true, value: [hsKey({ used: false })] } },
      ...FRESH,
      previousNode: undefined,
    }),
    expect: { Registered: "Provisioning", Ready: "Provisioning", RoutesInSync: "NotApproved", StaleNodes: "None" },
  },
  {
    name: "bootstrap key expired and no new one could be created",
    input: healthy({
      now: new Date("2026-11-29T11:00:00Z"),
      key: { ...healthy().key, error: "Headscale POST /api/v1/preauthkey: 500 fault injected: 500" },
    }),
    expect: { Registered: "FreshBlocked", Ready: "FreshBlocked", StaleNodes: "None", RoutesInSync: "Approved" },
  },
  {
    name: "rogue node with the gateway tag registered with another key",
    input: healthy({
      headscale: {
        nodes: {
          ok: true,
          value: [
            hsNode(),
            hsNode({ id: "13", name: "rogue", givenName: "rogue", keyId: "9", createdAt: "2026-11-29T09:40:00Z" }),
          ],
        },
        keys: { ok: true, value: [hsKey()] },
      },
    }),
    expect: { Registered: "FreshBlocked", Ready: "FreshBlocked", StaleNodes: "None" },
  },
  {
    name: "bootstrap key drifted from Headscale's record (made single-use)",
    input: healthy({
      headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey({ reusable: false })] } },
    }),
    expect: { Registered: "FreshBlocked", Ready: "FreshBlocked" },
  },
  {
    name: "live pod template edited outside the operator",
    input: withStatefulSet(healthy(), (d) => {
      podSpecOf(d).hostNetwork = true;
    }),
    expect: { Registered: "FreshBlocked", Ready: "FreshBlocked", WorkloadCurrent: "PodCurrent" },
  },
  {
    name: "node key changed since status.nodes[] recorded it",
    input: healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ nodeKey: NEW_KEY })] }, keys: { ok: true, value: [hsKey()] } },
    }),
    expect: { Registered: "IdentityChanged", Ready: "IdentityChanged", StaleNodes: "None" },
  },
  {
    name: "all healthy",
    input: healthy(),
    expect: {
      Registered: "FreshRuntimeReady",
      RoutesInSync: "Approved",
      DNSReady: "Serving",
      StaleNodes: "None",
      ClusterDNSForward: "Configured",
      WorkloadCurrent: "PodCurrent",
      ServiceReady: "ClusterIPAssigned",
      Ready: "FreshRuntimeReady",
    },
  },
  {
    name: "route advertised but not approved: the operator approves it",
    input: healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] }, keys: { ok: true, value: [hsKey()] } },
    }),
    expect: { RoutesInSync: "Approved", Ready: "FreshRuntimeReady" },
  },
  {
    name: "route not approved and the Tailnet is in DryRun",
    input: {
      ...healthy({
        headscale: {
          nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] },
          keys: { ok: true, value: [hsKey()] },
        },
      }),
      tailnet: { ...renderInput(gateway(), "DryRun").tailnet },
    },
    expect: { RoutesInSync: "NotApproved", Ready: "NotApproved" },
  },
  {
    name: "pod template rolled out",
    input: healthy(),
    expect: { WorkloadCurrent: "PodCurrent" },
  },
  {
    name: "rendered pod template not applied yet (rollout pending)",
    input: withStatefulSet(healthy(), (d) => {
      // an earlier rendering (logs still on): a valid stamp of another template
      const earlier = liveStatefulSet({ ...renderInput(gateway()), noLogsNoSupport: false });
      d.spec = earlier.spec;
    }),
    expect: { WorkloadCurrent: "PodTemplateStale", Ready: "PodTemplateStale", Registered: "FreshRuntimeReady" },
  },
  {
    name: "rollout in progress: the pod is not ready at the new revision yet",
    input: withStatefulSet(healthy(), (d) => {
      d.status = { ...(isRecord(d.status) ? d.status : {}), readyReplicas: 0, currentRevision: "r0" };
    }),
    expect: { WorkloadCurrent: "PodTemplateStale", Ready: "PodTemplateStale" },
  },
  {
    name: "LoadBalancer Service with an address",
    input: healthy({
      ...renderInput(lbParent),
      parent: lbParent,
      observed: observedFor(lbParent, {
        ...dnsServiceLive("10.96.0.53", "LoadBalancer"),
        status: { loadBalancer: { ingress: [{ ip: "192.0.2.10" }] } },
      }),
    }),
    expect: { ServiceReady: "LoadBalancerAssigned", Ready: "FreshRuntimeReady" },
  },
  {
    name: "LoadBalancer Service still pending",
    input: healthy({
      ...renderInput(lbParent),
      parent: lbParent,
      observed: observedFor(lbParent, dnsServiceLive("10.96.0.53", "LoadBalancer")),
    }),
    expect: { ServiceReady: "LBPending", Ready: "LBPending" },
  },
  {
    name: "clusterDNSForward External",
    input: healthy({
      ...renderInput(gateway({ dns: { zone: ZONE, clusterDNSForward: "External" } })),
      parent: gateway({ dns: { zone: ZONE, clusterDNSForward: "External" } }),
    }),
    expect: { ClusterDNSForward: "ExternallyManaged", Ready: "FreshRuntimeReady" },
  },
  {
    name: "stale node with staleNodes: Keep",
    input: (() => {
      const p = gateway({ staleNodes: "Keep" });
      return healthy({
        ...renderInput(p),
        parent: p,
        observed: observedFor(p, dnsServiceLive()),
        headscale: { nodes: { ok: true, value: [staleNode(), hsNode()] }, keys: { ok: true, value: [hsKey()] } },
        recordedKeyIds: [KEY_ID, "6"],
      });
    })(),
    expect: { StaleNodes: "ExternallyManaged", Registered: "FreshRuntimeReady", Ready: "FreshRuntimeReady" },
  },
  {
    name: "stale node with staleNodes: Delete",
    input: healthy({
      headscale: { nodes: { ok: true, value: [staleNode(), hsNode()] }, keys: { ok: true, value: [hsKey()] } },
      recordedKeyIds: [KEY_ID, "6"],
    }),
    expect: { StaleNodes: "Deleted", Ready: "FreshRuntimeReady" },
  },
  {
    name: "CoreDNS not ready in the gateway pod",
    input: healthy({
      related: {
        ...healthy().related,
        pods: [{ name: "gw-gateway-0-0", replica: 0, deleting: false, ready: { tailscale: true, coredns: false } }],
      },
    }),
    expect: { DNSReady: "NotServing", Ready: "NotServing" },
  },
  {
    // a hand-made Service of the egress's target (no controller): no record (shared/zone-owners.ts)
    name: "the zone leaves out a name whose Service the operator did not make",
    input: healthy({
      related: {
        ...healthy().related,
        egresses: [
          {
            apiVersion: "tailnet.internal/v1alpha1",
            kind: "TailnetEgress",
            metadata: { name: "db", namespace: "shop", uid: "e1", creationTimestamp: "2026-11-01T00:00:00Z" },
            spec: { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1.ts.example.com" }] },
          },
        ],
        services: [
          {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "pg", namespace: "shop", labels: { "tailnet.internal/egress-target": "true" } },
            spec: { clusterIP: "10.96.6.6" },
          },
        ],
      },
    }),
    expect: { DNSReady: "ZoneNamesRefused", Ready: "FreshRuntimeReady" },
  },
  {
    name: "cluster Corefile has no block for the zone",
    input: healthy({
      related: { ...healthy().related, coredns: corednsConfigMap(".:53 {\n    forward . /etc/resolv.conf\n}\n") },
    }),
    expect: { ClusterDNSForward: "NotConfigured", Ready: "FreshRuntimeReady" },
  },
  {
    name: "Headscale unreachable",
    input: healthy({
      headscale: {
        nodes: { ok: false, error: "Headscale GET /api/v1/node: connect ECONNREFUSED" },
        keys: { ok: false, error: "Headscale GET /api/v1/preauthkey: connect ECONNREFUSED" },
      },
    }),
    expect: { Registered: "NotObserved", RoutesInSync: "NotObserved", StaleNodes: "NotObserved", Ready: "NotObserved" },
  },
  {
    name: "approval failed in Headscale",
    input: healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] }, keys: { ok: true, value: [hsKey()] } },
    }),
    outcome: {
      approve: { ok: false, error: "Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 boom" },
      deleted: [],
    },
    expect: { RoutesInSync: "NotApproved", Ready: "NotApproved" },
  },
  {
    name: "deleting a stale node failed",
    input: healthy({
      headscale: { nodes: { ok: true, value: [staleNode(), hsNode()] }, keys: { ok: true, value: [hsKey()] } },
      recordedKeyIds: [KEY_ID, "6"],
    }),
    outcome: {
      deleted: [{ id: "5", node: 'node 5 "cluster-gw"', error: "Headscale DELETE /api/v1/node/{nodeId}: 500 boom" }],
    },
    expect: { StaleNodes: "Deleted", Ready: "FreshRuntimeReady" },
  },
  {
    name: "a key minted in this sync holds the approval back",
    input: healthy({
      key: { ...healthy().key, keyId: "8" },
      headscale: {
        nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] },
        keys: { ok: true, value: [hsKey(), hsKey({ id: "8", used: false })] },
      },
    }),
    outcome: { minted: "8", deleted: [] },
    expect: { RoutesInSync: "NotApproved", Ready: "NotApproved", Registered: "FreshRuntimeReady" },
  },
  {
    name: "DNS Service without a cluster IP yet",
    input: healthy({ observed: { ...healthy().observed, service: dnsServiceLive("None") } }),
    expect: { ServiceReady: "ClusterIPAssigned", Ready: "ClusterIPAssigned", ClusterDNSForward: "NotConfigured" },
  },
  {
    name: "no Tailnet",
    input: unserved({ reason: "NoTailnet", message: 'Tailnet "home" not found' }),
    expect: { Registered: "NoTailnet", StaleNodes: "NoTailnet", ServiceReady: "NoTailnet", Ready: "NoTailnet" },
  },
  {
    name: "no credentials yet",
    input: unserved({ reason: "NoAPIKey", message: "Secret tailnet-system/tailnet-home-credentials not found yet" }),
    expect: { Registered: "NoAPIKey", RoutesInSync: "NoAPIKey", DNSReady: "NoAPIKey", Ready: "NoAPIKey" },
  },
  {
    name: "its TailnetProxyClass does not exist",
    input: unserved({
      reason: "ProxyClassMissing",
      message: "TailnetProxyClass edge does not exist; the agent pods keep their current settings until it does",
      tag: "tag:k8s-infra-gw",
    }),
    expect: { Registered: "ProxyClassMissing", WorkloadCurrent: "ProxyClassMissing", Ready: "ProxyClassMissing" },
  },
  ...(["NamespaceNotAllowed", "TagNotGranted", "TagInUse"] as const).map((reason) => ({
    name: `refused by the Tailnet's tenancy: ${reason}`,
    input: unserved({ reason, message: `refused: ${reason}`, tag: "tag:k8s-infra-gw" }),
    expect: { Registered: reason, WorkloadCurrent: reason, Ready: reason },
  })),
  {
    name: "suspended without a Tailnet",
    input: unserved({ reason: "NoTailnet", message: 'Tailnet "home" not found' }, { parent: suspendedParent }),
    expect: { Registered: "NoTailnet", Ready: "Suspended" },
  },
  {
    name: "no zone: Tailnet without a base domain",
    input: unserved({
      reason: "InvalidSpec",
      message: 'spec.dns.zone: required because Tailnet "home" has no spec.dns.baseDomain',
    }),
    expect: {
      Registered: "InvalidSpec",
      WorkloadCurrent: "InvalidSpec",
      ClusterDNSForward: "InvalidSpec",
      Ready: "InvalidSpec",
    },
  },
  // spec.replicas > 1 (decide-ha.test.ts asserts the messages and writes)
  {
    name: "replicas 3: 2 of 3 replicas bound, replica 1's route approved in this sync",
    input: haHealthy(3, [haNode(0), haNode(1, { approvedRoutes: [] })]),
    expect: {
      Registered: "FreshRuntimeReady",
      RoutesInSync: "Approved",
      StaleNodes: "None",
      Ready: "FreshRuntimeReady",
    },
  },
  {
    name: "replicas 2 in DryRun: no node has its route approved",
    input: haHealthy(2, [haNode(0, { approvedRoutes: [] }), haNode(1, { approvedRoutes: [] })], {
      tailnet: { ...renderInput(gateway({ replicas: 2 }), "DryRun").tailnet },
    }),
    expect: { Registered: "FreshRuntimeReady", RoutesInSync: "NotApproved", Ready: "NotApproved" },
  },
  {
    name: "replicas 2: an offline node of ours bound to no replica is stale and deleted",
    input: haHealthy(2, [haNode(0), haNode(1), haNode(2, { online: false })]),
    expect: { Registered: "FreshRuntimeReady", StaleNodes: "Deleted", Ready: "FreshRuntimeReady" },
  },
  {
    name: "replicas 2: one node's key changed",
    input: {
      ...haHealthy(2, [haNode(0), haNode(1)]),
      headscale: {
        nodes: { ok: true, value: [haNode(0), haNode(1, { nodeKey: NEW_KEY })] },
        keys: { ok: true, value: [hsKey({ reusable: true })] },
      },
    },
    expect: { Registered: "IdentityChanged", Ready: "IdentityChanged", StaleNodes: "None" },
  },
  {
    name: "replicas 2 with a single-use key (drifted from the reusable one the operator minted)",
    input: haHealthy(2, [hsNode()], {
      headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey({ reusable: false })] } },
    }),
    expect: { Registered: "FreshBlocked", Ready: "FreshBlocked" },
  },
  {
    name: "replicas 2: no node registered yet",
    input: haHealthy(2, []),
    expect: { Registered: "Provisioning", RoutesInSync: "NotApproved", StaleNodes: "None", Ready: "Provisioning" },
  },
];

export function scenario(name: string): GatewayInputs {
  const row = [...rows, ...identityRows].find((r) => r.name === name);
  if (!row || "unserved" in row.input) throw new Error(`no served scenario ${name}`);
  return row.input;
}
