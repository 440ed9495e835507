/**
 * What a decorated object asks of its attachment through the workload annotations
 * (shared/annotations.ts), as both decorators read it: the annotations as written (trimmed, lists
 * split, the hostname defaulted to the object's name) and the checks on them. Each decorator refuses
 * with its own messages (docs/services.md, docs/ingress-class.md). Pure.
 */
import { DNS1035_PATTERN, DNS1123_SUBDOMAIN_PATTERN, TAG_PATTERN } from "../../api/schemas.js";
import type { K8sObject } from "../../k8s/objects.js";
import { WorkloadAnnotation } from "../shared/annotations.js";

/** The fields of a decorator's spec that shape the attachment's node. */
export interface Exposure {
  namespace: string;
  name: string;
  /** `tailnet.internal/tailnet`, or undefined for "the only Tailnet". */
  tailnet?: string;
  /** The tailnet node name. */
  hostname: string;
  tag?: string;
  allowFrom: string[];
}

/** The workload annotations as written, before any check. */
export interface ExposureAnnotations {
  tailnet?: string;
  tags: string[];
  allowFrom: string[];
  /** The hostname annotation, else the object's name. */
  hostname: string;
}

const DNS1035 = new RegExp(DNS1035_PATTERN);
const SUBDOMAIN = new RegExp(DNS1123_SUBDOMAIN_PATTERN);
const TAG = new RegExp(TAG_PATTERN);

export const isDns1035Label = (s: string) => DNS1035.test(s);
export const isTailnetName = (s: string) => SUBDOMAIN.test(s) && s.length <= 253;
export const isTag = (s: string) => TAG.test(s);

const list = (v: string | undefined) =>
  (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

export function exposureAnnotations(o: K8sObject): ExposureAnnotations {
  const a = o.metadata.annotations ?? {};
  const tailnet = a[WorkloadAnnotation.tailnet]?.trim() || undefined;
  return {
    ...(tailnet !== undefined ? { tailnet } : {}),
    tags: list(a[WorkloadAnnotation.tags]),
    allowFrom: list(a[WorkloadAnnotation.allowFrom]),
    hostname: a[WorkloadAnnotation.hostname]?.trim() || o.metadata.name,
  };
}
