/**
 * Child builders shared by TailnetEgress and TailnetIngress: one agent, one set of builders.
 * Each takes (parent, inputs) and returns a plain object (Tailscale's tsrStatefulSet style).
 * The pod runs two containers: the official tailscale image in userspace mode with its state on
 * an emptyDir (a container restart re-joins as the same node; no Secret is written back, so no
 * RBAC and no API token are needed), and our agent, which listens, probes and reports /status on
 * 9080. The tailscale container pieces every pod shares (agents and gateways) are
 * `tailscaleRuntime*` below. The facts behind the conditions both agent kinds share (TagKnown,
 * Registered) are judged here too, so egress and ingress cannot drift apart; each kind maps them to its
 * own typed reasons.
 */

import { createHash } from "node:crypto";
import type { NetworkPolicyPeer, OperatorConfig } from "../../config.js";
import type { AgentConfigInput } from "../../contract/agent-config.js";
import {
  AGENT_CONFIG_PATH,
  AGENT_METRICS_PORT,
  POD_IP_ENV,
  TAILSCALE_LOCAL_ADDR_PORT,
  TAILSCALE_SOCKS_ADDR,
  TAILSCALED_SOCKET,
} from "../../contract/ports.js";
import { nodesTagged } from "../../headscale/lists.js";
import type { HsNode, HsPolicy } from "../../headscale/types.js";
import type { Obs } from "../../headscale/view.js";
import { commonLabels, OWNER_UID_LABEL } from "../../k8s/labels.js";
import type { K8sObject } from "../../k8s/objects.js";
import { parseHuJson } from "../../policy/hujson.js";
import { AUTHKEY_DATA_KEY } from "./authkey.js";

export const CONFIG_HASH_ANNOTATION = "tailnet.internal/config-hash";
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

const component = (parent: K8sObject) => (parent.kind === "TailnetIngress" ? "ingress" : "egress");

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
      labels: commonLabels(parent, component(parent)),
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
      labels: commonLabels(parent, component(parent)),
    },
    data,
  };
}

/** Where the state emptyDir is mounted; it lives as long as the pod. */
export const TAILSCALE_STATE_DIR = "/var/lib/tailscale";
/**
 * TS_STATE_DIR: a folder tailscaled makes inside the emptyDir. A state folder named "tailscale" must
 * be mode 0700 and tailscaled chmods it (paths/paths_unix.go ensureStateDirPermsUnix), which a
 * non-root container cannot do to the kubelet's root-owned emptyDir ("creating state directory:
 * chmod /var/lib/tailscale: operation not permitted", then no state store and no login — seen with
 * the real tailscaled in test/real); a folder it creates itself is its own.
 */
export const TAILSCALE_STATE_SUBDIR = `${TAILSCALE_STATE_DIR}/state`;
/** Where the kubelet would mount the service-account files (kube/kubeclient/client.go saPath). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** Key of the Headscale CA in the pod's ConfigMap (from the Tailnet's caSecretRef). */
export const CA_KEY = "ca.crt";

export interface TailscaleRuntimeInputs {
  /** OperatorConfig.tailscale.noLogsNoSupport: TS_NO_LOGS_NO_SUPPORT=true. */
  noLogsNoSupport: boolean;
  /** Path of the Headscale CA inside the tailscale container (SSL_CERT_FILE); none: system roots. */
  caFile?: string;
}

/**
 * Environment every tailscale container gets. TS_KUBE_SECRET="" keeps state out of the API
 * (containerboot keeps an explicit empty value, settings.go); it is written without `value`, which
 * the kubelet sets as "" and is what the API server stores (`value` is omitempty): a `value: ""`
 * would differ from the stored object on every sync, so dynamic-apply would PUT the Deployment each
 * time. TS_STATE_DIR puts the state on an emptyDir, so a restarted container comes back as the
 * same node without logging in again
 * (TS_AUTH_ONCE: `tailscale up` runs only in NeedsLogin, containerboot main.go).
 */
export function tailscaleRuntimeEnv(r: TailscaleRuntimeInputs): Record<string, unknown>[] {
  const env: Record<string, unknown>[] = [
    { name: "TS_AUTH_ONCE", value: "true" },
    { name: "TS_KUBE_SECRET" },
    { name: "TS_STATE_DIR", value: TAILSCALE_STATE_SUBDIR },
  ];
  // tailscaled uploads its logs to log.tailscale.com unless told not to (envknob NoLogsNoSupport)
  if (r.noLogsNoSupport) env.push({ name: "TS_NO_LOGS_NO_SUPPORT", value: "true" });
  // Go reads SSL_CERT_FILE instead of the system bundle; tailscale still has its baked-in roots
  if (r.caFile) env.push({ name: "SSL_CERT_FILE", value: r.caFile });
  return env;
}

/**
 * Volumes of the tailscale container: its state, and the service-account namespace and cluster
 * CA without a token. Images before v1.96.0 build a kube client whenever KUBERNETES_SERVICE_HOST
 * is set and exit without these two files (tailscale issue 8188); automountServiceAccountToken
 * stays false, so the pod holds no API credential.
 */
export const TAILSCALE_RUNTIME_VOLUMES: readonly Record<string, unknown>[] = [
  { name: "tailscale-state", emptyDir: { medium: "Memory", sizeLimit: "4Mi" } },
  {
    name: "serviceaccount",
    projected: {
      sources: [
        {
          downwardAPI: {
            items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
          },
        },
        // optional: a cluster that publishes no kube-root-ca.crt still starts the pod (v1.96+ needs none)
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }], optional: true } },
      ],
    },
  },
];

export const TAILSCALE_RUNTIME_MOUNTS: readonly Record<string, unknown>[] = [
  { name: "tailscale-state", mountPath: TAILSCALE_STATE_DIR },
  { name: "serviceaccount", mountPath: SERVICE_ACCOUNT_DIR, readOnly: true },
];

/** A short, stable hash of everything the pods read at start (the pod-template annotation). */
export function configHash(...parts: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

export interface AgentDeploymentInputs {
  replicas: number;
  tag: string;
  /** The Tailnet's Headscale URL (tailscale --login-server). */
  loginServer: string;
  /** Name of the pre-auth key Secret child; undefined while no key exists yet (pods wait for it). */
  authKeySecret: string | undefined;
  /** Tailnet host name of the agent node (a DNS label, see dnsLabel). */
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

/** Pod-level security of every pod the operator runs (agents and gateways): non-root, seccomp. */
export const POD_SECURITY_CONTEXT = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  fsGroup: 65532,
  seccompProfile: { type: "RuntimeDefault" },
} as const;

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

/** By position: Secret names may hold dots and run to 253 characters, volume names may not. */
const tlsVolumeName = (index: number) => `tls-${index}`;

export function agentDeployment(parent: K8sObject, inputs: AgentDeploymentInputs): K8sObject {
  const selector = agentSelector(parent);
  const labels = { ...commonLabels(parent, component(parent)), ...selector };
  const tlsSecrets = inputs.tlsSecrets ?? [];
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: TAILSCALED_SOCKET },
    ...(inputs.socks ? [{ name: "TS_SOCKS5_SERVER", value: TAILSCALE_SOCKS_ADDR }] : []),
    { name: "TS_HOSTNAME", value: inputs.hostname },
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
    }),
    { name: "TS_ENABLE_METRICS", value: "true" },
    // off 127.0.0.1, where tailscaled's netstack forwards tailnet connections (agent/ports.ts POD_LOCAL_HOST)
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
                // the agent binds 9080 (and egress listeners) to the pod IP, never 0.0.0.0 (agent/ports.ts)
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
            ...TAILSCALE_RUNTIME_VOLUMES,
            { name: "tailscale-run", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
            { name: "config", configMap: { name: agentName(parent) } },
            ...tlsSecrets.map((s, i) => ({ name: tlsVolumeName(i), secret: { secretName: s } })),
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

/** A namespaceSelector peer for one namespace (e.g. egress clients in the egress's own namespace). */
export function namespacePeer(namespace: string): NetworkPolicyPeer {
  return { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } } };
}

export function agentNetworkPolicy(
  parent: K8sObject,
  config: OperatorConfig,
  dataPlane: { ports: number[]; from: NetworkPolicyPeer[] } | undefined,
): K8sObject {
  const ingress: Record<string, unknown>[] = [];
  if (dataPlane?.ports.length) {
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

// ---- facts both agent kinds turn into their TagKnown and Registered conditions ----
// Neutral verdicts, no reason strings: each kind maps them to the reasons of its own table
// (src/conditions/tables/<kind>.ts), so the wording stays shared and the reasons stay typed.

/** Whether the tag is a key of the live policy's tagOwners: known, pending, or unreadable (not read or not HuJSON). */
export interface TagFact {
  state: "known" | "pending" | "unreadable";
  message: string;
}

/**
 * From the live policy: known when the tag is a key of tagOwners; pending while it is not (Headscale
 * rejects an unowned tag at registration); unreadable when the policy was not read or not parsed.
 */
export function tagFact(policy: Obs<HsPolicy | null>, tag: string): TagFact {
  if (!policy.ok) {
    return { state: "unreadable", message: `the live policy could not be read: ${policy.error.message}` };
  }
  if (policy.value === null) {
    return { state: "pending", message: `no policy is stored in Headscale yet, so ${tag} is not in tagOwners` };
  }
  const parsed = parseHuJson(policy.value.policy);
  if (!parsed.ok) return { state: "unreadable", message: `the live policy could not be parsed: ${parsed.message}` };
  const owners = parsed.value.tagOwners;
  if (owners && typeof owners === "object" && !Array.isArray(owners) && Object.hasOwn(owners, tag)) {
    return { state: "known", message: `${tag} is in the live policy's tagOwners` };
  }
  return {
    state: "pending",
    message: `${tag} is not in the live policy's tagOwners yet (the Tailnet adds it when it applies the policy; in DryRun it is never written)`,
  };
}

/** Headscale nodes carrying the tag (among others), sorted by MagicDNS name. */
export function nodesWithTag(nodes: readonly HsNode[], tag: string): HsNode[] {
  return [...nodesTagged(nodes, tag)].sort((a, b) => nodeLabel(a).localeCompare(nodeLabel(b)));
}

export const nodeLabel = (n: HsNode) => n.givenName || n.name || n.id;

const MAX_LISTED = 5;

/** "a, b, c" or "a, b, c, d, e and 3 more": messages stay short however many nodes linger. */
export function listNames(names: readonly string[]): string {
  if (names.length <= MAX_LISTED) return names.join(", ");
  return `${names.slice(0, MAX_LISTED).join(", ")} and ${names.length - MAX_LISTED} more`;
}

/** Whether a Headscale node carries the tag: registered, absent, or unreadable (the node list was not read). */
export interface RegistrationFact {
  state: "registered" | "absent" | "unreadable";
  message: string;
}

/**
 * A Headscale node carrying the tag exists. `keyNote` explains a missing pre-auth key (e.g. Headscale
 * refused to create one); it is appended while no node is registered.
 */
export function registrationFact(nodes: Obs<HsNode[]>, tag: string, keyNote?: string): RegistrationFact {
  const note = keyNote ? `; ${keyNote}` : "";
  if (!nodes.ok) {
    return { state: "unreadable", message: `Headscale nodes could not be listed: ${nodes.error.message}${note}` };
  }
  const mine = nodesWithTag(nodes.value, tag);
  if (mine.length === 0) return { state: "absent", message: `no Headscale node carries ${tag} yet${note}` };
  const noun = mine.length === 1 ? "node carries" : "nodes carry";
  return { state: "registered", message: `${mine.length} ${noun} ${tag}: ${listNames(mine.map(nodeLabel))}` };
}

// ---- superseded agent nodes (a pod replaced by a rollout, an eviction, a reschedule) ----

/** An offline node is superseded only after this long: a pod that merely reconnects keeps its node. */
export const SUPERSEDED_GRACE_SECONDS = 60;

/**
 * A node an agent pod of this object registered: with a key this object minted (`ownKeys`, see
 * tenancy.ts), exactly the tag, and a key of the agent shape (AGENT_KEY_FLAGS). Carrying the tag is never
 * enough: an admin's node may carry it too.
 */
function isAgentNode(n: HsNode, tag: string, ownKeys: ReadonlySet<string>): boolean {
  const k = n.preAuthKey;
  return (
    !!k &&
    ownKeys.has(k.id) &&
    n.tags.length === 1 &&
    n.tags[0] === tag &&
    k.reusable &&
    k.ephemeral &&
    k.aclTags.length === 1 &&
    k.aclTags[0] === tag
  );
}

/**
 * Our agent nodes a newer pod has replaced (pure). A restarted or rescheduled pod registers as a
 * new node while the old ephemeral one lingers offline (Headscale keeps it for
 * ephemeral_node_inactivity_timeout, 30 min by default) and names the new one `<host>-1`
 * (0.29 hscontrol/state: collisions get -1, -2 suffixes). Once at least `replicas` of our nodes are
 * online, every node of ours offline for SUPERSEDED_GRACE_SECONDS is one no pod will come back
 * to. Online nodes are never removed (a rollout surges one pod over `replicas`), nor anything
 * while fewer than `replicas` are online (an offline node may be a pod on its way back).
 */
export function supersededNodes(
  nodes: readonly HsNode[],
  tag: string,
  ownKeys: ReadonlySet<string>,
  replicas: number,
  now: Date,
): HsNode[] {
  const ours = nodes.filter((n) => isAgentNode(n, tag, ownKeys));
  if (ours.filter((n) => n.online).length < replicas) return [];
  const cutoff = now.getTime() - SUPERSEDED_GRACE_SECONDS * 1000;
  return ours
    .filter((n) => !n.online && (!n.lastSeen || Date.parse(n.lastSeen) <= cutoff))
    .sort((a, b) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id));
}
