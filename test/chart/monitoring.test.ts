/**
 * The chart's opt-in monitoring and isolation objects: what they select and scrape, the
 * dashboard's data source and replacement, and the operator NetworkPolicy.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Dashboard, dashboardTargets } from "../monitoring/content.js";
import { find, type K8sObject, renderChart } from "./helm.js";
import { PROMETHEUS_PEER, SCENARIOS } from "./scenarios.js";

const all = renderChart(SCENARIOS["everything enabled"]);
// Grafana's own placeholder syntax, not JavaScript template strings.
const DATASOURCE_VARIABLE = ["$", "{datasource}"].join("");
const DS_PLACEHOLDER = ["$", "{DS_PROMETHEUS}"].join("");
type Selector = { matchLabels?: Record<string, string>; matchExpressions?: Array<{ key: string; values: string[] }> };

describe("ServiceMonitor", () => {
  const sm = find(all, "ServiceMonitor", "tailnet-operator");
  const spec = sm.spec as {
    selector: Selector;
    namespaceSelector?: unknown;
    endpoints: Array<{ port: string; path: string; honorLabels: boolean }>;
  };

  it("selects the operator Service and scrapes its http port", () => {
    const service = find(all, "Service", "tailnet-operator");
    for (const [k, v] of Object.entries(spec.selector.matchLabels ?? {})) {
      assert.equal(service.metadata.labels?.[k], v, `Service lacks ${k}=${v}`);
    }
    const ports = (service.spec as { ports: Array<{ name: string; port: number }> }).ports;
    assert.deepEqual(
      spec.endpoints.map((e) => [e.port, e.path]),
      [["http", "/metrics"]],
    );
    assert.equal(ports.find((p) => p.name === "http")?.port, 8080);
    assert.equal(spec.namespaceSelector, undefined, "the Service is in the ServiceMonitor's namespace");
  });

  it("keeps the operator's own namespace label (honorLabels) and carries the extra labels", () => {
    assert.equal(spec.endpoints[0].honorLabels, true);
    assert.equal(sm.metadata.labels?.release, "kube-prometheus-stack");
  });
});

describe("PodMonitor", () => {
  const spec = find(all, "PodMonitor", "tailnet-agents").spec as {
    selector: Selector;
    namespaceSelector: { any: boolean };
    podMetricsEndpoints: Array<{ port: string; path: string }>;
  };

  it("selects agent and gateway pods in every namespace", () => {
    assert.deepEqual(spec.namespaceSelector, { any: true });
    assert.deepEqual(spec.selector.matchExpressions, [
      { key: "app.kubernetes.io/name", operator: "In", values: ["tailnet-agent", "tailnet-gateway"] },
    ]);
  });

  it("scrapes the agent port and the gateway's Tailscale and CoreDNS ports by name", () => {
    assert.deepEqual(
      spec.podMetricsEndpoints.map((e) => [e.port, e.path]),
      [
        ["metrics", "/metrics"],
        ["ts-metrics", "/metrics"],
        ["dns-metrics", "/metrics"],
      ],
    );
  });
});

describe("PrometheusRule", () => {
  it("carries the bundled alerts and the extra labels", () => {
    const rule = find(all, "PrometheusRule", "tailnet-operator");
    assert.equal(rule.metadata.labels?.release, "kube-prometheus-stack");
    const rules = (
      rule.spec as { groups: Array<{ rules: Array<{ alert?: string; record?: string }> }> }
    ).groups.flatMap((g) => g.rules);
    assert.equal(rules.filter((r) => r.alert).length, 22);
    // the last-known series the per-object alerts read (docs/OPERATIONS.md, "When nobody refreshes the series")
    assert.equal(rules.filter((r) => r.record).length, 7);
  });
});

function dashboardOf(o: K8sObject): Dashboard & { templating: { list: Array<{ current: { value: string } }> } } {
  const text =
    o.kind === "GrafanaDashboard"
      ? (o.spec as { json: string }).json
      : (o.data as Record<string, string>)["tailnet-operator.json"];
  return JSON.parse(text);
}

describe("dashboard", () => {
  it("is a GrafanaDashboard for the default Grafana instance, in the chosen folder", () => {
    const gd = find(all, "GrafanaDashboard", "tailnet-operator");
    const spec = gd.spec as { instanceSelector: unknown; allowCrossNamespaceImport: boolean; folder: string };
    assert.deepEqual(spec.instanceSelector, { matchLabels: { "grafana.internal/instance": "grafana" } });
    assert.equal(spec.allowCrossNamespaceImport, true);
    assert.equal(spec.folder, "Tailnet");
  });

  it("queries the datasourceName value through its data source variable", () => {
    const dashboard = dashboardOf(find(all, "GrafanaDashboard", "tailnet-operator"));
    const variable = dashboard.templating.list.find((v) => v.name === "datasource");
    assert.equal(variable?.type, "datasource");
    assert.equal(variable?.current?.value, "Prometheus");
    for (const t of dashboardTargets(dashboard)) {
      assert.deepEqual(t.datasource, { type: "prometheus", uid: DATASOURCE_VARIABLE }, t.panel);
    }
    const mimir = dashboardOf(
      find(renderChart(SCENARIOS["ConfigMap dashboard"]), "ConfigMap", "tailnet-operator-dashboard"),
    );
    assert.equal(mimir.templating.list[0].current.value, "Mimir");
    assert.doesNotMatch(JSON.stringify(mimir), /DS_PROMETHEUS/);
  });

  it("has the panels the operations page promises, with unique ids inside 24 columns", () => {
    const dashboard = dashboardOf(find(all, "GrafanaDashboard", "tailnet-operator"));
    const titles = dashboard.panels.map((p) => p.title);
    for (const want of [
      "Resources not Ready by reason",
      "Policy pending",
      "PolicyApplied reason",
      "Headscale errors",
      "Headscale latency",
      "Node online",
      "Active connections",
      "Throughput",
      "Dial latency p95",
      "API key expires in",
      "Auth keys expiring first",
    ]) {
      assert.ok(titles.includes(want), `missing panel ${want}`);
    }
    const panelIds = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(panelIds).size, panelIds.length);
    for (const p of dashboard.panels) {
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, p.title);
    }
  });

  it("is a sidecar ConfigMap with kind: ConfigMap", () => {
    const objects = renderChart(SCENARIOS["ConfigMap dashboard"]);
    assert.equal(
      objects.find((o) => o.kind === "GrafanaDashboard"),
      undefined,
    );
    const cm = find(objects, "ConfigMap", "tailnet-operator-dashboard");
    assert.equal(cm.metadata.labels?.grafana_dashboard, "1");
    assert.deepEqual(Object.keys(cm.data as object), ["tailnet-operator.json"]);
  });

  it("is replaced by dashboard.json, given as a string or an object", () => {
    const own = { title: "Our tailnet", uid: "ours", panels: [], templating: { list: [] }, note: DS_PLACEHOLDER };
    for (const json of [JSON.stringify(own), own]) {
      const objects = renderChart({ monitoring: { dashboard: { enabled: true, json, datasourceName: "Thanos" } } });
      const rendered = JSON.parse(
        (find(objects, "GrafanaDashboard", "tailnet-operator").spec as { json: string }).json,
      );
      assert.deepEqual(rendered, { ...own, note: "Thanos" });
    }
  });
});

describe("operator NetworkPolicy", () => {
  type Rule = { from: unknown[]; ports: Array<{ port: number; protocol: string }> };
  const policy = (objects: K8sObject[]) =>
    find(objects, "NetworkPolicy", "tailnet-operator").spec as {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: Rule[];
    };

  it("admits hooks only from the metacontroller namespace and metrics from metricsPeers", () => {
    const spec = policy(all);
    const deployment = find(all, "Deployment", "tailnet-operator").spec as { selector: { matchLabels: unknown } };
    assert.deepEqual(spec.podSelector.matchLabels, deployment.selector.matchLabels);
    assert.deepEqual(spec.policyTypes, ["Ingress"]);
    assert.deepEqual(spec.ingress, [
      {
        from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "metacontroller" } } }],
        ports: [{ port: 8080, protocol: "TCP" }],
      },
      { from: [PROMETHEUS_PEER], ports: [{ port: 8080, protocol: "TCP" }] },
    ]);
  });

  it("follows metacontrollerNamespace and has no metrics rule without peers", () => {
    const spec = policy(renderChart({ networkPolicy: { enabled: true, metacontrollerNamespace: "mc-system" } }));
    assert.deepEqual(spec.ingress, [
      {
        from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "mc-system" } } }],
        ports: [{ port: 8080, protocol: "TCP" }],
      },
    ]);
  });
});
