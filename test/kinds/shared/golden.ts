/**
 * Golden agent children, written out by hand from an options object (Tailscale's expectedSTS
 * style): a test changes one option and compares the whole object again. Shared by the egress and
 * ingress tests, so both kinds are held to the same pod.
 */
import type { K8sObject } from "../../../src/k8s/objects.js";

export interface AgentGoldenOptions {
  kind: "TailnetEgress" | "TailnetIngress";
  name: string;
  namespace: string;
  uid: string;
  replicas: number;
  tag: string;
  loginServer: string;
  authKeySecret?: string;
  hostname: string;
  images: { agent: string; tailscale: string };
  listenPorts: number[];
  configHash: string;
  serveConfig?: boolean;
  tlsSecrets?: string[];
  /** The ConfigMap carries the Headscale CA: SSL_CERT_FILE points at it. */
  ca?: boolean;
  /** Default true (TS_NO_LOGS_NO_SUPPORT=true). */
  noLogsNoSupport?: boolean;
  /** Egress agents: --accept-routes. */
  acceptRoutes?: boolean;
  /** Egress agents: tailscaled's SOCKS5 proxy, on 127.0.0.2 (none in ingress pods). */
  socks?: boolean;
}

/** The tailscale container's state and service-account volumes (agents and gateways alike). */
export const expectedRuntimeVolumes = [
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
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }], optional: true } },
      ],
    },
  },
];
/** With a state Secret (issue 32): an hour's token joins the serviceaccount volume, for the tailscale container. */
export const expectedRuntimeVolumesWithToken = [
  expectedRuntimeVolumes[0],
  {
    name: "serviceaccount",
    projected: {
      sources: [
        { serviceAccountToken: { path: "token", expirationSeconds: 3600 } },
        {
          downwardAPI: {
            items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
          },
        },
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }], optional: true } },
      ],
    },
  },
];
export const expectedRuntimeMounts = [
  { name: "tailscale-state", mountPath: "/var/lib/tailscale" },
  { name: "serviceaccount", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
];

/** TS_AUTH_ONCE … SSL_CERT_FILE, in the order every tailscale container carries them. */
export function expectedRuntimeEnv(o: {
  noLogsNoSupport?: boolean;
  caFile?: string;
  stateSecret?: string;
}): Record<string, unknown>[] {
  return [
    { name: "TS_AUTH_ONCE", value: "true" },
    ...(o.stateSecret
      ? [
          { name: "TS_KUBE_SECRET", value: o.stateSecret },
          { name: "TS_KUBERNETES_READ_API_SERVER_ADDRESS_FROM_ENV", value: "true" },
        ]
      : [{ name: "TS_KUBE_SECRET" }]),
    { name: "TS_STATE_DIR", value: "/var/lib/tailscale/state" },
    ...(o.noLogsNoSupport === false ? [] : [{ name: "TS_NO_LOGS_NO_SUPPORT", value: "true" }]),
    ...(o.caFile ? [{ name: "SSL_CERT_FILE", value: o.caFile }] : []),
  ];
}

export function expectedLabels(o: Pick<AgentGoldenOptions, "kind" | "name" | "uid">): Record<string, string> {
  return {
    "app.kubernetes.io/name": "tailnet-agent",
    "app.kubernetes.io/instance": o.name,
    "app.kubernetes.io/component": o.kind === "TailnetIngress" ? "ingress" : "egress",
    "app.kubernetes.io/managed-by": "tailnet-operator",
    "tailnet.internal/owner-uid": o.uid,
  };
}

export function expectedSelector(o: Pick<AgentGoldenOptions, "uid">): Record<string, string> {
  return { "app.kubernetes.io/name": "tailnet-agent", "tailnet.internal/owner-uid": o.uid };
}

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};
const resources = { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "256Mi" } };

/** Replica `index`'s StatefulSet (issue 32): one pod, its own ServiceAccount and state Secret. */
export function expectedAgentStatefulSet(o: AgentGoldenOptions, index = 0): K8sObject {
  const replica = `${o.name}-agent-${index}`;
  const labels = expectedLabels(o);
  const podLabels = { ...labels, "tailnet.internal/replica": String(index) };
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: "/var/run/tailscale/tailscaled.sock" },
    // egress only, and on 127.0.0.2: tailscaled's netstack forwards tailnet connections to 127.0.0.1 (issue 31)
    ...(o.socks ? [{ name: "TS_SOCKS5_SERVER", value: "127.0.0.2:1055" }] : []),
    { name: "TS_HOSTNAME", value: index === 0 ? o.hostname : `${o.hostname}-r${index}` },
    { name: "TS_EXTRA_ARGS", value: `--login-server=${o.loginServer}${o.acceptRoutes ? " --accept-routes" : ""}` },
    ...expectedRuntimeEnv({
      noLogsNoSupport: o.noLogsNoSupport,
      caFile: o.ca ? "/etc/tailnet-agent/ca.crt" : undefined,
      stateSecret: `${replica}-state`,
    }),
    { name: "TS_ENABLE_METRICS", value: "true" },
    { name: "TS_LOCAL_ADDR_PORT", value: "127.0.0.2:9002" },
  ];
  if (o.authKeySecret) {
    env.push({ name: "TS_AUTHKEY", valueFrom: { secretKeyRef: { name: o.authKeySecret, key: "authkey" } } });
  }
  if (o.serveConfig) env.push({ name: "TS_SERVE_CONFIG", value: "/etc/tailnet-agent/serve.json" });
  const tls = o.tlsSecrets ?? [];
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: replica, namespace: o.namespace, labels: podLabels },
    spec: {
      replicas: 1,
      serviceName: replica,
      podManagementPolicy: "Parallel",
      updateStrategy: { type: "RollingUpdate" },
      selector: { matchLabels: { ...expectedSelector(o), "tailnet.internal/replica": String(index) } },
      template: {
        metadata: { labels: podLabels, annotations: { "tailnet.internal/config-hash": o.configHash } },
        spec: {
          serviceAccountName: replica,
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
              image: o.images.tailscale,
              env,
              securityContext: restricted,
              resources,
              volumeMounts: [
                { name: "tmp", mountPath: "/tmp" },
                ...expectedRuntimeMounts,
                { name: "tailscale-run", mountPath: "/var/run/tailscale" },
                { name: "config", mountPath: "/etc/tailnet-agent", readOnly: true },
              ],
            },
            {
              name: "agent",
              image: o.images.agent,
              args: ["agent", "--config", "/etc/tailnet-agent/config.json"],
              env: [
                { name: "NODE_OPTIONS", value: "--max-old-space-size=128" },
                { name: "POD_IP", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } },
              ],
              ports: [
                { name: "metrics", containerPort: 9080, protocol: "TCP" },
                ...o.listenPorts.map((p) => ({ name: `l${p}`, containerPort: p, protocol: "TCP" })),
              ],
              readinessProbe: { httpGet: { path: "/healthz", port: "metrics" }, periodSeconds: 5, timeoutSeconds: 3 },
              livenessProbe: {
                httpGet: { path: "/healthz", port: "metrics" },
                periodSeconds: 10,
                timeoutSeconds: 3,
                failureThreshold: 3,
              },
              securityContext: restricted,
              resources,
              volumeMounts: [
                { name: "tailscale-run", mountPath: "/var/run/tailscale" },
                { name: "config", mountPath: "/etc/tailnet-agent", readOnly: true },
                ...tls.map((s, i) => ({ name: `tls-${i}`, mountPath: `/etc/tailnet-tls/${s}`, readOnly: true })),
              ],
            },
          ],
          volumes: [
            { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
            ...expectedRuntimeVolumesWithToken,
            { name: "tailscale-run", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
            { name: "config", configMap: { name: `${o.name}-agent` } },
            ...tls.map((s, i) => ({ name: `tls-${i}`, secret: { secretName: s } })),
          ],
        },
      },
    },
  };
}

/** Replica `index`'s ServiceAccount, Role, RoleBinding and state Secret, in creation order. */
export function expectedReplicaIdentity(
  o: Pick<AgentGoldenOptions, "kind" | "name" | "namespace" | "uid">,
  index: number,
): K8sObject[] {
  const name = `${o.name}-agent-${index}`;
  const labels = { ...expectedLabels(o), "tailnet.internal/replica": String(index) };
  const meta = { name, namespace: o.namespace, labels };
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta, automountServiceAccountToken: false },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: meta,
      rules: [
        {
          apiGroups: [""],
          resources: ["secrets"],
          resourceNames: [`${name}-state`],
          verbs: ["get", "update", "patch"],
        },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: meta,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{ kind: "ServiceAccount", name, namespace: o.namespace }],
    },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { ...meta, name: `${name}-state`, labels: { ...labels, "tailnet.internal/state": "true" } },
      type: "Opaque",
    },
  ];
}

export function expectedServiceAccount(o: Pick<AgentGoldenOptions, "kind" | "name" | "namespace" | "uid">): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: `${o.name}-agent`, namespace: o.namespace, labels: expectedLabels(o) },
    automountServiceAccountToken: false,
  };
}

export function expectedConfigMap(
  o: Pick<AgentGoldenOptions, "kind" | "name" | "namespace" | "uid">,
  config: unknown,
  serveConfig?: unknown,
  ca?: string,
): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `${o.name}-agent`, namespace: o.namespace, labels: expectedLabels(o) },
    data: {
      "config.json": `${JSON.stringify(config, null, 2)}\n`,
      ...(serveConfig ? { "serve.json": `${JSON.stringify(serveConfig, null, 2)}\n` } : {}),
      ...(ca ? { "ca.crt": ca } : {}),
    },
  };
}

export function expectedNetworkPolicy(
  o: Pick<AgentGoldenOptions, "kind" | "name" | "namespace" | "uid">,
  opts: { operatorNamespace: string; scrapeFrom?: unknown[]; dataPorts?: number[]; dataFrom?: unknown[] },
): K8sObject {
  const ingress: unknown[] = [];
  if (opts.dataPorts?.length) {
    ingress.push({ from: opts.dataFrom ?? [], ports: opts.dataPorts.map((port) => ({ protocol: "TCP", port })) });
  }
  ingress.push({
    from: [
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": opts.operatorNamespace } } },
      ...(opts.scrapeFrom ?? []),
    ],
    ports: [{ protocol: "TCP", port: 9080 }],
  });
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: `${o.name}-agent`, namespace: o.namespace, labels: expectedLabels(o) },
    spec: { podSelector: { matchLabels: expectedSelector(o) }, policyTypes: ["Ingress"], ingress },
  };
}
