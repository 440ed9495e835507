/**
 * The decision of a Gateway API object (pure): what the plan says becomes the answer's attachments (a
 * Gateway's TailnetIngress) and status (null: not ours, Metacontroller writes nothing). These decorators write no
 * labels, annotations or conditions of ours: the Gateway API's own status conditions are the status.
 */
import type { Decision } from "../../../pipeline/run.js";
import type { DecoratorResult } from "../module.js";

export interface GatewayApiDecision extends Decision {
  status: Record<string, unknown> | null;
}

export function decideGatewayApi(
  attachments: GatewayApiDecision["children"],
  status: GatewayApiDecision["status"],
): GatewayApiDecision {
  return { children: attachments, status, conditions: [], fields: {} };
}

/** The DecoratorController answer of a decision. */
export const answerOf = (d: GatewayApiDecision): DecoratorResult => ({
  labels: {},
  annotations: {},
  attachments: d.children,
  status: d.status,
});
