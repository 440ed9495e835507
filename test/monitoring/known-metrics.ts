/**
 * The metric families the alerts and the dashboard may use, with their label names: the
 * operator's from its registry (src/metrics/registry.ts), the agent's as the operations page
 * names them, and Prometheus' own `up`.
 */
import { Histogram } from "prom-client";
import { createOperatorMetrics, OPERATOR_METRIC_NAMES } from "../../src/metrics/registry.js";

export interface Family {
  labels: ReadonlySet<string>;
  histogram: boolean;
}

/** The agent's families (TCP 9080); they carry target/expose names, never peers or IPs. */
export const AGENT_METRICS: Record<string, { labels: string[]; histogram: boolean }> = {
  tailnet_agent_connections_active: { labels: ["name"], histogram: false },
  tailnet_agent_bytes_total: { labels: ["name", "direction"], histogram: false },
  tailnet_agent_dial_duration_seconds: { labels: ["name"], histogram: true },
  tailnet_agent_connections_rejected_total: { labels: ["name"], histogram: false },
};

/** Labels Prometheus (Operator) attaches to every scraped series, and `le` of histogram buckets. */
export const TARGET_LABELS = ["job", "instance", "namespace", "pod", "container", "endpoint", "service", "le"];

export function knownMetrics(): Map<string, Family> {
  const { registry } = createOperatorMetrics({ defaultMetrics: false });
  const families = new Map<string, Family>();
  for (const name of OPERATOR_METRIC_NAMES) {
    const metric = registry.getSingleMetric(name);
    if (!metric) throw new Error(`OPERATOR_METRIC_NAMES lists ${name}, but the registry has no such metric`);
    // prom-client keeps the declared label names on the instance but does not type them.
    const labels = (metric as unknown as { labelNames?: string[] }).labelNames ?? [];
    families.set(name, { labels: new Set(labels), histogram: metric instanceof Histogram });
  }
  for (const [name, family] of Object.entries(AGENT_METRICS)) {
    families.set(name, { labels: new Set(family.labels), histogram: family.histogram });
  }
  families.set("up", { labels: new Set(), histogram: false });
  return families;
}
