/**
 * The Tailnet's metrics (docs/OPERATIONS.md "Metric interpretation"), set from the same
 * observations as its status. Node series reflect the last successful node list (a failed list
 * leaves them as they were); no label carries a secret.
 */

import type { Obs } from "../../../headscale/errors.js";
import type { HsApiKey, HsNode } from "../../../headscale/types.js";
import { registryMemory } from "../../../metrics/memory.js";
import type { OperatorMetrics } from "../../../metrics/registry.js";
import type { TailnetStatusFields } from "./plan.js";
import { findOwnApiKey } from "./rotation.js";

export { findOwnApiKey };

const nodeSeries = registryMemory<Set<string>>("tailnetNodeSeries");

function seenNodes(metrics: OperatorMetrics, tailnet: string): Set<string> {
  const byTailnet = nodeSeries(metrics);
  let seen = byTailnet.get(tailnet);
  if (!seen) {
    seen = new Set();
    byTailnet.set(tailnet, seen);
  }
  return seen;
}

const unixSeconds = (ts: string | null): number | undefined => {
  if (!ts || ts.startsWith("0001-")) return undefined;
  const ms = Date.parse(ts);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
};

export interface TailnetMetricInputs {
  tailnet: string;
  mode: "Apply" | "DryRun";
  status: TailnetStatusFields;
  nodes?: Obs<HsNode[]>;
  apiKeys?: Obs<HsApiKey[]>;
  apiKey?: string;
}

export function publishTailnetMetrics(metrics: OperatorMetrics, m: TailnetMetricInputs): void {
  const tailnet = m.tailnet;
  const policy = m.status.policy;
  const pending = m.mode === "Apply" && !!policy?.renderedHash && policy.renderedHash !== policy.appliedHash;
  metrics.policyPending.set({ tailnet }, pending ? 1 : 0);
  if (policy?.generated) {
    for (const kind of ["tags", "grants", "routes"] as const) {
      metrics.policyGenerated.set({ tailnet, kind }, policy.generated[kind]);
    }
  }
  if (m.status.userConflicts !== undefined) metrics.userConflicts.set({ tailnet }, m.status.userConflicts);
  if (m.nodes?.ok) publishNodes(metrics, tailnet, m.nodes.value);
  if (m.apiKeys?.ok && m.apiKey) {
    const own = findOwnApiKey(m.apiKeys.value, m.apiKey);
    const expiry = own ? unixSeconds(own.expiration) : undefined;
    if (expiry !== undefined) metrics.apiKeyExpiry.set({ tailnet }, expiry);
    else metrics.apiKeyExpiry.remove({ tailnet });
  }
}

function publishNodes(metrics: OperatorMetrics, tailnet: string, nodes: readonly HsNode[]): void {
  const seen = seenNodes(metrics, tailnet);
  const current = new Set<string>();
  for (const n of nodes) {
    const node = n.givenName || n.name;
    if (!node) continue;
    current.add(node);
    metrics.nodeOnline.set({ tailnet, node }, n.online ? 1 : 0);
    const lastSeen = unixSeconds(n.lastSeen);
    if (lastSeen !== undefined) metrics.nodeLastSeen.set({ tailnet, node }, lastSeen);
    else metrics.nodeLastSeen.remove({ tailnet, node });
  }
  for (const node of seen) {
    if (!current.has(node)) {
      metrics.nodeOnline.remove({ tailnet, node });
      metrics.nodeLastSeen.remove({ tailnet, node });
    }
  }
  seen.clear();
  for (const node of current) seen.add(node);
}

/** Every series of a deleted Tailnet (the apply-error counter stays: rates over it remain valid). */
export function withdrawTailnetMetrics(metrics: OperatorMetrics, tailnet: string): void {
  metrics.policyPending.remove({ tailnet });
  for (const kind of ["tags", "grants", "routes"]) metrics.policyGenerated.remove({ tailnet, kind });
  metrics.userConflicts.remove({ tailnet });
  metrics.apiKeyExpiry.remove({ tailnet });
  for (const step of ["create", "verify", "expire"]) {
    for (const result of ["ok", "failed"]) metrics.apiKeyRotationSteps.remove({ tailnet, step, result });
  }
  publishNodes(metrics, tailnet, []);
  nodeSeries(metrics).delete(tailnet);
}
