// One object of `render`'s output (objects.ts builds them; gateway-api.ts adds the Gateway API's), in its own
// file so that the builders do not import each other.
import type { K8sObject } from "../k8s/objects.js";

export interface RenderedObject {
  kind: string;
  namespace?: string;
  name: string;
  ready: boolean;
  status: Record<string, unknown>;
  children: K8sObject[];
  events?: string[];
  policy?: { hash: string; rendered: string; diff: string };
  /** A decorated Service: the labels and annotations the operator wrote back on it. */
  written?: Record<string, string>;
}
