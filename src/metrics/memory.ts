/**
 * Per-registry memory for metrics that must remove series they published earlier (a target that
 * left a spec, a reason no longer active). Keyed by the registry, so each app — and each test — has
 * its own; the hook server is otherwise stateless.
 */
import type { OperatorMetrics } from "./registry.js";

export function registryMemory<V>(): (metrics: OperatorMetrics) => Map<string, V> {
  const byRegistry = new WeakMap<OperatorMetrics, Map<string, V>>();
  return (metrics) => {
    let m = byRegistry.get(metrics);
    if (!m) {
      m = new Map();
      byRegistry.set(metrics, m);
    }
    return m;
  };
}
