/**
 * Per-registry memory for metrics that must remove series they published earlier (a target that
 * left a spec, a reason no longer active). Kept on the registry (src/k8s/attached.ts), so each app — and each
 * test — has its own; the hook server is otherwise stateless.
 */
import { attachedMemo } from "../k8s/attached.js";
import type { OperatorMetrics } from "./registry.js";

export function registryMemory<V>(name: string): (metrics: OperatorMetrics) => Map<string, V> {
  const byRegistry = attachedMemo<OperatorMetrics, Map<string, V>>(name);
  return (metrics) => byRegistry.of(metrics, () => new Map());
}
