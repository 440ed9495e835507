/**
 * Builders shared by the TailnetGateway tests: the parent, Headscale nodes and keys, and a healthy
 * decide() input that each table row changes in one place.
 */

import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { Obj } from "../../../../src/emulator/metacontroller/types.js";
import { simulateStatefulSet } from "../../../../src/emulator/metacontroller/workloads.js";
import type { HsNode, HsPreAuthKey } from "../../../../src/headscale/types.js";
import { isRecord, type K8sObject } from "../../../../src/k8s/objects.js";
import {
  gatewayKeySecretName,
  gatewayLabels,
  gatewayReplica,
} from "../../../../src/kinds/composite/gateway/children.js";
import type { ExitNodeState } from "../../../../src/kinds/composite/gateway/exit.js";
import type { GatewayUnserved } from "../../../../src/kinds/composite/gateway/observe.js";
import type { GatewayInputs } from "../../../../src/kinds/composite/gateway/plan.js";
import { readGatewaySpec } from "../../../../src/kinds/composite/gateway/spec.js";
import { type RenderInput, renderStatefulSet } from "../../../../src/kinds/composite/gateway/workload.js";
import { authKeySecret } from "../../../../src/kinds/shared/authkey.js";
import { replicaIdentityChildren, stateSecret } from "../../../../src/kinds/shared/replica.js";
import type { NodeStatusItem, StateFact } from "../../../../src/kinds/shared/replica-nodes.js";
import { stampTemplate } from "../../../../src/kinds/shared/template-hash.js";
import { parentObject } from "../../../fixtures/hooks.js";

export const NOW = new Date("2026-11-29T10:00:00Z");
export const TAG = "tag:k8s-infra-gw";
export const ROUTE = "10.96.0.0/12";
export const ZONE = "ts.example.com";
export const UID = "00000000-0000-4000-8000-00000000aaaa";
export const KEY_ID = "7";
export const NODE_KEY = `nodekey:${"a".repeat(64)}`;

export function gateway(
  spec: Record<string, unknown> = {},
  opts: { status?: Record<string, unknown>; annotations?: Record<string, string> } = {},
): K8sObject {
  const p = parentObject(
    "TailnetGateway",
    "gw",
    { tailnetRef: { name: "home" }, hostname: "cluster-gw", routes: [ROUTE], dns: { zone: ZONE }, ...spec },
    { namespace: "infra", uid: UID, ...(opts.status ? { status: opts.status } : {}) },
  );
  if (opts.annotations) p.metadata.annotations = opts.annotations;
  return p;
}

export function hsKey(over: Partial<HsPreAuthKey> = {}): HsPreAuthKey {
  return {
    user: null,
    id: KEY_ID,
    key: "hskey-auth-abc-***",
    reusable: true,
    ephemeral: false,
    used: true,
    expiration: "2026-11-29T10:30:00Z",
    createdAt: "2026-11-29T09:30:00Z",
    aclTags: [TAG],
    ...over,
  };
}

export function hsNode(over: Partial<HsNode> & { keyId?: string | null } = {}): HsNode {
  const { keyId, ...rest } = over;
  const id = over.id ?? "12";
  return {
    id,
    machineKey: `mkey:${id}`,
    nodeKey: NODE_KEY,
    ipAddresses: ["100.64.0.12"],
    name: "cluster-gw",
    givenName: "cluster-gw",
    user: null,
    lastSeen: null,
    expiry: null,
    preAuthKey: keyId === null ? null : hsKey({ id: keyId ?? KEY_ID }),
    createdAt: "2026-11-29T09:31:00Z",
    registerMethod: "REGISTER_METHOD_AUTH_KEY",
    online: true,
    approvedRoutes: [ROUTE],
    availableRoutes: [ROUTE],
    subnetRoutes: [ROUTE],
    tags: [TAG],
    shape: { hasTags: true, hasApprovedRoutes: true },
    ...rest,
  };
}

/** The stable bootstrap key Secret (`gw-gateway-authkey`) holding key `id`. */
export function keySecret(parent: K8sObject, id = KEY_ID): K8sObject {
  return authKeySecret(
    parent,
    {
      id,
      key: `hskey-auth-abc-${"s".repeat(64)}`,
      createdAt: new Date("2026-11-29T09:30:00Z"),
      expiresAt: new Date("2026-11-29T10:30:00Z"),
    },
    gatewayLabels(parent),
    gatewayKeySecretName(parent),
  );
}

/** Replica i's state Secret as the API server holds it (creation before every node), device_id as given. */
export function liveStateSecret(parent: K8sObject, i: number, deviceId?: string): K8sObject {
  const s = stateSecret(gatewayReplica(parent, i)) as unknown as K8sObject;
  s.metadata.creationTimestamp = "2026-11-29T09:00:00Z";
  if (deviceId) s.data = { device_id: Buffer.from(deviceId).toString("base64"), _machinekey: "TUFSS0VS" };
  return s;
}

/** The state fact of replica i (replica-nodes.ts stateFacts of liveStateSecret). */
export function stateFact(i: number, deviceId?: string): StateFact {
  return {
    index: i,
    name: `gw-gateway-${i}-state`,
    created: new Date("2026-11-29T09:00:00Z"),
    ...(deviceId ? { deviceId } : {}),
    hasState: !!deviceId,
  };
}

/** status.nodes[] item recorded for replica i bound to node n. */
export function recordOf(i: number, n: HsNode): NodeStatusItem {
  return {
    replica: i,
    id: n.id,
    name: n.givenName,
    addresses: [...n.ipAddresses].sort(),
    nodeKey: n.nodeKey,
    machineKey: n.machineKey,
    ...(n.preAuthKey ? { preAuthKeyId: n.preAuthKey.id } : {}),
    online: n.online,
  };
}

/** spec.exitNode as an admitting Tailnet sees it (a row that refuses it sets `exitNode` itself). */
function admittedExit(spec: ReturnType<typeof readGatewaySpec>): ExitNodeState {
  return spec.exitNode ? { state: "allowed", allowFrom: spec.exitNode.allowFrom } : { state: "off" };
}

export function renderInput(parent: K8sObject, policyMode: "Apply" | "DryRun" = "Apply"): RenderInput {
  const spec = readGatewaySpec(parent);
  return {
    parent,
    spec,
    exitNode: admittedExit(spec),
    tag: TAG,
    zone: ZONE,
    images: DEFAULT_CONFIG.images,
    noLogsNoSupport: true,
    tailnet: {
      name: "home",
      loginServer: "https://hs.example.com",
      policyMode,
      baseDomain: ZONE,
      splitDomains: ["svc.cluster.local"],
    },
  };
}

/** Replica i's StatefulSet as the API server holds it after a finished rollout. */
export function liveStatefulSet(r: RenderInput, i = 0, secret: string | undefined = "gw-gateway-authkey"): K8sObject {
  const d = renderStatefulSet(r, i, secret);
  d.metadata.generation = 2;
  // the status the emulator's StatefulSet controller gives it (one model of the controller, shared)
  simulateStatefulSet({ objects: new Map(), nextUid: () => "", agentPods: undefined, available: true }, d as Obj);
  return d;
}

/** Every replica's live StatefulSet and identity children (what a settled sync observes). */
export function liveReplicas(r: RenderInput, deviceIds: readonly (string | undefined)[]) {
  const statefulSets = deviceIds.map((_, i) => liveStatefulSet(r, i));
  const children = deviceIds.flatMap((id, i) => [
    ...replicaIdentityChildren(gatewayReplica(r.parent, i)).filter((c) => c.kind !== "Secret"),
    liveStateSecret(r.parent, i, id),
  ]);
  return { statefulSets, children: [...children, ...statefulSets] };
}

export function dnsServiceLive(ip = "10.96.0.53", type = "ClusterIP"): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "gw-dns", namespace: "infra" },
    spec: { type, clusterIP: ip },
  };
}

export const CLUSTER_COREFILE = `.:53 {
    errors
    health
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 30
}
${ZONE}:53 {
    errors
    cache 30
    forward . 10.96.0.53
}
`;

export function corednsConfigMap(corefile = CLUSTER_COREFILE): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "coredns", namespace: "kube-system" },
    data: { Corefile: corefile },
  };
}

/** Everything healthy: key verified, node 12 ours with its route approved, pods ready, forward configured. */
export function healthy(over: Partial<GatewayInputs> = {}): GatewayInputs {
  const parent = over.parent ?? gateway();
  const r = renderInput(parent);
  const secret = keySecret(parent);
  return {
    ...r,
    metricsPeers: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "tailnet-system" } } }],
    now: NOW,
    observed: { service: dnsServiceLive(), ...liveReplicas(r, ["12"]), legacyKeySecrets: [] },
    related: {
      coredns: corednsConfigMap(),
      egresses: [],
      services: [],
      pods: [{ name: "gw-gateway-0-0", replica: 0, deleting: false, ready: { tailscale: true, coredns: true } }],
    },
    headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey()] } },
    key: { secret, keyId: KEY_ID, expiresAt: new Date("2026-11-29T10:30:00Z") },
    stateFacts: [stateFact(0, "12")],
    record: [recordOf(0, hsNode())],
    recordedKeyIds: [KEY_ID],
    previousNode: { id: "12", name: "cluster-gw", nodeKey: NODE_KEY, preAuthKeyId: KEY_ID },
    ...over,
  };
}

/** A gateway that is not served (no Tailnet, no credentials, no usable zone): its observed children are kept. */
export function unserved(
  why: GatewayUnserved["unserved"],
  over: { parent?: K8sObject; children?: K8sObject[] } = {},
): GatewayUnserved {
  const parent = over.parent ?? gateway();
  return { parent, spec: readGatewaySpec(parent), children: over.children ?? [], unserved: why };
}

/** The pod spec inside a StatefulSet, for a row that edits the live template (narrowed, not cast). */
export function podSpecOf(workload: Record<string, unknown>): Record<string, unknown> {
  const template = isRecord(workload.spec) ? workload.spec.template : undefined;
  const pod = isRecord(template) ? template.spec : undefined;
  if (!isRecord(pod)) throw new Error("the workload has no pod template spec");
  return pod;
}

/** Gateway node `n` (0-based, replica n's) of a replicated gateway: ids 12, 13, …, names cluster-gw, cluster-gw-r1, …. */
export function haNode(n: number, over: Partial<HsNode> & { keyId?: string | null } = {}): HsNode {
  const name = n === 0 ? "cluster-gw" : `cluster-gw-r${n}`;
  return hsNode({
    id: String(12 + n),
    name,
    givenName: name,
    nodeKey: `nodekey:${String(n).repeat(64)}`,
    ipAddresses: [`100.64.0.${12 + n}`],
    createdAt: `2026-11-29T09:3${1 + n}:00Z`,
    preAuthKey: hsKey({ reusable: true, id: over.keyId ?? KEY_ID }),
    ...over,
  });
}

/**
 * A healthy gateway with spec.replicas `replicas`: its reusable key, these nodes (node i bound to replica i by its
 * state Secret when i < replicas), status.nodes as they are.
 */
export function haHealthy(
  replicas: number,
  nodes: HsNode[],
  over: Partial<GatewayInputs> & { spec?: Record<string, unknown> } = {},
): GatewayInputs {
  const { spec, ...rest } = over;
  const parent = gateway({ replicas, ...spec });
  const r = renderInput(parent);
  const bound = Array.from({ length: replicas }, (_, i) => nodes[i]?.id);
  const record = bound.flatMap((_, i) => (nodes[i] ? [recordOf(i, nodes[i])] : []));
  return healthy({
    ...r,
    observed: { service: dnsServiceLive(), ...liveReplicas(r, bound), legacyKeySecrets: [] },
    headscale: { nodes: { ok: true, value: nodes }, keys: { ok: true, value: [hsKey({ reusable: true })] } },
    stateFacts: bound.map((id, i) => stateFact(i, id)),
    record,
    ...(record.length
      ? { previousNode: { id: record[0].id, name: record[0].name, nodeKey: record[0].nodeKey, preAuthKeyId: KEY_ID } }
      : { previousNode: undefined }),
    ...rest,
  });
}

/** The gateway Deployment from before per-replica identity (the upgrade's starting point), as it ran. */
export function legacyDeployment(parent: K8sObject = gateway()): K8sObject {
  const selector = { "app.kubernetes.io/name": "tailnet-gateway", "tailnet.internal/owner-uid": UID };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "gw-gateway", namespace: "infra", labels: { ...gatewayLabels(parent), ...selector } },
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      template: stampTemplate<{
        metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
        spec: unknown;
      }>({
        metadata: { labels: { ...gatewayLabels(parent), ...selector } },
        spec: { containers: [{ name: "tailscale", image: DEFAULT_CONFIG.images.tailscale }] },
      }),
    },
  };
}

/** A replica that has not logged in yet: no device_id in its state Secret, nothing recorded. */
export const FRESH = { stateFacts: [stateFact(0)], record: [] as NodeStatusItem[] };
