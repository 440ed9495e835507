/**
 * What a Service's decorator sync can see: nothing but the request (no I/O). The Tailnets and the
 * workload objects of the cluster come from `related` (customize asks for all of them, so
 * Metacontroller's customize cache — per uid+generation, and an annotation change bumps neither —
 * can never hide a Tailnet named by a newer annotation); the attachments are the ones this
 * DecoratorController made.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { objectsOf } from "../../../k8s/objects.js";
import type { HookRequest } from "../../../pipeline/types.js";
import { type Role, Written } from "./annotations.js";

export interface ServiceObservation {
  service: K8sObject;
  tailnets: K8sObject[];
  ingresses: K8sObject[];
  egresses: K8sObject[];
  /** Every Service (expose: to see another Service claiming our hostname before its attachment exists). */
  services: K8sObject[];
  /** This controller's attachments of the role's kind (normally one, named after the Service). */
  attachments: K8sObject[];
  /** The state this role wrote last time (the label), to tell a change (an Event) from a repeat. */
  previousState?: string;
  /** `services.defaultLoadBalancerClass`: classless LoadBalancer Services are ours too. */
  defaultLoadBalancerClass?: boolean;
}

export const roleKind = (role: Role) => (role === "expose" ? "TailnetIngress" : "TailnetEgress");

/** `req` is the decorator request in the pipeline's words: the Service as `parent`, the attachments as `children`. */
export async function observeService(
  req: HookRequest,
  role: Role,
  defaultLoadBalancerClass = false,
): Promise<ServiceObservation> {
  return {
    service: req.parent,
    tailnets: objectsOf(req.related, API_VERSION, "Tailnet"),
    ingresses: objectsOf(req.related, API_VERSION, "TailnetIngress"),
    egresses: objectsOf(req.related, API_VERSION, "TailnetEgress"),
    services: objectsOf(req.related, "v1", "Service"),
    attachments: objectsOf(req.children, API_VERSION, roleKind(role)),
    previousState: req.parent.metadata.labels?.[Written[role].state],
    ...(defaultLoadBalancerClass ? { defaultLoadBalancerClass } : {}),
  };
}
