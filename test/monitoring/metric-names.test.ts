/**
 * Every metric and label the alerts and the dashboard use must be one the code registers, so a
 * rename in src/metrics cannot silently break an alert or a panel.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { alertRules, bundledDashboardText, type Dashboard, dashboardTargets, recordingRules } from "./content.js";
import { DOCUMENTED_AGENT_METRICS, FOREIGN_METRICS, knownMetrics, TARGET_LABELS } from "./known-metrics.js";
import { familyOf, labelNames, metricNames } from "./promql.js";

const families = knownMetrics();
const histograms = new Set([...families].filter(([, f]) => f.histogram).map(([name]) => name));
// A recorded series (`<metric>:last_known`) carries the labels of the metrics it records, so the
// alerts that read it are held to those (unknown sources fail the recording rules' own check below).
for (const rule of recordingRules()) {
  const labels = new Set<string>();
  for (const name of metricNames(rule.expr)) for (const l of families.get(name)?.labels ?? []) labels.add(l);
  families.set(rule.record, { labels, histogram: false });
}

/** Problems with one expression: unknown metrics, and labels none of its metrics carries. */
function problems(where: string, expr: string): string[] {
  const found: string[] = [];
  const used = metricNames(expr).map((series) => familyOf(series, histograms));
  const allowedLabels = new Set(TARGET_LABELS);
  for (const name of used) {
    const family = families.get(name);
    if (!family) found.push(`${where}: unknown metric ${name}`);
    else for (const label of family.labels) allowedLabels.add(label);
  }
  for (const label of labelNames(expr)) {
    if (!allowedLabels.has(label)) found.push(`${where}: label ${label} is on none of ${used.join(", ")}`);
  }
  if (used.length === 0) found.push(`${where}: selects no metric`);
  return found;
}

describe("PromQL reading", () => {
  it("finds metric names and skips functions, keywords, labels, strings and durations", () => {
    const expr =
      'sum by (kind, hook) (rate(made_up_total{code=~"5..", le="0.5"}[5m] offset 1h)) / on (kind) group_left (x) other_metric > bool 0.1 and up == 1e3';
    assert.deepEqual(metricNames(expr), ["made_up_total", "other_metric", "up"]);
    assert.deepEqual(labelNames(expr), ["code", "hook", "kind", "le", "x"]);
  });

  it("maps histogram series to their family", () => {
    assert.equal(familyOf("tailnet_hook_duration_seconds_bucket", histograms), "tailnet_hook_duration_seconds");
    assert.equal(familyOf("tailnet_hook_requests_total", histograms), "tailnet_hook_requests_total");
    assert.equal(familyOf("tailnet_node_count", histograms), "tailnet_node_count");
  });

  it("reports a renamed metric and a renamed label", () => {
    assert.deepEqual(problems("x", 'tailnet_resource_readyz{kind="TailnetEgress"} == 0'), [
      "x: unknown metric tailnet_resource_readyz",
      "x: label kind is on none of tailnet_resource_readyz",
    ]);
    assert.deepEqual(problems("x", "count by (kind, cause) (tailnet_resource_ready == 0)"), [
      "x: label cause is on none of tailnet_resource_ready",
    ]);
  });
});

describe("metrics used by the monitoring content", () => {
  it("the agent registers the families the operations page names", () => {
    for (const name of DOCUMENTED_AGENT_METRICS) assert.ok(families.has(name), name);
  });

  it("the recording rules record registered metrics, each under its own name plus an operation", () => {
    const rules = recordingRules();
    assert.equal(rules.length, 7);
    assert.deepEqual(
      rules.flatMap((r) => problems(r.record, r.expr)),
      [],
    );
    for (const r of rules.filter((r) => r.record.endsWith(":last_known"))) {
      assert.ok(metricNames(r.expr).includes(r.record.replace(/:last_known$/, "")), r.record);
    }
  });

  it("the alert rules use only registered metrics and their labels", () => {
    const rules = alertRules();
    assert.equal(rules.length, 22);
    assert.deepEqual(
      rules.flatMap((r) => problems(r.alert, r.expr)),
      [],
    );
  });

  it("the dashboard uses only registered metrics and their labels", () => {
    const targets = dashboardTargets(JSON.parse(bundledDashboardText()) as Dashboard);
    assert.ok(targets.length >= 20, `only ${targets.length} queries`);
    assert.deepEqual(
      targets.flatMap((t) => problems(`panel "${t.panel}"`, t.expr)),
      [],
    );
  });

  it("the dashboard shows every operator and agent family except the deprecated ones", () => {
    const used = new Set(
      dashboardTargets(JSON.parse(bundledDashboardText()) as Dashboard).flatMap((t) =>
        metricNames(t.expr).map((s) => familyOf(s, histograms)),
      ),
    );
    const deprecated = ["tailnetegress_routes_missing", "tailnetingress_backends_unreachable"];
    const missing = [...families.keys()].filter(
      (name) => !used.has(name) && !deprecated.includes(name) && !FOREIGN_METRICS.has(name) && !name.includes(":"),
    );
    assert.deepEqual(missing, []);
  });
});
