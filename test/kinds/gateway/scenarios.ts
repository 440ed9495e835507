/**
 * The decide() scenarios of the TailnetGateway table: one row per reason, in the order of the
 * reasons page (Suspended; Provisioning / FreshBlocked / IdentityChanged / FreshRuntimeReady;
 * Approved / NotApproved; PodCurrent / PodTemplateStale / WorkloadUpdateBlocked;
 * LoadBalancerAssigned / LBPending; ExternallyManaged), then the remaining reasons, plus
 * "all healthy". decide.test.ts runs the table; messages.test.ts asserts the messages verbatim.
 */
import type { ConditionInput } from "../../../src/conditions/condition.js";
import {
  type ActOutcomes,
  decideGateway,
  finishConditions,
  type GatewayDecideInput,
} from "../../../src/kinds/gateway/decide.js";
import { validateChildren } from "../../helpers/validate.js";
import {
  corednsConfigMap,
  dnsServiceLive,
  gateway,
  healthy,
  hsKey,
  hsNode,
  liveDeployment,
  NODE_KEY,
  renderInput,
  ZONE,
} from "./fixtures.js";

export const NEW_KEY = `nodekey:${"b".repeat(64)}`;
const NO_WRITES: ActOutcomes = { deleted: [] };

export function run(input: GatewayDecideInput, outcomes: ActOutcomes = NO_WRITES) {
  const decision = decideGateway(input);
  validateChildren(decision.children);
  const conditions = finishConditions(decision, outcomes);
  const by = Object.fromEntries(conditions.map((c) => [c.type, c])) as Record<string, ConditionInput>;
  return { decision, conditions, by };
}

export function withDeployment(
  input: GatewayDecideInput,
  edit: (d: Record<string, unknown>) => void,
): GatewayDecideInput {
  const d = structuredClone(input.observed.deployment) as Record<string, unknown>;
  edit(d);
  return { ...input, observed: { ...input.observed, deployment: d as GatewayDecideInput["observed"]["deployment"] } };
}

export interface Row {
  name: string;
  observed: GatewayDecideInput;
  want: Record<string, string>;
}

const suspendedParent = gateway({ suspend: true });
const lbParent = gateway({ service: { type: "LoadBalancer" } });

export const rows: Row[] = [
  {
    name: "suspended gateway",
    observed: healthy({ ...renderInput(suspendedParent), parent: suspendedParent }),
    want: { Ready: "Suspended", DNSReady: "NotServing", Registered: "FreshRuntimeReady" },
  },
  {
    name: "no node has registered yet",
    observed: healthy({
      headscale: { nodes: { ok: true, value: [] }, keys: { ok: true, value: [hsKey({ used: false })] } },
      previousNode: undefined,
    }),
    want: { Registered: "Provisioning", Ready: "Provisioning", RoutesInSync: "NotApproved", StaleNodes: "None" },
  },
  {
    name: "bootstrap key expired and no new one could be created",
    observed: healthy({
      now: new Date("2026-11-29T11:00:00Z"),
      key: { ...healthy().key, error: "Headscale POST /api/v1/preauthkey: 500 fault injected: 500" },
    }),
    want: { Registered: "FreshBlocked", Ready: "FreshBlocked", StaleNodes: "None", RoutesInSync: "Approved" },
  },
  {
    name: "rogue node with the gateway tag registered with another key",
    observed: healthy({
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
    want: { Registered: "FreshBlocked", Ready: "FreshBlocked", StaleNodes: "None" },
  },
  {
    name: "bootstrap key drifted from Headscale's record (made reusable)",
    observed: healthy({
      headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey({ reusable: true })] } },
    }),
    want: { Registered: "FreshBlocked", Ready: "FreshBlocked" },
  },
  {
    name: "live pod template edited outside the operator",
    observed: withDeployment(healthy(), (d) => {
      const tpl = (d.spec as { template: { spec: { hostNetwork?: boolean } } }).template;
      tpl.spec.hostNetwork = true;
    }),
    want: { Registered: "FreshBlocked", Ready: "FreshBlocked", WorkloadCurrent: "PodCurrent" },
  },
  {
    name: "node key changed since status.node",
    observed: healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ nodeKey: NEW_KEY })] }, keys: { ok: true, value: [hsKey()] } },
    }),
    want: { Registered: "IdentityChanged", Ready: "IdentityChanged", StaleNodes: "None" },
  },
  {
    name: "all healthy",
    observed: healthy(),
    want: {
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
    observed: healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] }, keys: { ok: true, value: [hsKey()] } },
    }),
    want: { RoutesInSync: "Approved", Ready: "FreshRuntimeReady" },
  },
  {
    name: "route not approved and the Tailnet is in DryRun",
    observed: {
      ...healthy({
        headscale: {
          nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] },
          keys: { ok: true, value: [hsKey()] },
        },
      }),
      tailnet: { ...renderInput(gateway(), "DryRun").tailnet },
    },
    want: { RoutesInSync: "NotApproved", Ready: "NotApproved" },
  },
  {
    name: "pod template rolled out",
    observed: healthy(),
    want: { WorkloadCurrent: "PodCurrent" },
  },
  {
    name: "rendered pod template not applied yet (rollout pending)",
    observed: healthy({
      observed: { deployment: liveDeployment(renderInput(gateway()), "gw-authkey-6"), service: dnsServiceLive() },
    }),
    want: { WorkloadCurrent: "PodTemplateStale", Ready: "PodTemplateStale", Registered: "FreshRuntimeReady" },
  },
  {
    name: "rollout stuck past its progress deadline",
    observed: withDeployment(healthy(), (d) => {
      (d.status as { conditions: unknown[] }).conditions = [
        {
          type: "Progressing",
          status: "False",
          reason: "ProgressDeadlineExceeded",
          message: 'ReplicaSet "gw-gateway-5d" has timed out progressing.',
        },
      ];
    }),
    want: { WorkloadCurrent: "WorkloadUpdateBlocked", Ready: "WorkloadUpdateBlocked" },
  },
  {
    name: "LoadBalancer Service with an address",
    observed: healthy({
      ...renderInput(lbParent),
      parent: lbParent,
      observed: {
        deployment: liveDeployment(renderInput(lbParent)),
        service: {
          ...dnsServiceLive("10.96.0.53", "LoadBalancer"),
          status: { loadBalancer: { ingress: [{ ip: "192.0.2.10" }] } },
        },
      },
    }),
    want: { ServiceReady: "LoadBalancerAssigned", Ready: "FreshRuntimeReady" },
  },
  {
    name: "LoadBalancer Service still pending",
    observed: healthy({
      ...renderInput(lbParent),
      parent: lbParent,
      observed: {
        deployment: liveDeployment(renderInput(lbParent)),
        service: dnsServiceLive("10.96.0.53", "LoadBalancer"),
      },
    }),
    want: { ServiceReady: "LBPending", Ready: "LBPending" },
  },
  {
    name: "clusterDNSForward External",
    observed: healthy({
      ...renderInput(gateway({ dns: { zone: ZONE, clusterDNSForward: "External" } })),
      parent: gateway({ dns: { zone: ZONE, clusterDNSForward: "External" } }),
    }),
    want: { ClusterDNSForward: "ExternallyManaged", Ready: "FreshRuntimeReady" },
  },
  {
    name: "stale node with staleNodes: Keep",
    observed: (() => {
      const p = gateway({ staleNodes: "Keep" });
      return healthy({
        ...renderInput(p),
        parent: p,
        observed: { deployment: liveDeployment(renderInput(p)), service: dnsServiceLive() },
        headscale: {
          nodes: { ok: true, value: [hsNode({ id: "5", keyId: "6", createdAt: "2026-11-29T09:00:00Z" }), hsNode()] },
          keys: { ok: true, value: [hsKey()] },
        },
        previousNode: { id: "5", name: "cluster-gw", nodeKey: NODE_KEY, preAuthKeyId: "6" },
      });
    })(),
    want: { StaleNodes: "ExternallyManaged", Registered: "FreshRuntimeReady", Ready: "FreshRuntimeReady" },
  },
  {
    name: "stale node with staleNodes: Delete",
    observed: healthy({
      headscale: {
        nodes: { ok: true, value: [hsNode({ id: "5", keyId: "6", createdAt: "2026-11-29T09:00:00Z" }), hsNode()] },
        keys: { ok: true, value: [hsKey()] },
      },
      previousNode: { id: "5", name: "cluster-gw", nodeKey: NODE_KEY, preAuthKeyId: "6" },
    }),
    want: { StaleNodes: "Deleted", Ready: "FreshRuntimeReady" },
  },
  {
    name: "CoreDNS not ready in the gateway pod",
    observed: healthy({
      related: {
        ...healthy().related,
        pods: [{ name: "gw-gateway-0", deleting: false, ready: { tailscale: true, coredns: false } }],
      },
    }),
    want: { DNSReady: "NotServing", Ready: "NotServing" },
  },
  {
    name: "cluster Corefile has no block for the zone",
    observed: healthy({
      related: { ...healthy().related, coredns: corednsConfigMap(".:53 {\n    forward . /etc/resolv.conf\n}\n") },
    }),
    want: { ClusterDNSForward: "NotConfigured", Ready: "FreshRuntimeReady" },
  },
  {
    name: "Headscale unreachable",
    observed: healthy({
      headscale: {
        nodes: { ok: false, error: "Headscale GET /api/v1/node: connect ECONNREFUSED" },
        keys: { ok: false, error: "Headscale GET /api/v1/preauthkey: connect ECONNREFUSED" },
      },
    }),
    want: { Registered: "NotObserved", RoutesInSync: "NotObserved", StaleNodes: "NotObserved", Ready: "NotObserved" },
  },
];

export function scenario(name: string): GatewayDecideInput {
  const row = rows.find((r) => r.name === name);
  if (!row) throw new Error(`no scenario ${name}`);
  return row.observed;
}
