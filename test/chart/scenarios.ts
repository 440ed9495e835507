/** Chart values shared by the chart tests. */

export const PROMETHEUS_PEER = {
  namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
  podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
};

/** Values for each documented way to install the chart. */
export const SCENARIOS: Record<string, Record<string, unknown>> = {
  defaults: {},
  "everything enabled": {
    hookToken: { value: "s3cr3t-hook-token-0123456789" },
    monitoring: {
      serviceMonitor: { enabled: true, labels: { release: "kube-prometheus-stack" } },
      podMonitor: { enabled: true, scrapeFrom: [PROMETHEUS_PEER] },
      rules: { enabled: true, labels: { release: "kube-prometheus-stack" } },
      dashboard: { enabled: true, folder: "Tailnet" },
    },
    networkPolicy: { enabled: true, metricsPeers: [PROMETHEUS_PEER] },
  },
  "ConfigMap dashboard": { monitoring: { dashboard: { enabled: true, kind: "ConfigMap", datasourceName: "Mimir" } } },
  "custom rule groups": {
    monitoring: {
      rules: {
        enabled: true,
        groups: [
          {
            name: "site-overrides",
            rules: [{ alert: "TailnetNodeOfflineLong", expr: "tailnet_node_online == 0", for: "1h" }],
          },
        ],
      },
    },
  },
  "scrapeFrom with namespace and pod selectors": {
    monitoring: { podMonitor: { enabled: true, scrapeFrom: [PROMETHEUS_PEER, { ipBlock: { cidr: "10.20.0.0/16" } }] } },
    networkPolicy: { enabled: true, metricsPeers: [PROMETHEUS_PEER] },
  },
  "existing hook token Secret": { hookToken: { existingSecret: "metacontroller-hook", existingSecretKey: "bearer" } },
  "Gateway API class": { gatewayAPI: { enabled: true } },
  "kube-api impersonation": { kubeApi: { serviceAccounts: [{ namespace: "tailnet-system", name: "kube-agent" }] } },
  "records readers": {
    records: {
      tailnets: ["home"],
      readers: [
        { kind: "ServiceAccount", name: "headscale", namespace: "headscale" },
        { kind: "User", name: "headscale-records" },
      ],
      serviceAccount: { create: true },
    },
  },
};
