/**
 * Child builders of TailnetGateway, one per object (Tailscale's tsr*Specs style): each takes
 * (parent, inputs) and returns a plain object. The bootstrap-key Secret comes from
 * src/kinds/shared/authkey.ts (authKeySecret, the stable gatewayKeySecretName) with gatewayLabels().
 * Each replica is its own StatefulSet of one pod with its own ServiceAccount, Role, RoleBinding and state
 * Secret (src/kinds/shared/replica.ts): one tailnet node for life (issue 32).
 *
 * The pod runs two containers:
 * - `tailscale` (official image, containerboot) in userspace mode with its state in the replica's state
 *   Secret (kube store: a restart, a reschedule or a rollout comes back as the same node; the bootstrap key
 *   is for the first login only), advertising spec.routes (TS_ROUTES); the bootstrap key's aclTags tag the
 *   node; metrics and /healthz on <pod IP>:8080 (ts-metrics).
 *   Userspace netstack forwards TCP/UDP to every route the pod can reach, which covers all the
 *   cluster networks a gateway advertises, so no route needs kernel mode (docs/gateway.md).
 * - `coredns` on the unprivileged port 1053 (the DNS Service maps 53 → 1053, so no capability is
 *   needed): the derived zone for cluster workloads and the split-DNS domains for tailnet clients,
 *   who reach the Service IP through the gateway's routes.
 * Nothing listens on 0.0.0.0 or 127.0.0.1: in userspace mode tailscaled's netstack hands every tailnet
 * connection to the node's own address that serve does not handle to 127.0.0.1:<port> (tailscale.com
 * wgengine/netstack/netstack.go acceptTCP, acceptUDP), which would make tailscale's metrics, CoreDNS and its
 * metrics tailnet services on the node's address. Every listener binds the pod IP (downward API), where
 * probes, the DNS Service and scrapers arrive and the netstack forward never does.
 */
import type { NetworkPolicyPeer, OperatorConfig } from "../../../config.js";
import { commonLabels, OWNER_UID_LABEL } from "../../../k8s/labels.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { AUTHKEY_DATA_KEY, stableAuthKeySecretName } from "../../shared/authkey.js";
import { CONFIG_HASH_ANNOTATION, POD_SECURITY_CONTEXT } from "../../shared/pod-template.js";
import {
  REPLICA_LABEL,
  type ReplicaRef,
  replicaName,
  replicaStatefulSet,
  stateSecretName,
  wantedLabel,
} from "../../shared/replica.js";
import {
  CA_KEY,
  TAILSCALE_RUNTIME_MOUNTS,
  tailscaleRuntimeEnv,
  tailscaleRuntimeVolumes,
} from "../../shared/tailscale-runtime.js";
import { stampTemplate } from "../../shared/template-hash.js";
import { COREDNS_PORTS, COREFILE_DIR, COREFILE_KEY, ZONE_DIR } from "./corefile.js";
import type { GatewayNames } from "./spec.js";
import { ZONE_FILE_KEY } from "./zone.js";

export const GATEWAY_APP = "tailnet-gateway";
export const TS_METRICS_PORT = 8080;
const TS_SOCKET = "/tmp/tailscaled.sock";

export function gatewayLabels(parent: K8sObject): Record<string, string> {
  return commonLabels(parent, "gateway", GATEWAY_APP);
}

/** The labels that select the gateway pods (owner uid: names may be reused, uids not). */
export function gatewaySelector(parent: K8sObject): Record<string, string> {
  return { "app.kubernetes.io/name": GATEWAY_APP, [OWNER_UID_LABEL]: parent.metadata.uid ?? "" };
}

/**
 * The stable bootstrap-key Secret, `<parent>-gateway-authkey`, rotated in place. Not `<parent>-authkey`: a
 * TailnetEgress of the same name in the namespace has that one.
 */
export function gatewayKeySecretName(parent: K8sObject): string {
  return stableAuthKeySecretName(`${parent.metadata.name.slice(0, 253 - "-gateway-authkey".length)}-gateway`);
}

/** Replica i of a gateway: `<name>-gateway-<i>` (hashed when long, replica.ts replicaName). */
export function gatewayReplica(parent: K8sObject, index: number): ReplicaRef {
  return { parent, index, name: replicaName(parent.metadata.name, "gateway", index), labels: gatewayLabels(parent) };
}

/** The MagicDNS label of replica i: the host name for replica 0, `<host>-r<i>` for the others. */
export const replicaHostname = (hostname: string, index: number) =>
  index === 0 ? hostname : wantedLabel(hostname, index);

export interface GatewayDeploymentInputs {
  names: GatewayNames;
  /** 1, or 0 while suspended (the state and the node stay). */
  replicas: number;
  tag: string;
  /** spec.hostname; each replica's TS_HOSTNAME is replicaHostname(hostname, i). */
  hostname: string;
  /** The replica's state Secret (tailscaled's kube store). */
  stateSecret: string;
  routes: readonly string[];
  loginServer: string;
  /** Name of the bootstrap-key Secret child; undefined while none exists (the pod waits for it). */
  authKeySecret: string | undefined;
  images: OperatorConfig["images"];
  /** Hash of the Corefile and CA, so a change rolls the pods (zone changes do not: CoreDNS reloads them). */
  configHash: string;
  /** The CA ConfigMap (names.ca) exists: tailscaled trusts it (SSL_CERT_FILE). */
  ca?: boolean;
  noLogsNoSupport: boolean;
}

/** Where the gateway's tailscale container mounts the CA ConfigMap. */
const CA_DIR = "/etc/tailnet-ca";

/** The pod's addresses (downward API): every listener of the pod binds them (see the file comment). */
const POD_IP_ENV: readonly Record<string, unknown>[] = [
  { name: "POD_IP", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } },
  { name: "POD_IPS", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIPs" } } },
];

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

function tailscaleContainer(inputs: GatewayDeploymentInputs): Record<string, unknown> {
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: TS_SOCKET },
    { name: "TS_HOSTNAME", value: inputs.hostname },
    { name: "TS_ROUTES", value: inputs.routes.join(",") },
    // no --advertise-tags: Headscale >= 0.28 refuses requested tags with a pre-auth key (state.go)
    { name: "TS_EXTRA_ARGS", value: `--login-server=${inputs.loginServer}` },
    ...tailscaleRuntimeEnv({
      noLogsNoSupport: inputs.noLogsNoSupport,
      caFile: inputs.ca ? `${CA_DIR}/${CA_KEY}` : undefined,
      stateSecret: inputs.stateSecret,
    }),
    { name: "TS_ENABLE_METRICS", value: "true" },
    { name: "TS_ENABLE_HEALTH_CHECK", value: "true" },
    ...POD_IP_ENV,
    // the pod IP, not 0.0.0.0 (see the file comment); containerboot brackets an IPv6 POD_IP itself when
    // POD_IPS lists it (cmd/containerboot/settings.go, the "$(POD_IP):PORT" case)
    { name: "TS_LOCAL_ADDR_PORT", value: `$(POD_IP):${TS_METRICS_PORT}` },
  ];
  if (inputs.authKeySecret) {
    env.push({
      name: "TS_AUTHKEY",
      valueFrom: { secretKeyRef: { name: inputs.authKeySecret, key: AUTHKEY_DATA_KEY } },
    });
  }
  return {
    name: "tailscale",
    image: inputs.images.tailscale,
    imagePullPolicy: "IfNotPresent",
    env,
    ports: [{ name: "ts-metrics", containerPort: TS_METRICS_PORT, protocol: "TCP" }],
    // /healthz answers 200 once the node has a tailnet address: the pod is ready only when logged in.
    readinessProbe: { httpGet: { path: "/healthz", port: "ts-metrics" }, periodSeconds: 5 },
    securityContext: restricted,
    resources: { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "256Mi" } },
    volumeMounts: [
      { name: "tmp", mountPath: "/tmp" },
      ...TAILSCALE_RUNTIME_MOUNTS,
      ...(inputs.ca ? [{ name: "ca", mountPath: CA_DIR, readOnly: true }] : []),
    ],
  };
}

function corednsContainer(inputs: GatewayDeploymentInputs): Record<string, unknown> {
  const p = COREDNS_PORTS;
  return {
    name: "coredns",
    image: inputs.images.coredns,
    imagePullPolicy: "IfNotPresent",
    args: ["-conf", `${COREFILE_DIR}/${COREFILE_KEY}`],
    // the Corefile binds {$POD_IP} (corefile.ts)
    env: [POD_IP_ENV[0]],
    ports: [
      // one entry per containerPort: Metacontroller's apply keys container ports by number, so a
      // second 1053 (TCP) would collapse with the first on every update (the Service targets 1053)
      { name: "dns", containerPort: p.dns, protocol: "UDP" },
      { name: "dns-metrics", containerPort: p.metrics, protocol: "TCP" },
    ],
    readinessProbe: { httpGet: { path: "/ready", port: p.ready }, periodSeconds: 5 },
    livenessProbe: { httpGet: { path: "/health", port: p.health }, periodSeconds: 10, failureThreshold: 5 },
    securityContext: restricted,
    resources: { requests: { cpu: "20m", memory: "32Mi" }, limits: { memory: "128Mi" } },
    volumeMounts: [
      { name: "corefile", mountPath: COREFILE_DIR, readOnly: true },
      { name: "zone", mountPath: ZONE_DIR, readOnly: true },
    ],
  };
}

/** The pod template of one replica (stamped: the fresh writer's third check hashes it, template.ts). */
export function gatewayPodTemplate(parent: K8sObject, r: ReplicaRef, inputs: GatewayDeploymentInputs) {
  // the replica label before the stamp: replicaStatefulSet sets it again, and the hash must cover it
  const labels = { ...gatewayLabels(parent), ...gatewaySelector(parent), [REPLICA_LABEL]: String(r.index) };
  return stampTemplate({
    metadata: { labels, annotations: { [CONFIG_HASH_ANNOTATION]: inputs.configHash } },
    spec: {
      // the projected token (tailscale container only) is this ServiceAccount's: it reads its own state Secret
      serviceAccountName: r.name,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: POD_SECURITY_CONTEXT,
      containers: [tailscaleContainer(inputs), corednsContainer(inputs)],
      volumes: [
        { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
        ...tailscaleRuntimeVolumes({ token: true }),
        ...(inputs.ca ? [{ name: "ca", configMap: { name: inputs.names.ca } }] : []),
        { name: "corefile", configMap: { name: inputs.names.corefile } },
        // optional: while the fresh writer is blocked before its first write there is no zone yet
        { name: "zone", configMap: { name: inputs.names.zone, optional: true } },
      ],
    },
  });
}

/**
 * Replica i's StatefulSet of one pod: never two pods of one identity at once (replica.ts). Its replica label
 * is added to the pod labels; the Service, NetworkPolicy and PDB keep selecting every replica.
 */
export function gatewayStatefulSet(
  parent: K8sObject,
  index: number,
  inputs: Omit<GatewayDeploymentInputs, "stateSecret">,
): K8sObject {
  const r = gatewayReplica(parent, index);
  const own = { hostname: replicaHostname(inputs.hostname, index), stateSecret: stateSecretName(r.name) };
  const selector = gatewaySelector(parent);
  return replicaStatefulSet(r, {
    labels: { ...gatewayLabels(parent), ...selector },
    selector,
    replicas: inputs.replicas,
    template: gatewayPodTemplate(parent, r, { ...inputs, ...own }),
  });
}

/**
 * replicas > 1: voluntary disruptions (a drain, a cluster upgrade) take at most one gateway pod at a time, so
 * the other nodes keep the routes (Headscale fails over to one of them) and CoreDNS answering. Not with one
 * replica: 0 unavailable would block every drain and 1 allows everything anyway. It selects the pods of every
 * replica's StatefulSet (the disruption controller sums their scales).
 */
export function gatewayDisruptionBudget(parent: K8sObject, names: GatewayNames): K8sObject {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: names.deployment, namespace: parent.metadata.namespace, labels: gatewayLabels(parent) },
    spec: { maxUnavailable: 1, selector: { matchLabels: gatewaySelector(parent) } },
  };
}

export function dnsService(parent: K8sObject, names: GatewayNames, type: "ClusterIP" | "LoadBalancer"): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: names.service, namespace: parent.metadata.namespace, labels: gatewayLabels(parent) },
    spec: {
      type,
      selector: gatewaySelector(parent),
      ports: [
        { name: "dns", port: 53, targetPort: COREDNS_PORTS.dns, protocol: "UDP" },
        { name: "dns-tcp", port: 53, targetPort: COREDNS_PORTS.dns, protocol: "TCP" },
      ],
    },
  };
}

/** Everything in the cluster: pods of every namespace (the Service's port 53 lands on 1053). */
const CLUSTER_PEERS: NetworkPolicyPeer[] = [{ namespaceSelector: {} }];

/** DNS from the cluster; tailscale (8080) and CoreDNS (9153) metrics only from the metrics peers. */
export function gatewayNetworkPolicy(
  parent: K8sObject,
  names: GatewayNames,
  metricsPeers: readonly NetworkPolicyPeer[],
): K8sObject {
  const p = COREDNS_PORTS;
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: names.networkPolicy, namespace: parent.metadata.namespace, labels: gatewayLabels(parent) },
    spec: {
      podSelector: { matchLabels: gatewaySelector(parent) },
      policyTypes: ["Ingress"],
      // DNS as two rules of one port each: in one list, Metacontroller's apply would key both by
      // port 1053 and merge them into the TCP one twice, silently dropping UDP on an update
      ingress: [
        { from: CLUSTER_PEERS, ports: [{ protocol: "UDP", port: p.dns }] },
        { from: CLUSTER_PEERS, ports: [{ protocol: "TCP", port: p.dns }] },
        {
          from: [...metricsPeers],
          ports: [
            { protocol: "TCP", port: TS_METRICS_PORT },
            { protocol: "TCP", port: p.metrics },
          ],
        },
      ],
    },
  };
}

export function corefileConfigMap(parent: K8sObject, names: GatewayNames, corefile: string): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: names.corefile, namespace: parent.metadata.namespace, labels: gatewayLabels(parent) },
    data: { [COREFILE_KEY]: corefile },
  };
}

export function zoneConfigMap(parent: K8sObject, names: GatewayNames, zoneFile: string): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: names.zone, namespace: parent.metadata.namespace, labels: gatewayLabels(parent) },
    data: { [ZONE_FILE_KEY]: zoneFile },
  };
}

/** The Headscale CA (Tailnet caSecretRef) for the gateway's tailscaled: a CA is public, so a ConfigMap. */
export function caConfigMap(parent: K8sObject, names: GatewayNames, ca: string): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: names.ca, namespace: parent.metadata.namespace, labels: gatewayLabels(parent) },
    data: { [CA_KEY]: ca.endsWith("\n") ? ca : `${ca}\n` },
  };
}
