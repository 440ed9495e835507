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
export const expectedRuntimeMounts = [
  { name: "tailscale-state", mountPath: "/var/lib/tailscale" },
  { name: "serviceaccount", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
];

/** TS_AUTH_ONCE … SSL_CERT_FILE, in the order every tailscale container carries them. */
export function expectedRuntimeEnv(o: { noLogsNoSupport?: boolean; caFile?: string }): Record<string, unknown>[] {
  return [
    { name: "TS_AUTH_ONCE", value: "true" },
    { name: "TS_KUBE_SECRET" },
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

export function expectedAgentDeployment(o: AgentGoldenOptions): K8sObject {
  const labels = expectedLabels(o);
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: "/var/run/tailscale/tailscaled.sock" },
    // egress only, and on 127.0.0.2: tailscaled's netstack forwards tailnet connections to 127.0.0.1 (issue 31)
    ...(o.socks ? [{ name: "TS_SOCKS5_SERVER", value: "127.0.0.2:1055" }] : []),
    { name: "TS_HOSTNAME", value: o.hostname },
    { name: "TS_EXTRA_ARGS", value: `--login-server=${o.loginServer}${o.acceptRoutes ? " --accept-routes" : ""}` },
    ...expectedRuntimeEnv({
      noLogsNoSupport: o.noLogsNoSupport,
      caFile: o.ca ? "/etc/tailnet-agent/ca.crt" : undefined,
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
    kind: "Deployment",
    metadata: { name: `${o.name}-agent`, namespace: o.namespace, labels },
    spec: {
      replicas: o.replicas,
      selector: { matchLabels: expectedSelector(o) },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels, annotations: { "tailnet.internal/config-hash": o.configHash } },
        spec: {
          serviceAccountName: `${o.name}-agent`,
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
            ...expectedRuntimeVolumes,
            { name: "tailscale-run", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
            { name: "config", configMap: { name: `${o.name}-agent` } },
            ...tls.map((s, i) => ({ name: `tls-${i}`, secret: { secretName: s } })),
          ],
        },
      },
    },
  };
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
