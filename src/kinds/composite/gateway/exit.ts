/**
 * The gateway as an exit node (spec.exitNode): whether the Tailnet's tenancy lets this gateway offer one
 * (tenancy.ts exitNodeAdmission, the admins' decision), the routes its pod advertises, and the ExitNode
 * condition with the approvals it wants, per current node (pure but `exitNodeState`, which reads the
 * related Namespace). Headscale 0.29 serves exit routes only as the pair 0.0.0.0/0 + ::/0 and approves them
 * only through autoApprovers.exitNode or approve_routes (src/net/exit.ts), so the pair is advertised,
 * approved and reported together. Nothing here ever withdraws an approval: a gateway that stops being an
 * exit node rolls its pods, and the new nodes do not advertise the pair.
 */
import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { GatewayCondition as C, GATEWAY_REASONS, GatewayReason as R } from "../../../conditions/tables/gateway.js";
import type { HsNode } from "../../../headscale/types.js";
import { isRecord, type K8sObject, type ObjectMaps } from "../../../k8s/objects.js";
import { EXIT_ROUTES } from "../../../net/exit.js";
import { exitAllowFromDenied, sourcesOutside } from "../../shared/routes.js";
import { admitExitNode, namespaceOf, type Tenancy } from "../../shared/tenancy.js";
import { describeNode, type NodeAnalysis } from "./nodes.js";
import type { GatewaySpec } from "./spec.js";

const { cond } = conditionsOf(GATEWAY_REASONS);

/** What exitWork reads of the gateway's inputs (plan.ts GatewayInputs; narrowed so plan can import this file). */
export interface ExitInput {
  exitNode: ExitNodeState;
  headscale: { nodes: { ok: true; value: HsNode[] } | { ok: false; error: string } };
  spec: Pick<GatewaySpec, "replicas">;
  tailnet: { name: string; policyMode: "Apply" | "DryRun"; incompatible?: boolean };
}

/** What exitWork reads of the fresh writer's verdict (plan.ts FreshVerdict). */
export interface ExitVerdict {
  facts?: Pick<NodeAnalysis, "current" | "currents">;
  verified: boolean;
}

/** The exit pair to approve on one node (plan.ts GatewayApproval). */
export interface ExitApproval {
  nodeId: string;
  node: string;
  add: string[];
}

type ExitCondition = TypedCondition<typeof GATEWAY_REASONS, "ExitNode">;

/** What the sync may do about spec.exitNode. */
export type ExitNodeState =
  | { state: "off" }
  | { state: "allowed"; allowFrom: string[] }
  /** Not admitted by the tenancy (ExitNodeNotAllowed), or allowFrom outside allowedIngressSources (PolicyDenied). */
  | { state: "refused"; reason: "ExitNodeNotAllowed" | "PolicyDenied"; message: string }
  /** The Namespace (its labels) was not observed: the pod keeps advertising what it advertised (`keep`). */
  | { state: "unknown"; message: string; keep: boolean };

/**
 * spec.exitNode judged by the Tailnet's tenancy and, when `sources` is given, its allowFrom by the Tailnet's
 * allowedIngressSources (shared/routes.ts sourcesOutside, as the Tailnet's render judges it); `deployment` is
 * the observed one (for "unknown").
 */
export function exitNodeState(
  spec: GatewaySpec,
  parent: K8sObject,
  tenancy: Tenancy,
  related: ObjectMaps | undefined,
  deployment: K8sObject | undefined,
  sources?: { tailnet: string; allowedIngressSources: readonly string[] },
): ExitNodeState {
  if (!spec.exitNode) return { state: "off" };
  const namespace = parent.metadata.namespace ?? "";
  if (tenancy.exitNodes && !namespaceOf(related, namespace)) {
    // A failed observation never withdraws: the live pod template decides what is advertised meanwhile.
    const message = `the labels of namespace ${namespace} are not observed (the Tailnet's spec.tenancy.exitNodes needs them)`;
    return { state: "unknown", message, keep: advertisesExit(deployment) };
  }
  const refused = admitExitNode(parent, tenancy, related);
  if (refused) return { state: "refused", reason: "ExitNodeNotAllowed", message: refused.message };
  const outside = sources ? sourcesOutside(spec.exitNode.allowFrom, sources.allowedIngressSources) : [];
  if (sources && outside.length) {
    return {
      state: "refused",
      reason: "PolicyDenied",
      message: exitAllowFromDenied(outside, sources.tailnet),
    };
  }
  return { state: "allowed", allowFrom: spec.exitNode.allowFrom };
}

/** Whether a gateway Deployment's tailscale container advertises the exit pair (TS_ROUTES). */
export function advertisesExit(deployment: K8sObject | undefined): boolean {
  const template = isRecord(deployment?.spec) ? deployment.spec.template : undefined;
  const pod = isRecord(template) && isRecord(template.spec) ? template.spec : {};
  const containers = Array.isArray(pod.containers) ? pod.containers : [];
  const ts = containers.find((c) => isRecord(c) && c.name === "tailscale");
  const env = isRecord(ts) && Array.isArray(ts.env) ? ts.env : [];
  const routes = env.find((e) => isRecord(e) && e.name === "TS_ROUTES");
  const value = isRecord(routes) && typeof routes.value === "string" ? routes.value.split(",") : [];
  return EXIT_ROUTES.every((r) => value.includes(r));
}

/** Whether the pod advertises the exit pair. */
export function advertised(exit: ExitNodeState): boolean {
  return exit.state === "allowed" || (exit.state === "unknown" && exit.keep);
}

/** TS_ROUTES: spec.routes, then the exit pair when the gateway is an exit node. */
export function advertisedRoutes(routes: readonly string[], exit: ExitNodeState): string[] {
  return advertised(exit) ? [...routes, ...EXIT_ROUTES] : [...routes];
}

const PAIR = EXIT_ROUTES.join(", ");

/**
 * ExitNode and the approvals it wants: the pair on every current node that advertises it and lacks an
 * approval, only on verified nodes, never in DryRun or against an incompatible server. True while at
 * least one current node serves the pair (advertised and approved); the message names each node's state.
 */
export function exitWork(input: ExitInput, v: ExitVerdict): { condition: ExitCondition; approvals: ExitApproval[] } {
  const exit = input.exitNode;
  const only = (condition: ExitCondition) => ({ condition, approvals: [] });
  if (exit.state === "off") return only(cond(C.ExitNode, "False", R.NotRequested, "spec.exitNode is not set"));
  if (exit.state === "refused") return only(cond(C.ExitNode, "False", exit.reason, exit.message));
  if (exit.state === "unknown") return only(cond(C.ExitNode, "Unknown", R.NotObserved, exit.message));
  if (!input.headscale.nodes.ok) {
    return only(cond(C.ExitNode, "Unknown", R.NotObserved, `cannot list nodes: ${input.headscale.nodes.error}`));
  }
  const nodes = input.spec.replicas > 1 ? (v.facts?.currents ?? []) : v.facts?.current ? [v.facts.current] : [];
  if (nodes.length === 0) return only(cond(C.ExitNode, "False", R.NotAdvertised, "no registered gateway node yet"));
  const { name, policyMode, incompatible } = input.tailnet;
  const held = !v.verified
    ? "while Registered is not FreshRuntimeReady"
    : policyMode === "DryRun"
      ? `(Tailnet ${name} is in DryRun)`
      : incompatible
        ? `(Tailnet ${name} reports HeadscaleCompatible=False)`
        : undefined;
  const approvals: ExitApproval[] = [];
  const parts: string[] = [];
  let serving = 0;
  let advertising = 0;
  for (const node of nodes) {
    const who = describeNode(node);
    if (!advertisesPair(node)) {
      parts.push(`${who} does not advertise ${PAIR} (yet)`);
      continue;
    }
    advertising++;
    if (approvedPair(node)) {
      serving++;
      parts.push(`${who} serves ${PAIR}`);
    } else if (held) {
      parts.push(`not approving ${PAIR} on ${who} ${held}`);
    } else {
      approvals.push({ nodeId: node.id, node: who, add: [...EXIT_ROUTES] });
      serving++;
      parts.push(`approved ${PAIR} on ${who}`);
    }
  }
  const users = exit.allowFrom.length
    ? `usable from ${exit.allowFrom.join(", ")} (autogroup:internet)`
    : "no spec.exitNode.allowFrom: only the base policy's grants to autogroup:internet use it";
  const message = `${serving} of ${nodes.length} ${nodes.length === 1 ? "node is an exit node" : "nodes are exit nodes"}: ${parts.join("; ")}; ${users}`;
  if (serving > 0) return { condition: cond(C.ExitNode, "True", R.Approved, message), approvals };
  const reason = advertising > 0 ? R.NotApproved : R.NotAdvertised;
  return { condition: cond(C.ExitNode, "False", reason, message), approvals };
}

const advertisesPair = (n: HsNode) => EXIT_ROUTES.every((r) => n.availableRoutes.includes(r));
const approvedPair = (n: HsNode) => EXIT_ROUTES.every((r) => n.approvedRoutes.includes(r));
