/**
 * The Service annotations users write and the labels/annotations the operator writes back
 * (docs/services.md). Inputs and outputs share the `tailnet.internal/` prefix; no output key is an
 * input key, so what the operator writes never changes what the DecoratorControllers select.
 */
import { GROUP } from "../../../api/schemas.js";

const k = (name: string) => `${GROUP}/${name}`;

/** What users write on a Service. */
export const Annotation = {
  /** `"true"`: expose the Service on the tailnet (a TailnetIngress attachment). */
  expose: k("expose"),
  /** A tailnet host (node name, MagicDNS name or IP): reach it from the cluster (a TailnetEgress attachment). */
  target: k("target"),
  /** The tailnet node name of the exposure (default: the Service name). */
  hostname: k("hostname"),
  /** The Tailnet (default: the only one in the cluster). */
  tailnet: k("tailnet"),
  /** The node's tag (one; comma-separated lists are refused with more than one entry). */
  tags: k("tags"),
  /** Comma-separated ACL entities allowed to connect (expose only). */
  allowFrom: k("allow-from"),
} as const;

/** The two directions, one DecoratorController each (decoratorcontrollers/). */
export type Role = "expose" | "target";

/** What the operator writes back, per role: a label `kubectl get svc -L` shows, annotations with the detail. */
export const Written = {
  expose: {
    state: k("expose-state"),
    message: k("expose-message"),
    address: k("dns-name"),
  },
  target: {
    state: k("target-state"),
    message: k("target-message"),
    address: k("target-address"),
  },
} as const satisfies Record<Role, { state: string; message: string; address: string }>;

/**
 * Set by Metacontroller on every attachment a DecoratorController returns; only attachments carrying
 * its own name come back in `attachments` (pkg/controller/decorator/controller.go getChildren).
 */
export const DECORATOR_ANNOTATION = "metacontroller.k8s.io/decorator-controller";

/**
 * `spec.loadBalancerClass` of a LoadBalancer Service exposed like `tailnet.internal/expose: "true"`
 * (the service-loadbalancer DecoratorController). Kubernetes' own service controller leaves every
 * Service with a class alone (k8s.io/kubernetes staging/src/k8s.io/cloud-provider/controllers/service/
 * controller.go wantsLoadBalancer), and the API server makes the class immutable.
 */
export const LOAD_BALANCER_CLASS = k("tailnet");

/**
 * Whether a Service is a LoadBalancer of our class: `spec.type: LoadBalancer` and our
 * `spec.loadBalancerClass`, or no class at all when the operator is configured as the default class
 * (`services.defaultLoadBalancerClass`; the cloud's controller acts on classless Services too).
 */
export function isTailnetLoadBalancer(service: object, defaultClass = false): boolean {
  const spec = ((service as { spec?: unknown }).spec ?? {}) as { type?: unknown; loadBalancerClass?: unknown };
  if (spec.type !== "LoadBalancer") return false;
  const cls = spec.loadBalancerClass;
  return cls === LOAD_BALANCER_CLASS || (defaultClass && (cls === undefined || cls === null || cls === ""));
}
