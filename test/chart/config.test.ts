/**
 * The operator configuration the chart renders from values: accepted by the operator's own
 * config loader (src/config.ts) in every scenario, and carrying what the values say.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { configFrom, DEFAULT_CONFIG } from "../../src/config.js";
import realVersions from "../../src/real-versions.json" with { type: "json" };
import { find, type K8sObject, renderChart } from "./helm.js";
import { PROMETHEUS_PEER, SCENARIOS } from "./scenarios.js";

const configOf = (objects: K8sObject[]) =>
  parse((find(objects, "ConfigMap", "tailnet-operator-config").data as { "config.yaml": string })["config.yaml"]);
const checksumOf = (objects: K8sObject[]) =>
  (
    find(objects, "Deployment", "tailnet-operator").spec as {
      template: { metadata: { annotations: Record<string, string> } };
    }
  ).template.metadata.annotations["checksum/config"];

describe("operator config rendered by the chart", () => {
  for (const [name, values] of Object.entries(SCENARIOS)) {
    it(`${name}: passes the operator's config validation`, () => {
      assert.doesNotThrow(() => configFrom(configOf(renderChart(values))));
    });
  }

  it("clusterName: default by default, the value when set, and the schema refuses a name that is not a DNS label", () => {
    assert.equal(configFrom(configOf(renderChart({}))).clusterName, "default");
    assert.equal(configFrom(configOf(renderChart({ clusterName: "eu-1" }))).clusterName, "eu-1");
    assert.throws(() => renderChart({ clusterName: "EU_1" }), /clusterName/);
  });

  it("defaults: the release namespace, the operator image as agent image, operator isolation on", () => {
    const config = configFrom(configOf(renderChart({}, { namespace: "tailnet-ops" })));
    assert.equal(config.operatorNamespace, "tailnet-ops");
    assert.equal(config.images.agent, "ghcr.io/tailnet-operator/tailnet-operator:0.1.0");
    assert.deepEqual(config.headscale, { timeoutSeconds: 5, cacheTTLSeconds: 10, slowPartTTLSeconds: 60 });
    assert.deepEqual(config.monitoring.rules, {
      apiKeyExpiryWarningSeconds: 604800,
      authKeyExpiryWarningSeconds: 86400,
    });
    assert.deepEqual(config.networkPolicy, { isolateOperator: true, metricsPeers: [] });
    assert.deepEqual(config.monitoring.podMonitor.scrapeFrom, []);
  });

  it("image pins follow src/real-versions.json (the versions the real-world tests run), as the operator's defaults", () => {
    const config = configFrom(configOf(renderChart({})));
    assert.equal(config.images.tailscale, `tailscale/tailscale:${realVersions.tailscale}`);
    assert.equal(config.images.coredns, `coredns/coredns:${realVersions.coredns}`);
    assert.equal(config.images.tailscale, DEFAULT_CONFIG.images.tailscale);
    assert.equal(config.images.coredns, DEFAULT_CONFIG.images.coredns);
    assert.deepEqual(config.tailscale, { noLogsNoSupport: true });
    const off = configFrom(configOf(renderChart({ tailscale: { noLogsNoSupport: false } })));
    assert.deepEqual(off.tailscale, { noLogsNoSupport: false });
  });

  it("scrapeFrom, metricsPeers and isolation reach the operator", () => {
    const config = configFrom(configOf(renderChart(SCENARIOS["scrapeFrom with namespace and pod selectors"])));
    assert.deepEqual(config.monitoring.podMonitor.scrapeFrom, [PROMETHEUS_PEER, { ipBlock: { cidr: "10.20.0.0/16" } }]);
    assert.deepEqual(config.networkPolicy, { isolateOperator: true, metricsPeers: [PROMETHEUS_PEER] });
  });

  it("thresholds, images and Headscale settings reach the operator", () => {
    const config = configFrom(
      configOf(
        renderChart({
          image: { tag: "0.2.0" },
          images: { tailscale: "mirror.example/tailscale:v1.92.0" },
          headscale: { timeoutSeconds: 8, cacheTTLSeconds: 0, slowPartTTLSeconds: 120 },
          logLevel: "debug",
          monitoring: { rules: { apiKeyExpiryWarningSeconds: 1209600, authKeyExpiryWarningSeconds: 43200 } },
        }),
      ),
    );
    assert.equal(config.images.agent, "ghcr.io/tailnet-operator/tailnet-operator:0.2.0");
    assert.equal(config.images.tailscale, "mirror.example/tailscale:v1.92.0");
    assert.deepEqual(config.headscale, { timeoutSeconds: 8, cacheTTLSeconds: 0, slowPartTTLSeconds: 120 });
    assert.equal(config.logLevel, "debug");
    assert.deepEqual(config.monitoring.rules, {
      apiKeyExpiryWarningSeconds: 1209600,
      authKeyExpiryWarningSeconds: 43200,
    });
  });

  it("rolls the pods when the config changes, not otherwise", () => {
    const base = checksumOf(renderChart());
    assert.equal(checksumOf(renderChart({ replicaCount: 3 })), base);
    assert.notEqual(checksumOf(renderChart({ logLevel: "debug" })), base);
  });
});
