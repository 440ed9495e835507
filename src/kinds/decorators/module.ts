/**
 * What a DecoratorController kind implements (Metacontroller v2 decorator hooks,
 * pkg/controller/decorator/api/v2/hooks.go): the request names the decorated object `object` and
 * its owned objects `attachments`; the answer sets labels and annotations on the object (a null
 * value deletes the key) and lists the desired attachments. `status` is answered only by a kind that
 * owns (part of) the object's status: an Ingress of our class, a LoadBalancer Service of our class
 * (`status.loadBalancer`); null or absent leaves the object's status alone.
 */
import type { K8sObject, ObjectMaps } from "../../k8s/objects.js";
import type { HookDeps, RelatedRule } from "../../pipeline/types.js";

export interface DecoratorRequest {
  controller: Record<string, unknown>;
  object: K8sObject;
  attachments: ObjectMaps;
  related: ObjectMaps;
  finalizing: boolean;
}

/** Customize sends the decorated object as `parent`, as for CompositeControllers (customize/api/v2/hooks.go). */
export interface DecoratorCustomizeRequest {
  controller: Record<string, unknown>;
  object: K8sObject;
}

export interface DecoratorResult {
  labels: Record<string, string | null>;
  annotations: Record<string, string | null>;
  attachments: K8sObject[];
  resyncAfterSeconds?: number;
  /** The object's whole status, written through the status subresource when it differs; null or absent leaves it alone. */
  status?: Record<string, unknown> | null;
}

export interface DecoratorFinalizeResult extends DecoratorResult {
  finalized: boolean;
}

export interface DecoratorModule {
  /** Path segment: /hooks/<name>/<hook>. */
  name: string;
  /** The decorated resource: the envelope refuses any other object (and a namespace on a cluster-scoped one). */
  object: { apiVersion: string; kind: string; clusterScoped?: boolean };
  customize(req: DecoratorCustomizeRequest, deps: HookDeps): RelatedRule[];
  sync(req: DecoratorRequest, deps: HookDeps): Promise<DecoratorResult>;
  /** Absent when the DecoratorController declares no finalize hook (then Metacontroller adds no finalizer). */
  finalize?(req: DecoratorRequest, deps: HookDeps): Promise<DecoratorFinalizeResult>;
}
