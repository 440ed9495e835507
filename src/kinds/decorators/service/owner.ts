/**
 * The hand-off between the three Service DecoratorControllers. Metacontroller hands a Service to each
 * one that selects it: service-expose and service-target by their annotations, service-loadbalancer
 * always (a class is a spec field, and a DecoratorController selects by labels and annotations only).
 * Exactly one side answers with more than nothing; this decides which.
 */
import { isTailnetLoadBalancer } from "./annotations.js";

/** `loadbalancer`: service-loadbalancer's; `annotations`: service-expose's and service-target's. */
export type ServiceOwner = "loadbalancer" | "annotations";

/**
 * A LoadBalancer of our class is service-loadbalancer's: the class wins over any annotation, so the
 * annotation decorators write no key and keep no attachment on it. Every other Service is the
 * annotation decorators' (each answers for its own annotation), and service-loadbalancer leaves it
 * alone. `defaultClass`: `services.defaultLoadBalancerClass`, classless LoadBalancers are ours too.
 */
export function serviceOwner(service: object, defaultClass: boolean): ServiceOwner {
  return isTailnetLoadBalancer(service, defaultClass) ? "loadbalancer" : "annotations";
}
