/**
 * Child builders shared by TailnetEgress and TailnetIngress: one agent, one set of builders.
 * Each takes (parent, inputs) and returns a plain object (Tailscale's tsrStatefulSet style).
 * The pod runs two containers: the official tailscale image in userspace mode with state in
 * memory (so no Secret is written back and no RBAC is needed), and our agent, which listens,
 * probes and reports /status on 9080.
 */
import { createHash } from "node:crypto";
import type { AgentConfigInput } from "../../agent/config.js";
import { AGENT_CONFIG_PATH, AGENT_METRICS_PORT, TAILSCALE_SOCKS_ADDR, TAILSCALED_SOCKET } from "../../agent/ports.js";
import type { NetworkPolicyPeer, OperatorConfig } from "../../config.js";
import { commonLabels, OWNER_UID_LABEL } from "../../k8s/labels.js";
import type { K8sObject } from "../../k8s/objects.js";
import { AUTHKEY_DATA_KEY } from "./authkey.js";

export const CONFIG_HASH_ANNOTATION = "tailnet.internal/config-hash";
const CONFIG_DIR = AGENT_CONFIG_PATH.slice(0, AGENT_CONFIG_PATH.lastIndexOf("/"));
const SOCKET_DIR = TAILSCALED_SOCKET.slice(0, TAILSCALED_SOCKET.lastIndexOf("/"));
export const SERVE_CONFIG_KEY = "serve.json";
export const TLS_MOUNT_ROOT = "/etc/tailnet-agent/tls";

export const agentName = (parent: K8sObject) => `${parent.metadata.name.slice(0, 57)}-agent`;

/** The labels that select an object's agent pods (owner uid: names may be reused, uids not). */
export function agentSelector(parent: K8sObject): Record<string, string> {
  return { "app.kubernetes.io/name": "tailnet-agent", [OWNER_UID_LABEL]: parent.metadata.uid ?? "" };
}

const component = (parent: K8sObject) => (parent.kind === "TailnetIngress" ? "ingress" : "egress");

export function agentServiceAccount(parent: K8sObject): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, component(parent)),
    },
    automountServiceAccountToken: false,
  };
}

/** The agent config (and, for ingress, tailscaled's serve config) as a ConfigMap mounted read-only. */
export function agentConfigMap(parent: K8sObject, config: AgentConfigInput, serveConfig?: object): K8sObject {
  const data: Record<string, string> = { "config.json": `${JSON.stringify(config, null, 2)}\n` };
  if (serveConfig) data[SERVE_CONFIG_KEY] = `${JSON.stringify(serveConfig, null, 2)}\n`;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, component(parent)),
    },
    data,
  };
}

export function configHash(...parts: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

export interface AgentDeploymentInputs {
  replicas: number;
  tag: string;
  loginServer: string;
  /** Name of the pre-auth key Secret child; undefined while no key exists yet (pods wait for it). */
  authKeySecret: string | undefined;
  hostname: string;
  images: OperatorConfig["images"];
  /** Data-plane container ports of the agent (egress listeners); ingress listens on loopback only. */
  listenPorts: number[];
  /** Hash of everything the pods read at start, so a change rolls them. */
  configHash: string;
  serveConfig: boolean;
  tlsSecrets: string[];
}

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

export function agentDeployment(parent: K8sObject, inputs: AgentDeploymentInputs): K8sObject {
  const selector = agentSelector(parent);
  const labels = { ...commonLabels(parent, component(parent)), ...selector };
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: TAILSCALED_SOCKET },
    { name: "TS_SOCKS5_SERVER", value: TAILSCALE_SOCKS_ADDR },
    { name: "TS_HOSTNAME", value: inputs.hostname },
    { name: "TS_EXTRA_ARGS", value: `--login-server=${inputs.loginServer} --advertise-tags=${inputs.tag}` },
    { name: "TS_AUTH_ONCE", value: "true" },
    // state in memory: nothing is written back to a Secret, so the pod needs no API access
    { name: "TS_KUBE_SECRET", value: "" },
    { name: "TS_ENABLE_METRICS", value: "true" },
    { name: "TS_LOCAL_ADDR_PORT", value: "127.0.0.1:9002" },
  ];
  if (inputs.authKeySecret) {
    env.push({
      name: "TS_AUTHKEY",
      valueFrom: { secretKeyRef: { name: inputs.authKeySecret, key: AUTHKEY_DATA_KEY } },
    });
  }
  if (inputs.serveConfig) env.push({ name: "TS_SERVE_CONFIG", value: `${CONFIG_DIR}/${SERVE_CONFIG_KEY}` });
  const shared = [
    { name: "tailscale-run", mountPath: SOCKET_DIR },
    { name: "config", mountPath: CONFIG_DIR, readOnly: true },
  ];
  const tlsMounts = inputs.tlsSecrets.map((s) => ({
    name: `tls-${s}`.slice(0, 63),
    mountPath: `${TLS_MOUNT_ROOT}/${s}`,
    readOnly: true,
  }));
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: agentName(parent), namespace: parent.metadata.namespace, labels },
    spec: {
      replicas: inputs.replicas,
      selector: { matchLabels: selector },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels, annotations: { [CONFIG_HASH_ANNOTATION]: inputs.configHash } },
        spec: {
          serviceAccountName: agentName(parent),
          automountServiceAccountToken: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            runAsGroup: 65532,
            fsGroup: 65532,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "tailscale",
              image: inputs.images.tailscale,
              env,
              securityContext: restricted,
              resources: { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "256Mi" } },
              volumeMounts: [{ name: "tmp", mountPath: "/tmp" }, ...shared],
            },
            {
              name: "agent",
              image: inputs.images.agent,
              args: ["agent", "--config", AGENT_CONFIG_PATH],
              ports: [
                { name: "metrics", containerPort: AGENT_METRICS_PORT, protocol: "TCP" },
                ...inputs.listenPorts.map((p) => ({ name: `l${p}`, containerPort: p, protocol: "TCP" })),
              ],
              readinessProbe: { httpGet: { path: "/healthz", port: "metrics" }, periodSeconds: 5 },
              livenessProbe: { httpGet: { path: "/healthz", port: "metrics" }, periodSeconds: 10, failureThreshold: 3 },
              securityContext: restricted,
              resources: { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "256Mi" } },
              volumeMounts: [...shared, ...tlsMounts],
            },
          ],
          volumes: [
            { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
            { name: "tailscale-run", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
            { name: "config", configMap: { name: agentName(parent) } },
            ...inputs.tlsSecrets.map((s) => ({ name: `tls-${s}`.slice(0, 63), secret: { secretName: s } })),
          ],
        },
      },
    },
  };
}

/** TCP 9080 only from the operator namespace plus the configured scrapers (monitoring.podMonitor.scrapeFrom). */
export function metricsPeers(config: OperatorConfig): NetworkPolicyPeer[] {
  return [
    { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": config.operatorNamespace } } },
    ...config.monitoring.podMonitor.scrapeFrom,
  ];
}

export function agentNetworkPolicy(
  parent: K8sObject,
  config: OperatorConfig,
  dataPlane: { ports: number[]; from: NetworkPolicyPeer[] } | undefined,
): K8sObject {
  const ingress: Record<string, unknown>[] = [];
  if (dataPlane && dataPlane.ports.length) {
    ingress.push({ from: dataPlane.from, ports: dataPlane.ports.map((port) => ({ protocol: "TCP", port })) });
  }
  ingress.push({ from: metricsPeers(config), ports: [{ protocol: "TCP", port: AGENT_METRICS_PORT }] });
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, component(parent)),
    },
    spec: { podSelector: { matchLabels: agentSelector(parent) }, policyTypes: ["Ingress"], ingress },
  };
}
