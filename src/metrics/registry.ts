import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { CompactGauge } from "./compact.js";

/**
 * Every metric the operator (hook server) exports, on a registry of its own per app.
 * Names, labels and meaning follow docs/OPERATIONS.md; the alert rules and the dashboard are
 * checked against `OPERATOR_METRIC_NAMES` by a test, so a rename cannot silently break an alert.
 * The per-object families (a series per object, and per Headscale node: 20,000 workloads are 40,000
 * node series) are CompactGauges: see compact.ts for why.
 */
export function createOperatorMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  // registered in this order, which is the order of the exposition
  return {
    registry,
    ...hookMetrics(registers),
    ...headscaleMetrics(registers),
    ...resourceMetrics(registers),
    ...policyMetrics(registers),
    ...nodeMetrics(registers),
    ...keyMetrics(registers),
    ...workloadMetrics(registers),
  };
}

/** The hook server's own: requests, latency, the last success (TailnetHooksSilent). */
function hookMetrics(registers: Registry[]) {
  return {
    hookRequests: new Counter({
      name: "tailnet_hook_requests_total",
      help: "Hook requests answered, by kind, hook and HTTP status code.",
      labelNames: ["kind", "hook", "code"] as const,
      registers,
    }),
    hookDuration: new Histogram({
      name: "tailnet_hook_duration_seconds",
      help: "Time to answer a hook request.",
      labelNames: ["kind", "hook"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    hookLastSuccess: new Gauge({
      name: "tailnet_hook_last_success_timestamp_seconds",
      help: "Unix time of the last hook this replica answered with a 2xx; 0 until the first. TailnetHooksSilent reads it.",
      registers,
    }),
  };
}

/** Headscale API calls by method and bounded path template. */
function headscaleMetrics(registers: Registry[]) {
  return {
    headscaleRequests: new Counter({
      name: "tailnet_headscale_requests_total",
      help: "Headscale API requests by method, bounded path template and status code (0 = no HTTP response).",
      labelNames: ["method", "path", "code"] as const,
      registers,
    }),
    headscaleDuration: new Histogram({
      name: "tailnet_headscale_request_duration_seconds",
      help: "Headscale API request latency by method and bounded path template.",
      labelNames: ["method", "path"] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
  };
}

/** A series per object: its Ready condition and the reasons of its conditions. */
function resourceMetrics(registers: Registry[]) {
  return {
    resourceReady: new CompactGauge({
      name: "tailnet_resource_ready",
      help: "1 when the current-generation Ready condition is True, else 0; reason is the active Ready reason. Tailnet has none; suspended gateways are withdrawn.",
      labelNames: ["kind", "namespace", "name", "reason"] as const,
      registers,
    }),
    resourceCondition: new CompactGauge({
      name: "tailnet_resource_condition",
      help: "1 for the active reason of a condition type, 0 for reasons previously seen on it.",
      labelNames: ["kind", "namespace", "name", "type", "reason"] as const,
      registers,
      // about 8 series an object: the object's names once, each type and reason shared (compact.ts)
      groupBy: 3,
    }),
  };
}

/** Per Tailnet: the policy's state and the user conflicts that block its writes. */
function policyMetrics(registers: Registry[]) {
  return {
    policyPending: new Gauge({
      name: "tailnet_policy_pending",
      help: "1 only in Apply mode while the rendered policy hash differs from the applied one.",
      labelNames: ["tailnet"] as const,
      registers,
    }),
    policyGenerated: new Gauge({
      name: "tailnet_policy_generated",
      help: "Entries the operator generated into the policy, by kind (tags, grants, routes).",
      labelNames: ["tailnet", "kind"] as const,
      registers,
    }),
    policyApplyErrors: new Counter({
      name: "tailnet_policy_apply_errors_total",
      help: "Failed policy writes by reason (rejected: Headscale refused it; transport: no answer or a server error).",
      labelNames: ["tailnet", "reason"] as const,
      registers,
    }),
    policyWriteRetries: new Counter({
      name: "tailnet_policy_write_retries_total",
      help: "Policy writes another writer undid before the read-back (result retried: merged and written again; gave_up: the sync stopped after its attempts, WriteContended).",
      labelNames: ["tailnet", "result"] as const,
      registers,
    }),
    userConflicts: new Gauge({
      name: "tailnet_headscale_user_conflicts",
      help: "User names held by two or more Headscale users (mirrors status.userConflicts); above 0 blocks policy writes.",
      labelNames: ["tailnet"] as const,
      registers,
    }),
  };
}

/** A series per Headscale node, from the last successful node list. */
function nodeMetrics(registers: Registry[]) {
  return {
    nodeOnline: new CompactGauge({
      name: "tailnet_node_online",
      help: "1 when the last successful Headscale node list showed the node online.",
      labelNames: ["tailnet", "node"] as const,
      registers,
    }),
    nodeLastSeen: new CompactGauge({
      name: "tailnet_node_last_seen_seconds",
      help: "Unix timestamp of the node's lastSeen in the last successful node list.",
      labelNames: ["tailnet", "node"] as const,
      registers,
    }),
  };
}

/** API key and pre-auth key lifetimes, and the API key's renewal. */
function keyMetrics(registers: Registry[]) {
  return {
    apiKeyExpiry: new Gauge({
      name: "tailnet_api_key_expiry_timestamp_seconds",
      help: "Unix timestamp at which the operator's Headscale API key expires.",
      labelNames: ["tailnet"] as const,
      registers,
    }),
    apiKeyRotationSteps: new Counter({
      name: "tailnet_api_key_rotation_steps_total",
      help: "API key renewal steps (spec.headscale.apiKeyRotation) by step (create, verify, expire) and result (ok, failed).",
      labelNames: ["tailnet", "step", "result"] as const,
      registers,
    }),
    authKeyExpiry: new CompactGauge({
      name: "tailnet_auth_key_expiry_timestamp_seconds",
      help: "Unix timestamp at which the pre-auth key of an agent, a gateway or a TailnetAuthKey expires.",
      labelNames: ["kind", "namespace", "name"] as const,
      registers,
    }),
  };
}

/** Egress and ingress: replayed route approvals, target states, expose reachability. */
function workloadMetrics(registers: Registry[]) {
  return {
    routeApprovalsReplayed: new Counter({
      name: "tailnet_route_approvals_replayed_total",
      help: "Routes re-approved after their approval was lost (counts routes, not batches).",
      labelNames: ["tailnet", "namespace", "name"] as const,
      registers,
    }),
    egressTargetState: new CompactGauge({
      name: "tailnet_egress_target_state",
      help: "1 for the current state of each egress target (state label: Ready or the target's reason).",
      labelNames: ["namespace", "name", "target", "state"] as const,
      registers,
      // a series per target and state: the egress's names once, its series shared with egresses holding the same
      groupBy: 2,
    }),
    egressRoutesMissingDeprecated: new CompactGauge({
      name: "tailnetegress_routes_missing",
      help: "Deprecated (kept through v0.4.x): number of egress targets whose routes are missing. Prefer tailnet_egress_target_state.",
      labelNames: ["namespace", "name"] as const,
      registers,
    }),
    ingressExposeReachable: new CompactGauge({
      name: "tailnet_ingress_expose_reachable",
      help: "1 when the agent reached the expose's backend on its last probe.",
      labelNames: ["namespace", "name", "expose"] as const,
      registers,
    }),
    ingressBackendsUnreachableDeprecated: new CompactGauge({
      name: "tailnetingress_backends_unreachable",
      help: "Deprecated (kept through v0.4.x): number of unreachable ingress backends. Prefer tailnet_ingress_expose_reachable.",
      labelNames: ["namespace", "name"] as const,
      registers,
    }),
  };
}

export type OperatorMetrics = ReturnType<typeof createOperatorMetrics>;

/** Names of the operator's own metric families (the agent's live in src/agent). */
export const OPERATOR_METRIC_NAMES = [
  "tailnet_hook_requests_total",
  "tailnet_hook_duration_seconds",
  "tailnet_hook_last_success_timestamp_seconds",
  "tailnet_headscale_requests_total",
  "tailnet_headscale_request_duration_seconds",
  "tailnet_resource_ready",
  "tailnet_resource_condition",
  "tailnet_policy_pending",
  "tailnet_policy_generated",
  "tailnet_policy_apply_errors_total",
  "tailnet_policy_write_retries_total",
  "tailnet_headscale_user_conflicts",
  "tailnet_node_online",
  "tailnet_node_last_seen_seconds",
  "tailnet_api_key_expiry_timestamp_seconds",
  "tailnet_api_key_rotation_steps_total",
  "tailnet_auth_key_expiry_timestamp_seconds",
  "tailnet_route_approvals_replayed_total",
  "tailnet_egress_target_state",
  "tailnetegress_routes_missing",
  "tailnet_ingress_expose_reachable",
  "tailnetingress_backends_unreachable",
] as const;
