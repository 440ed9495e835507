/**
 * Child builders shared by TailnetEgress and TailnetIngress: one agent, one set of builders.
 * Each takes (parent, inputs) and returns a plain object (Tailscale's tsrStatefulSet style).
 * Each replica is one StatefulSet of one pod (replica.ts, issue 32) running two containers: the official
 * tailscale image in userspace mode with its state in the replica's own state Secret (kube store; a
 * projected token in that container only, whose Role allows get/update/patch on that one Secret), so the
 * replica is one tailnet node for life; and our agent, which listens, probes and reports /status on
 * 9080 and holds no credential. The tailscale container pieces every pod shares (agents and gateways) are
 * in tailscale-runtime.ts; its NetworkPolicy is agent-network-policy.ts.
 */

import type { OperatorConfig } from "../../config.js";
import type { AgentConfigInput } from "../../contract/agent-config.js";
import {
  AGENT_CONFIG_PATH,
  AGENT_METRICS_PORT,
  POD_IP_ENV,
  TAILSCALE_LOCAL_ADDR_PORT,
  TAILSCALE_SOCKS_ADDR,
  TAILSCALED_SOCKET,
} from "../../contract/ports.js";
import { commonLabels, OWNER_UID_LABEL } from "../../k8s/labels.js";
import type { K8sObject } from "../../k8s/objects.js";
import { AUTHKEY_DATA_KEY } from "./authkey.js";
import { CONFIG_HASH_ANNOTATION, POD_SECURITY_CONTEXT } from "./pod-template.js";
import { type ReplicaRef, replicaStatefulSet, stateSecretName, wantedLabel } from "./replica.js";
import { CA_KEY, TAILSCALE_RUNTIME_MOUNTS, tailscaleRuntimeEnv, tailscaleRuntimeVolumes } from "./tailscale-runtime.js";

/** ConfigMap key of the agent config (mounted at AGENT_CONFIG_PATH). */
export const AGENT_CONFIG_KEY = AGENT_CONFIG_PATH.slice(AGENT_CONFIG_PATH.lastIndexOf("/") + 1);
const CONFIG_DIR = AGENT_CONFIG_PATH.slice(0, AGENT_CONFIG_PATH.lastIndexOf("/"));
const SOCKET_DIR = TAILSCALED_SOCKET.slice(0, TAILSCALED_SOCKET.lastIndexOf("/"));
export const SERVE_CONFIG_KEY = "serve.json";
/** TLS Secrets mount at `<root>/<secret name>`; outside the ConfigMap mount (nested mounts in a ConfigMap volume are fragile). */
export const TLS_MOUNT_ROOT = "/etc/tailnet-tls";

export const agentName = (parent: K8sObject) => `${parent.metadata.name.slice(0, 57)}-agent`;

/** The labels that select an object's agent pods (owner uid: names may be reused, uids not). */
export function agentSelector(parent: K8sObject): Record<string, string> {
  return { "app.kubernetes.io/name": "tailnet-agent", [OWNER_UID_LABEL]: parent.metadata.uid ?? "" };
}

/** The app.kubernetes.io/component of an agent's children. */
export const agentComponent = (parent: K8sObject) => (parent.kind === "TailnetIngress" ? "ingress" : "egress");

/** Lower-case DNS label (a tailnet host name): [a-z0-9-], at most 63, no dash at either end. */
export function dnsLabel(value: string): string {
  const label = value
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return label || "agent";
}

export function agentServiceAccount(parent: K8sObject): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, agentComponent(parent)),
    },
    automountServiceAccountToken: false,
  };
}

/**
 * The agent config (and, for ingress, tailscaled's serve config; with a private Headscale CA, the
 * CA as CA_KEY) as a ConfigMap mounted read-only.
 */
export function agentConfigMap(
  parent: K8sObject,
  config: AgentConfigInput,
  serveConfig?: object,
  ca?: string,
): K8sObject {
  const data: Record<string, string> = { [AGENT_CONFIG_KEY]: `${JSON.stringify(config, null, 2)}\n` };
  if (serveConfig) data[SERVE_CONFIG_KEY] = `${JSON.stringify(serveConfig, null, 2)}\n`;
  if (ca) data[CA_KEY] = ca.endsWith("\n") ? ca : `${ca}\n`;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, agentComponent(parent)),
    },
    data,
  };
}

export interface AgentDeploymentInputs {
  tag: string;
  /** The Tailnet's Headscale URL (tailscale --login-server). */
  loginServer: string;
  /** Name of the pre-auth key Secret child; undefined while no key exists yet (pods wait for it). */
  authKeySecret: string | undefined;
  /** Tailnet host name of the object (a DNS label, see dnsLabel); replica i ≥ 1 gets wantedLabel's `-r<i>`. */
  hostname: string;
  images: OperatorConfig["images"];
  /** Data-plane container ports of the agent (egress listeners, on the pod IP); ingress listens on 127.0.0.2 only. */
  listenPorts: number[];
  /** Hash of everything the pods read at start, so a change rolls them (see configHash). */
  configHash: string;
  /** Ingress: tailscaled reads the ConfigMap's serve config (TS_SERVE_CONFIG). */
  serveConfig?: boolean;
  /** Ingress: kubernetes.io/tls Secrets mounted read-only into the agent at TLS_MOUNT_ROOT/<name>. */
  tlsSecrets?: string[];
  /** The ConfigMap carries the Headscale CA (CA_KEY): tailscaled trusts it (SSL_CERT_FILE). */
  ca?: boolean;
  noLogsNoSupport: boolean;
  /**
   * Egress: `--accept-routes`. tailscaled on Linux drops the peers' subnet routes without it
   * (ipn/prefs.go RouteAll, default false on Linux), and a SOCKS5 dial to an address behind one
   * then leaves through the pod network.
   */
  acceptRoutes?: boolean;
  /**
   * Egress: tailscaled runs its SOCKS5 proxy (TAILSCALE_SOCKS_ADDR, on the pod-local loopback address) for the
   * agent's dials. Ingress agents dial nothing on the tailnet, so their tailscaled runs none.
   */
  socks?: boolean;
}

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

/** By position: Secret names may hold dots and run to 253 characters, volume names may not. */
const tlsVolumeName = (index: number) => `tls-${index}`;

/** Replica i of an agent: one StatefulSet of one pod, its state in `<replica>-state` (replica.ts). */
export function agentStatefulSet(parent: K8sObject, inputs: AgentDeploymentInputs, replica: ReplicaRef): K8sObject {
  const selector = agentSelector(parent);
  const labels = { ...commonLabels(parent, agentComponent(parent)), ...selector };
  return replicaStatefulSet(replica, {
    labels,
    selector,
    // one pod per StatefulSet; a scale-down leaves the StatefulSet out instead
    replicas: 1,
    template: agentPodTemplate(parent, inputs, replica),
  });
}

function agentPodTemplate(parent: K8sObject, inputs: AgentDeploymentInputs, replica: ReplicaRef) {
  const selector = agentSelector(parent);
  const labels = { ...commonLabels(parent, agentComponent(parent)), ...selector };
  const tlsSecrets = inputs.tlsSecrets ?? [];
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: TAILSCALED_SOCKET },
    ...(inputs.socks ? [{ name: "TS_SOCKS5_SERVER", value: TAILSCALE_SOCKS_ADDR }] : []),
    { name: "TS_HOSTNAME", value: wantedLabel(inputs.hostname, replica.index) },
    // containerboot passes TS_EXTRA_ARGS to `tailscale up`: the only way to name a login server.
    // No --advertise-tags: Headscale >= 0.28 refuses any client-requested tag on a pre-auth-key
    // registration (hscontrol/state/state.go); the key's aclTags tag the node.
    {
      name: "TS_EXTRA_ARGS",
      value: `--login-server=${inputs.loginServer}${inputs.acceptRoutes ? " --accept-routes" : ""}`,
    },
    ...tailscaleRuntimeEnv({
      noLogsNoSupport: inputs.noLogsNoSupport,
      caFile: inputs.ca ? `${CONFIG_DIR}/${CA_KEY}` : undefined,
      stateSecret: stateSecretName(replica.name),
    }),
    { name: "TS_ENABLE_METRICS", value: "true" },
    // off 127.0.0.1, where tailscaled's netstack forwards tailnet connections (src/contract/ports.ts POD_LOCAL_HOST)
    { name: "TS_LOCAL_ADDR_PORT", value: TAILSCALE_LOCAL_ADDR_PORT },
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
  const tlsMounts = tlsSecrets.map((s, i) => ({
    name: tlsVolumeName(i),
    mountPath: `${TLS_MOUNT_ROOT}/${s}`,
    readOnly: true,
  }));
  const resources = { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "256Mi" } };
  return {
    metadata: { labels, annotations: { [CONFIG_HASH_ANNOTATION]: inputs.configHash } },
    spec: {
      serviceAccountName: replica.name,
      automountServiceAccountToken: false,
      securityContext: POD_SECURITY_CONTEXT,
      containers: [
        {
          name: "tailscale",
          image: inputs.images.tailscale,
          env,
          securityContext: restricted,
          resources,
          volumeMounts: [{ name: "tmp", mountPath: "/tmp" }, ...TAILSCALE_RUNTIME_MOUNTS, ...shared],
        },
        {
          name: "agent",
          image: inputs.images.agent,
          args: ["agent", "--config", AGENT_CONFIG_PATH],
          // Cap the heap below the 256Mi limit whatever V8 reads from the cgroup: at the default
          // 4,096-connection limit the stress bench peaks near 200 MiB RSS with this cap, and over
          // 256 MiB without it.
          env: [
            { name: "NODE_OPTIONS", value: "--max-old-space-size=128" },
            // the agent binds 9080 (and egress listeners) to the pod IP, never 0.0.0.0 (src/contract/ports.ts)
            { name: POD_IP_ENV, valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } },
          ],
          ports: [
            { name: "metrics", containerPort: AGENT_METRICS_PORT, protocol: "TCP" },
            ...inputs.listenPorts.map((p) => ({ name: `l${p}`, containerPort: p, protocol: "TCP" })),
          ],
          // 3 s: under a connection flood /healthz answered in up to 1.1 s (kubelet default 1 s)
          readinessProbe: { httpGet: { path: "/healthz", port: "metrics" }, periodSeconds: 5, timeoutSeconds: 3 },
          livenessProbe: {
            httpGet: { path: "/healthz", port: "metrics" },
            periodSeconds: 10,
            timeoutSeconds: 3,
            failureThreshold: 3,
          },
          securityContext: restricted,
          resources,
          volumeMounts: [...shared, ...tlsMounts],
        },
      ],
      volumes: [
        { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
        ...tailscaleRuntimeVolumes({ token: true }),
        { name: "tailscale-run", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
        { name: "config", configMap: { name: agentName(parent) } },
        ...tlsSecrets.map((s, i) => ({ name: tlsVolumeName(i), secret: { secretName: s } })),
      ],
    },
  };
}
