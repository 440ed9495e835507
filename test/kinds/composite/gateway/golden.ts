/**
 * The golden StatefulSet of a gateway replica (Tailscale's expectedSTS style), built from an options object;
 * children.test.ts compares the rendered ones whole against it.
 */
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { configHash } from "../../../../src/kinds/shared/pod-template.js";
import { stampTemplate } from "../../../../src/kinds/shared/template-hash.js";
import { expectedRuntimeEnv, expectedRuntimeMounts, expectedRuntimeVolumes } from "../../shared/golden.js";
import { UID, ZONE } from "./fixtures.js";

export interface Opts {
  name?: string;
  /** The replica (0 by default). */
  index?: number;
  replicas?: number;
  hostname?: string;
  routes?: string[];
  secret?: string;
  tag?: string;
  loginServer?: string;
  images?: typeof DEFAULT_CONFIG.images;
  corefile: string;
  /** The Headscale CA delivered through the gw-gateway-ca ConfigMap. */
  ca?: string;
  noLogsNoSupport?: boolean;
}

export const labels = (name = "gw") => ({
  "app.kubernetes.io/name": "tailnet-gateway",
  "app.kubernetes.io/instance": name,
  "app.kubernetes.io/component": "gateway",
  "app.kubernetes.io/managed-by": "tailnet-operator",
  "tailnet.internal/owner-uid": UID,
});
export const selector = { "app.kubernetes.io/name": "tailnet-gateway", "tailnet.internal/owner-uid": UID };
const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};

/** The replica's kube store (issue 32): state in `<replica>-state`, the API address from the kubelet's env. */
function kubeStoreEnv(replica: string, o: Opts): Record<string, unknown>[] {
  return expectedRuntimeEnv({
    noLogsNoSupport: o.noLogsNoSupport,
    caFile: o.ca ? "/etc/tailnet-ca/ca.crt" : undefined,
  }).flatMap((e) =>
    e.name === "TS_KUBE_SECRET"
      ? [
          { name: "TS_KUBE_SECRET", value: `${replica}-state` },
          { name: "TS_KUBERNETES_READ_API_SERVER_ADDRESS_FROM_ENV", value: "true" },
        ]
      : [e],
  );
}

/** The serviceaccount volume gains the projected token (mounted in the tailscale container only). */
const volumesWithToken = expectedRuntimeVolumes.map((v) =>
  v.name === "serviceaccount"
    ? {
        ...v,
        projected: {
          sources: [
            { serviceAccountToken: { path: "token", expirationSeconds: 3600 } },
            ...(v.projected?.sources ?? []),
          ],
        },
      }
    : v,
);

export function expectedStatefulSet(o: Opts): K8sObject {
  const images = o.images ?? DEFAULT_CONFIG.images;
  const index = o.index ?? 0;
  const replica = `${o.name ?? "gw"}-gateway-${index}`;
  const host = o.hostname ?? "cluster-gw";
  const env: Record<string, unknown>[] = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: "/tmp/tailscaled.sock" },
    { name: "TS_HOSTNAME", value: index === 0 ? host : `${host}-r${index}` },
    { name: "TS_ROUTES", value: (o.routes ?? ["10.96.0.0/12"]).join(",") },
    { name: "TS_EXTRA_ARGS", value: `--login-server=${o.loginServer ?? "https://hs.example.com"}` },
    ...kubeStoreEnv(replica, o),
    { name: "TS_ENABLE_METRICS", value: "true" },
    { name: "TS_ENABLE_HEALTH_CHECK", value: "true" },
    // every listener on the pod IP: tailscaled's netstack forwards what serve does not handle to 127.0.0.1 (issue 31)
    { name: "POD_IP", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } },
    { name: "POD_IPS", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIPs" } } },
    { name: "TS_LOCAL_ADDR_PORT", value: "$(POD_IP):8080" },
  ];
  if (o.secret) env.push({ name: "TS_AUTHKEY", valueFrom: { secretKeyRef: { name: o.secret, key: "authkey" } } });
  const replicaLabel = { "tailnet.internal/replica": String(index) };
  const template = stampTemplate({
    metadata: {
      labels: { ...labels(o.name), ...replicaLabel },
      annotations: {
        "tailnet.internal/config-hash": o.ca ? configHash(o.corefile, o.ca) : configHash(o.corefile),
      },
    },
    spec: {
      serviceAccountName: replica,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
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
          image: images.tailscale,
          imagePullPolicy: "IfNotPresent",
          env,
          ports: [{ name: "ts-metrics", containerPort: 8080, protocol: "TCP" }],
          readinessProbe: { httpGet: { path: "/healthz", port: "ts-metrics" }, periodSeconds: 5 },
          securityContext: restricted,
          resources: { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "256Mi" } },
          volumeMounts: [
            { name: "tmp", mountPath: "/tmp" },
            ...expectedRuntimeMounts,
            ...(o.ca ? [{ name: "ca", mountPath: "/etc/tailnet-ca", readOnly: true }] : []),
          ],
        },
        {
          name: "coredns",
          image: images.coredns,
          imagePullPolicy: "IfNotPresent",
          args: ["-conf", "/etc/coredns/Corefile"],
          env: [{ name: "POD_IP", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } }],
          ports: [
            { name: "dns", containerPort: 1053, protocol: "UDP" },
            { name: "dns-metrics", containerPort: 9153, protocol: "TCP" },
          ],
          readinessProbe: { httpGet: { path: "/ready", port: 8181 }, periodSeconds: 5 },
          livenessProbe: { httpGet: { path: "/health", port: 8081 }, periodSeconds: 10, failureThreshold: 5 },
          securityContext: restricted,
          resources: { requests: { cpu: "20m", memory: "32Mi" }, limits: { memory: "128Mi" } },
          volumeMounts: [
            { name: "corefile", mountPath: "/etc/coredns", readOnly: true },
            { name: "zone", mountPath: "/var/lib/coredns/zone", readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "16Mi" } },
        ...volumesWithToken,
        ...(o.ca ? [{ name: "ca", configMap: { name: `${o.name ?? "gw"}-gateway-ca` } }] : []),
        { name: "corefile", configMap: { name: `${o.name ?? "gw"}-gateway-corefile` } },
        { name: "zone", configMap: { name: `${o.name ?? "gw"}-gateway-zone`, optional: true } },
      ],
    },
  });
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: replica, namespace: "infra", labels: { ...labels(o.name), ...replicaLabel } },
    spec: {
      replicas: o.replicas ?? 1,
      serviceName: replica,
      podManagementPolicy: "Parallel",
      updateStrategy: { type: "RollingUpdate" },
      selector: { matchLabels: { ...selector, ...replicaLabel } },
      template,
    },
  };
}

export const COREFILE = `# CoreDNS of TailnetGateway infra/gw, rendered by tailnet-operator. Do not edit.
# Everything is served on 1053 of the pod IP only; the DNS Service maps port 53 to it.
# The derived zone, for cluster workloads (the cluster DNS forwards the zone here).
${ZONE}:1053 {
    bind {$POD_IP}
    errors
    ready [{$POD_IP}]:8181
    health {$HOSTNAME}:8081
    prometheus [{$POD_IP}]:9153
    file /var/lib/coredns/zone/zone.db ${ZONE} {
        reload 10s
    }
}
# Cluster names for tailnet clients (split DNS to the DNS Service IP, reached through the
# gateway's routes), answered by the cluster DNS.
svc.cluster.local:1053 {
    bind {$POD_IP}
    errors
    prometheus [{$POD_IP}]:9153
    cache 30
    forward . /etc/resolv.conf
}
`;
