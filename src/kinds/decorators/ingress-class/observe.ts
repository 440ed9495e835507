/**
 * What an Ingress's decorator sync can see: nothing but the request (no I/O). IngressClasses, Tailnets,
 * TailnetIngresses and Services come from `related` (customize asks for all of them: its answer is
 * cached per uid+generation, and an annotation change bumps neither); the attachments are the ones
 * this DecoratorController made.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { objectsOf } from "../../../k8s/objects.js";
import type { HookRequest } from "../../../pipeline/types.js";
import { Written } from "./written.js";

export interface IngressClassObservation {
  ingress: K8sObject;
  ingressClasses: K8sObject[];
  tailnets: K8sObject[];
  tailnetIngresses: K8sObject[];
  /** The Services of the Ingress's namespace: named backend ports are resolved against them. */
  services: K8sObject[];
  /** This controller's TailnetIngress attachments (normally one, named after the Ingress). */
  attachments: K8sObject[];
  /** The state written last time (the label): a change is an Event, a repeat is not; set = we manage it. */
  previousState?: string;
}

export async function observeIngressClass(req: HookRequest): Promise<IngressClassObservation> {
  const ns = req.parent.metadata.namespace;
  return {
    ingress: req.parent,
    ingressClasses: objectsOf(req.related, "networking.k8s.io/v1", "IngressClass"),
    tailnets: objectsOf(req.related, API_VERSION, "Tailnet"),
    tailnetIngresses: objectsOf(req.related, API_VERSION, "TailnetIngress"),
    services: objectsOf(req.related, "v1", "Service").filter((s) => s.metadata.namespace === ns),
    attachments: objectsOf(req.children, API_VERSION, "TailnetIngress"),
    previousState: req.parent.metadata.labels?.[Written.state],
  };
}
