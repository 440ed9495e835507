/**
 * Children of a TailnetIngress, built with the shared agent builders (src/kinds/shared/agent-pod.ts):
 * ServiceAccount, the agent ConfigMap (config.json + tailscaled's serve.json), the Deployment
 * (`spec.replicas` pods, each its own tailnet node), the NetworkPolicy (9080 only from the operator
 * namespace and the configured scrapers), a PodDisruptionBudget (maxUnavailable 1) when replicas > 1,
 * and the pre-auth key Secret. tailscaled serves each tailnet port to the agent's listener on 127.0.0.2
 * (ipn.ServeConfig `TCPForward`; src/contract/ports.ts POD_LOCAL_HOST); the agent forwards TCP or terminates TLS and proxies HTTP/1.1.
 */

import type { OperatorConfig } from "../../../config.js";
import type { AgentBackend, AgentConfigInput } from "../../../contract/agent-config.js";
import {
  AGENT_METRICS_PORT,
  NETSTACK_FORWARD_HOST,
  POD_IP_HOST,
  POD_LOCAL_HOST,
  TAILSCALED_SOCKET,
} from "../../../contract/ports.js";
import { commonLabels } from "../../../k8s/labels.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { agentNetworkPolicy } from "../../shared/agent-network-policy.js";
import {
  agentConfigMap,
  agentName,
  agentSelector,
  agentStatefulSet,
  dnsLabel,
  TLS_MOUNT_ROOT,
} from "../../shared/agent-pod.js";
import { type ReplicaObservation, replicaChildrenOf } from "../../shared/agent-replicas.js";
import { agentPaths, type PathBackend } from "../../shared/expose-paths.js";
import { configHash } from "../../shared/pod-template.js";
import { applyProxyClass, type ProxyClassSpec } from "../../shared/proxy-class.js";
import type { ReplicaRef } from "../../shared/replica.js";
import type { ReplicaNodesPlan } from "../../shared/replica-nodes.js";
import { servedSecretOf } from "./certificate.js";
import { exposeListenPorts, type IngressSpec, KUBE_API_BACKEND, KUBE_API_DIR, KUBE_API_FILES } from "./spec.js";
import { TLS_CERT_KEY, TLS_KEY_KEY } from "./tls.js";

/**
 * tailscale's ipn.ServeConfig, the part we use: tailnet port → raw TCP forward to a local listener,
 * optionally preceded by a PROXY protocol header (`ProxyProtocol`: 1 or 2 = the header version; tailscale
 * v1.102.3 ipn/serve.go TCPPortHandler, sent by ipn/ipnlocal/serve.go forwardTCPWithProxyProtocol).
 */
export interface ServeConfig {
  TCP: Record<string, { TCPForward: string; ProxyProtocol?: 1 | 2 }>;
}

/**
 * The PROXY protocol version tailscaled sends ahead of each forwarded connection in http and kube-api mode
 * (v2: binary, fixed layout): the agent reads the header and puts its source (the client's tailnet address)
 * into X-Forwarded-For, and in kube-api mode asks WhoIs who that is. In tcp mode the agent is a byte pipe to a backend that expects none, so no
 * header is asked for (the backend sees the agent's address).
 */
export const INGRESS_PROXY_PROTOCOL = 2;

/** Where the agent finds an expose's certificate pair (the Secret is mounted at TLS_MOUNT_ROOT/<name>). */
export function tlsFiles(secretName: string): { certFile: string; keyFile: string } {
  const dir = `${TLS_MOUNT_ROOT}/${secretName}`;
  return { certFile: `${dir}/${TLS_CERT_KEY}`, keyFile: `${dir}/${TLS_KEY_KEY}` };
}

/** The cluster DNS name of a backend Service in the ingress's namespace. */
export const backendHost = (service: string, namespace: string) => `${service}.${namespace}.svc.cluster.local`;

/** A backend Service port as the agent dials it; `protocol` only when the spec sets it (configs stay as they were). */
const agentBackend = (b: PathBackend, namespace: string): AgentBackend => ({
  host: backendHost(b.service, b.namespace ?? namespace),
  port: b.port,
  ...(b.protocol ? { protocol: b.protocol } : {}),
});

/**
 * config.json of the agent: role ingress, one expose per spec expose with its listen port, mode,
 * backend, TLS files (http) and names (`names[i]`: the expose's DNS name, then its aliases).
 */
export function ingressAgentConfig(
  parent: K8sObject,
  spec: IngressSpec,
  names: readonly { dnsName: string; dnsAliases: string[] }[],
): AgentConfigInput {
  const ports = exposeListenPorts(spec);
  const namespace = parent.metadata.namespace ?? "";
  return {
    role: "ingress",
    metricsPort: AGENT_METRICS_PORT,
    // Only tailscaled's serve reaches the listeners (POD_LOCAL_HOST): its netstack forwards every other tailnet
    // connection to 127.0.0.1, where the agent resets and counts it (src/contract/ports.ts, src/agent/refuse.ts). So the
    // PROXY header at the start of a connection was written by serve, never by a peer.
    metricsHost: POD_IP_HOST,
    listenHost: POD_LOCAL_HOST,
    refuseHost: NETSTACK_FORWARD_HOST,
    tailscale: { localApiSocket: TAILSCALED_SOCKET },
    exposes: spec.exposes.map((e, i) => ({
      name: e.name,
      listenPort: ports[i],
      mode: spec.mode,
      backend: spec.mode === "kube-api" ? { ...KUBE_API_BACKEND } : agentBackend(e.backend, namespace),
      ...(spec.mode === "http" && e.paths.length > 0
        ? {
            paths: agentPaths(e.paths, namespace, backendHost),
            ...(e.unmatched ? { unmatched: e.unmatched } : {}),
          }
        : {}),
      ...(spec.mode !== "tcp" && servedSecretOf(parent, e) ? { tls: tlsFiles(servedSecretOf(parent, e) ?? "") } : {}),
      ...(spec.mode === "kube-api" ? { kubeApi: { ...KUBE_API_FILES } } : {}),
      ...(spec.mode !== "tcp" ? { proxyProtocol: true } : {}),
      names: names[i] ? [names[i].dnsName, ...names[i].dnsAliases] : [],
    })),
  };
}

/**
 * serve.json: each tailnet port to 127.0.0.2:<listen port> (POD_LOCAL_HOST; exposes sharing a port share a
 * listener); in http and kube-api mode with `ProxyProtocol` so the agent learns the client's tailnet address.
 */
export function ingressServeConfig(spec: IngressSpec): ServeConfig {
  const ports = exposeListenPorts(spec);
  const tcp: ServeConfig["TCP"] = {};
  for (const [i, e] of spec.exposes.entries()) {
    tcp[String(e.port)] ??= {
      TCPForward: `${POD_LOCAL_HOST}:${ports[i]}`,
      ...(spec.mode !== "tcp" ? { ProxyProtocol: INGRESS_PROXY_PROTOCOL } : {}),
    };
  }
  return { TCP: tcp };
}

/** The TLS Secrets the agent mounts (the exposes' own, or their Certificates'): http and kube-api mode, each once, sorted. */
export function ingressTlsSecrets(parent: K8sObject, spec: IngressSpec): string[] {
  if (spec.mode === "tcp") return [];
  return [...new Set(spec.exposes.flatMap((e) => servedSecretOf(parent, e) ?? []))].sort();
}

export interface IngressChildInputs {
  tag: string;
  /** The Tailnet's Headscale URL (tailscale --login-server). */
  loginServer: string;
  /** Per expose, in spec order: DNS name and aliases (see ingressNames). */
  names: readonly { dnsName: string; dnsAliases: string[] }[];
  /** The pre-auth key Secret child; undefined while no key exists (no Deployment is run without it). */
  authKeySecret?: K8sObject;
  /** The Headscale CA (the Tailnet's caSecretRef, republished in its credentials Secret). */
  ca?: string;
  /** What the sync observed of its replicas (StatefulSets kept as they are while no key exists). */
  replicas: ReplicaObservation;
  replicaPlan?: ReplicaNodesPlan;
  /** Removed replicas whose nodes act deleted: their children go now. */
  released: ReadonlySet<number>;
  /** Every replica is bound: the legacy Deployment and key Secrets go. */
  migrated: boolean;
  /** The named TailnetProxyClass's settings, folded into the pod template. */
  proxyClass?: ProxyClassSpec;
  /** The agent node's host name when not spec.hostname (agentHostname in shared/dns-tenancy.ts). */
  nodeHostname?: string;
  /** cert-manager Certificates, one per expose with a usable issuer (certificate.ts certificateChildren). */
  certificates?: K8sObject[];
}

/** mode kube-api: the agent's ServiceAccount token (an hour, rotated by the kubelet) and the cluster CA. */
const KUBE_API_VOLUME = {
  name: "kube-api",
  projected: {
    sources: [
      { serviceAccountToken: { path: "token", expirationSeconds: 3600 } },
      { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
    ],
  },
};

/** The agent's readiness path: serving (tailscaled Running, every backend reachable), see src/agent/server.ts. */
export const INGRESS_READINESS_PATH = "/readyz";

/**
 * The agent's hostname (replica 0's; replica i ≥ 1 is `<host>-r<i>`, replica.ts wantedLabel): the node name
 * the Tailnet's records and status name.
 */
export const ingressHostname = (spec: IngressSpec, nodeHostname?: string) => dnsLabel(nodeHostname ?? spec.hostname);

/**
 * Replica i's StatefulSet from the shared builder, with two differences: TLS Secret volumes are `optional`, so a missing
 * Secret does not keep the pod (and so the node's registration) from starting — TLSReady reports
 * TLSSecretMissing instead, and the agent picks the files up when the Secret appears; and the agent's
 * readiness probe asks /readyz, so a replica whose backend or tailnet is down is not Ready (a rollout
 * waits for the new pod to serve; the PodDisruptionBudget counts it unavailable). Liveness stays /healthz:
 * a backend outage restarts nothing.
 */
function ingressStatefulSet(
  parent: K8sObject,
  config: OperatorConfig,
  spec: IngressSpec,
  inputs: IngressChildInputs,
  hash: string,
  replica: ReplicaRef,
): K8sObject {
  const tlsSecrets = ingressTlsSecrets(parent, spec);
  const deployment = agentStatefulSet(
    parent,
    {
      tag: inputs.tag,
      loginServer: inputs.loginServer,
      authKeySecret: inputs.authKeySecret?.metadata.name,
      hostname: ingressHostname(spec, inputs.nodeHostname),
      images: config.images,
      listenPorts: [],
      configHash: hash,
      serveConfig: true,
      tlsSecrets,
      ca: !!inputs.ca,
      noLogsNoSupport: config.tailscale.noLogsNoSupport,
    },
    replica,
  );
  type Volume = { name?: string; secret?: { secretName: string; optional?: boolean } };
  type Container = {
    name: string;
    readinessProbe?: { httpGet?: { path: string } };
    volumeMounts?: Record<string, unknown>[];
  };
  const podSpec = (deployment.spec as { template: { spec: { volumes?: Volume[]; containers: Container[] } } }).template
    .spec;
  if (spec.mode === "kube-api") {
    // The API credential goes to the agent container alone (automountServiceAccountToken stays false, so
    // tailscaled holds none); projected, so the kubelet rotates it before its hour is up.
    podSpec.volumes = [...(podSpec.volumes ?? []), KUBE_API_VOLUME];
    for (const c of podSpec.containers) {
      if (c.name === "agent")
        c.volumeMounts = [...(c.volumeMounts ?? []), { name: "kube-api", mountPath: KUBE_API_DIR, readOnly: true }];
    }
  }
  for (const v of podSpec.volumes ?? []) {
    if (v.secret && tlsSecrets.includes(v.secret.secretName)) v.secret = { ...v.secret, optional: true };
  }
  for (const c of podSpec.containers) {
    if (c.name === "agent" && c.readinessProbe?.httpGet) {
      c.readinessProbe = {
        ...c.readinessProbe,
        httpGet: { ...c.readinessProbe.httpGet, path: INGRESS_READINESS_PATH },
      };
    }
  }
  return inputs.proxyClass ? applyProxyClass(deployment, inputs.proxyClass) : deployment;
}

/**
 * With several replicas, voluntary disruptions (a node drain, a cluster upgrade) take at most one agent pod
 * at a time, so the other nodes keep answering. Not with one replica: a budget of 0 unavailable would block
 * every drain, and 1 unavailable allows everything anyway.
 */
export function ingressDisruptionBudget(parent: K8sObject): K8sObject {
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, "ingress"),
    },
    spec: { maxUnavailable: 1, selector: { matchLabels: agentSelector(parent) } },
  };
}

/**
 * Every child, in a fixed order: ConfigMap, per replica ServiceAccount, Role, RoleBinding, state Secret and
 * StatefulSet (once a key exists and those are observed, agent-replicas.ts), NetworkPolicy,
 * PodDisruptionBudget (replicas > 1, across the replicas' StatefulSets), key Secret, cert-manager Certificates.
 */
export function ingressChildren(
  parent: K8sObject,
  config: OperatorConfig,
  spec: IngressSpec,
  inputs: IngressChildInputs,
): K8sObject[] {
  const agentConfig = ingressAgentConfig(parent, spec, inputs.names);
  const serve = ingressServeConfig(spec);
  const configMap = agentConfigMap(parent, agentConfig, serve, inputs.ca);
  const hash = inputs.ca ? configHash(agentConfig, serve, inputs.ca) : configHash(agentConfig, serve);
  const replicaChildren = replicaChildrenOf(parent, spec.replicas, inputs, (replica) =>
    ingressStatefulSet(parent, config, spec, inputs, hash, replica),
  );
  return [
    configMap,
    ...replicaChildren,
    agentNetworkPolicy(parent, config, undefined),
    ...(spec.replicas > 1 ? [ingressDisruptionBudget(parent)] : []),
    ...(inputs.authKeySecret ? [inputs.authKeySecret] : []),
    ...(inputs.certificates ?? []),
  ];
}
