/** The decision of an Ingress (pure): the labels, annotations, attachments and status of the answer. */
import type { Decision } from "../../../pipeline/run.js";
import type { ExposedCondition, IngressClassPlan, IngressStatus } from "./plan.js";
import { Written } from "./written.js";

export interface IngressClassDecision extends Decision {
  labels: Record<string, string | null>;
  annotations: Record<string, string | null>;
  status: IngressStatus;
  conditions: readonly ExposedCondition[];
}

export function decideIngressClass(plan: IngressClassPlan): IngressClassDecision {
  if (plan.role !== "ours" || !plan.exposed) {
    const clear = plan.role === "released";
    return {
      labels: clear ? { [Written.state]: null } : {},
      annotations: clear ? { [Written.message]: null } : {},
      status: plan.status,
      children: [],
      conditions: [],
      fields: {},
    };
  }
  return {
    labels: { [Written.state]: plan.exposed.reason },
    annotations: { [Written.message]: plan.exposed.message },
    status: plan.status,
    children: plan.attachments,
    conditions: [plan.exposed],
    fields: {},
  };
}
