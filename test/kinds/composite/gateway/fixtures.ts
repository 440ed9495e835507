/**
 * Builders shared by the TailnetGateway tests: the parent, Headscale nodes and keys, and a healthy
 * decide() input that each table row changes in one place.
 */

import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { HsNode, HsPreAuthKey } from "../../../../src/headscale/types.js";
import { isRecord, type K8sObject } from "../../../../src/k8s/objects.js";
import { gatewayLabels } from "../../../../src/kinds/composite/gateway/children.js";
import type { ExitNodeState } from "../../../../src/kinds/composite/gateway/exit.js";
import type { GatewayUnserved } from "../../../../src/kinds/composite/gateway/observe.js";
import type { GatewayInputs } from "../../../../src/kinds/composite/gateway/plan.js";
import { readGatewaySpec } from "../../../../src/kinds/composite/gateway/spec.js";
import { type RenderInput, renderDeployment } from "../../../../src/kinds/composite/gateway/workload.js";
import { authKeySecret } from "../../../../src/kinds/shared/authkey.js";
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
    reusable: false,
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
    discoKey: `discokey:${id}`,
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
  );
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

/** The gateway Deployment as the API server holds it after a finished rollout. */
export function liveDeployment(r: RenderInput, secret: string | undefined = `gw-authkey-${KEY_ID}`): K8sObject {
  const d = renderDeployment(r, secret);
  const replicas = (d.spec as { replicas: number }).replicas;
  d.metadata.generation = 2;
  d.status = {
    observedGeneration: 2,
    replicas,
    updatedReplicas: replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
    conditions: [
      { type: "Available", status: "True" },
      { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
    ],
  };
  return d;
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
    observed: { deployment: liveDeployment(r), service: dnsServiceLive() },
    related: {
      coredns: corednsConfigMap(),
      egresses: [],
      services: [],
      pods: [{ name: "gw-gateway-0", deleting: false, ready: { tailscale: true, coredns: true } }],
    },
    headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey()] } },
    key: { secret, keyId: KEY_ID, expiresAt: new Date("2026-11-29T10:30:00Z") },
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

/** The pod spec inside a Deployment, for a row that edits the live template (narrowed, not cast). */
export function podSpecOf(deployment: Record<string, unknown>): Record<string, unknown> {
  const template = isRecord(deployment.spec) ? deployment.spec.template : undefined;
  const pod = isRecord(template) ? template.spec : undefined;
  if (!isRecord(pod)) throw new Error("the Deployment has no pod template spec");
  return pod;
}

/** Gateway node `n` (0-based) of a replicated gateway: ids 12, 13, …, names cluster-gw, cluster-gw-1, …. */
export function haNode(n: number, over: Partial<HsNode> & { keyId?: string | null } = {}): HsNode {
  const name = n === 0 ? "cluster-gw" : `cluster-gw-${n}`;
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

/** A healthy gateway with spec.replicas `replicas`: its reusable key, these nodes, status.nodes as they are. */
export function haHealthy(
  replicas: number,
  nodes: HsNode[],
  over: Partial<GatewayInputs> & { spec?: Record<string, unknown> } = {},
): GatewayInputs {
  const { spec, ...rest } = over;
  const parent = gateway({ replicas, ...spec });
  const r = renderInput(parent);
  const previousNodes = nodes.map((n) => ({
    id: n.id,
    name: n.givenName,
    nodeKey: n.nodeKey,
    preAuthKeyId: n.preAuthKey?.id ?? "",
  }));
  return healthy({
    ...r,
    observed: { deployment: liveDeployment(r), service: dnsServiceLive() },
    headscale: { nodes: { ok: true, value: nodes }, keys: { ok: true, value: [hsKey({ reusable: true })] } },
    ...(previousNodes.length ? { previousNode: previousNodes.at(-1), previousNodes } : { previousNode: undefined }),
    ...rest,
  });
}
