/** What the emulator's store holds, what it records of each hook call, and how a test or render configures it. */

import type { FastifyInstance } from "fastify";
import type { K8sObject } from "../../k8s/objects.js";
import type { ControllerComponent } from "./controllers.js";

export type Obj = K8sObject & { spec?: unknown; status?: Record<string, unknown>; data?: Record<string, string> };

export interface HookCall {
  hook: string;
  kind: string;
  parent: string;
  code: number;
  body: unknown;
  response: unknown;
}

export interface LoopOptions {
  app: FastifyInstance;
  /** Contract checks (tests): a child before it is applied, a status before it is written. */
  checkChild?: (child: Obj) => void;
  checkStatus?: (kind: string, status: Record<string, unknown>) => void;
  token?: string;
  /** Deployments report Available with all replicas ready (default true). */
  deploymentsAvailable?: boolean;
  /** Create one running Pod per Deployment replica; the port named "metrics" is rewritten by this. */
  agentPods?: { metricsPort: (deployment: Obj) => number | undefined };
  /**
   * Serve parents from an informer cache that can lag behind the last status write: the sync
   * right after one that wrote a parent's status is given the parent as that sync saw it, without
   * the status it wrote (Metacontroller never GETs the parent for a sync, and a related object's
   * change can enqueue it before the informer has delivered the write). The sync after that sees
   * the live object again, as an informer does once it catches up.
   */
  parentCacheLag?: boolean;
  /** Kustomize components installed (manifests/components): e.g. cert-manager adds Certificates as ingress children. */
  components?: ControllerComponent[];
}
