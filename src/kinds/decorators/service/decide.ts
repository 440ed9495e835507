/** The decision of an annotated Service or a LoadBalancer of our class (pure): the labels, annotations, attachments and status of the answer. */
import type { Decision } from "../../../pipeline/run.js";
import { Written } from "./annotations.js";
import { loadBalancerStatus } from "./loadbalancer.js";
import type { ServiceObservation } from "./observe.js";
import type { ExposedCondition, ServicePlan } from "./plan.js";

/**
 * The pipeline's Decision: `children` are the attachments. `status` only for a LoadBalancer of our
 * class (its `loadBalancer` is ours then); an annotated Service's status is not ours.
 */
export interface ServiceDecision extends Decision {
  labels: Record<string, string | null>;
  annotations: Record<string, string | null>;
  conditions: readonly ExposedCondition[];
  status?: Record<string, unknown>;
}

export function decideService(role: "expose" | "target", plan: ServicePlan): ServiceDecision {
  const keys = Written[role];
  return {
    labels: { [keys.state]: plan.exposed.reason },
    annotations: { [keys.message]: plan.exposed.message, [keys.address]: plan.address ?? null },
    children: plan.attachments,
    conditions: [plan.exposed],
    fields: {},
  };
}

/** The decision of a Service of our class: the exposure's labels, annotations and attachment, and its status. */
export function decideLoadBalancer(plan: ServicePlan, observed: ServiceObservation): ServiceDecision {
  const service = observed.service;
  const mine = observed.attachments.find((o) => o.metadata.name === service.metadata.name);
  // an attachment the plan drops (a refusal the user can fix) takes its addresses with it
  const kept = plan.attachments.length > 0 ? mine : undefined;
  return {
    ...decideService("expose", plan),
    status: loadBalancerStatus(service, plan.exposed.status === "True", kept),
  };
}

/** Finalize (the annotation removed, or the Service deleted): no attachment, nothing written back. */
export function decideServiceFinalize(role: "expose" | "target", observed: ServiceObservation) {
  const keys = Written[role];
  return {
    labels: { [keys.state]: null },
    annotations: { [keys.message]: null, [keys.address]: null },
    attachments: [],
    finalized: observed.attachments.length === 0,
  };
}
