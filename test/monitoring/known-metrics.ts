/**
 * The metric families the alerts and the dashboard may use, with their label names: the
 * operator's (src/metrics/registry.ts), the agent's (src/agent/metrics.ts), both read from their
 * registries, the default `process_start_time_seconds`, and Prometheus' own `up`.
 */
import { Histogram, type Registry } from "prom-client";
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { createOperatorMetrics, OPERATOR_METRIC_NAMES } from "../../src/metrics/registry.js";

export interface Family {
  labels: ReadonlySet<string>;
  histogram: boolean;
}

/** The agent families the operations page names (TCP 9080); the registry may hold more. */
export const DOCUMENTED_AGENT_METRICS = [
  "tailnet_agent_connections_active",
  "tailnet_agent_bytes_total",
  "tailnet_agent_dial_duration_seconds",
  "tailnet_agent_connections_rejected_total",
  "tailnet_agent_kube_api_requests_total",
  "tailnet_agent_kube_api_refused_total",
  "tailnet_agent_serve_bypass_refused_total",
];

/** Families the monitoring may read that are not the operator's own: Prometheus' and prom-client's. */
export const FOREIGN_METRICS: ReadonlySet<string> = new Set(["up", "process_start_time_seconds"]);

/** Labels Prometheus (Operator) attaches to every scraped series, and `le` of histogram buckets. */
export const TARGET_LABELS = ["job", "instance", "namespace", "pod", "container", "endpoint", "service", "le"];

function family(registry: Registry, name: string): Family {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name} in the registry`);
  // prom-client keeps the declared label names on the instance but does not type them.
  const labels = (metric as unknown as { labelNames?: string[] }).labelNames ?? [];
  return { labels: new Set(labels), histogram: metric instanceof Histogram };
}

export function knownMetrics(): Map<string, Family> {
  const families = new Map<string, Family>();
  const operator = createOperatorMetrics({ defaultMetrics: false }).registry;
  for (const name of OPERATOR_METRIC_NAMES) families.set(name, family(operator, name));
  const agent = createAgentMetrics([], { defaultMetrics: false }).registry;
  for (const metric of agent.getMetricsAsArray()) {
    const name = (metric as unknown as { name: string }).name;
    families.set(name, family(agent, name));
  }
  families.set("up", { labels: new Set(), histogram: false });
  // prom-client's default process metrics, which the operator's registry collects (registry.ts)
  families.set("process_start_time_seconds", { labels: new Set(), histogram: false });
  return families;
}
