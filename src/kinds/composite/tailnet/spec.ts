/**
 * The Tailnet's own spec, read once and typed (the pipeline's `spec` stage); what it names in `related` is
 * read by observe (inputs.ts). `tailnetSpecProblem` is the kind module's `specProblem`: what the CRD schema
 * cannot catch, checked by the hook before sync runs.
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { parseCidr, parseCidrOrIp } from "../../../net/cidr.js";
import { isValidTag } from "../../../policy/contribution.js";
import { type TailnetSettings, tailnetSettings } from "../../shared/workload.js";

export interface ObjectRef {
  namespace: string;
  name: string;
  key: string;
}

/** spec.headscale.apiKeyRotation when enabled: renew the API key before it expires (rotation.ts). */
export interface ApiKeyRotationSpec {
  /** Lifetime of each new key. */
  expirationSeconds: number;
  /** A new key is created once the one in use expires within this many seconds. */
  renewBeforeSeconds: number;
}

/** 90 days, as `headscale apikeys create` without --expiration. */
export const DEFAULT_KEY_EXPIRATION_SECONDS = 90 * 24 * 3600;
/** 14 days: a week ahead of TailnetAPIKeyExpiringSoon's default 7-day window. */
export const DEFAULT_RENEW_BEFORE_SECONDS = 14 * 24 * 3600;

export interface TailnetSpec {
  name: string;
  settings: TailnetSettings;
  /** Tailnet.spec.policy.tagOwners. */
  tagOwners: string[];
  /** Tailnet.spec.policy.replaceLivePolicy: without a base, a live policy the operator did not write may go. */
  replaceLivePolicy: boolean;
  /** Tailnet.spec.dns.splitDNS.domains; [] when split DNS is not requested. */
  splitDNSDomains: string[];
  /** spec.headscale.apiKeySecretRef (key defaulted to apiKey); undefined when it names no Secret. */
  apiKeyRef?: ObjectRef;
  /** spec.headscale.caSecretRef (key defaulted to ca.crt). */
  caRef?: ObjectRef;
  /** spec.policy.baseConfigMapRef (key defaulted to policy.hujson). */
  baseRef?: ObjectRef;
  /** spec.headscale.apiKeyRotation; undefined unless enabled. */
  apiKeyRotation?: ApiKeyRotationSpec;
}

type Spec = Record<string, unknown>;
const record = (v: unknown): Spec => (v && typeof v === "object" && !Array.isArray(v) ? (v as Spec) : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** A `{namespace, name, key}` reference with the key defaulted; undefined when namespace or name is missing. */
export function refOf(value: unknown, defaultKey: string): ObjectRef | undefined {
  const r = record(value);
  if (typeof r.namespace !== "string" || !r.namespace || typeof r.name !== "string" || !r.name) return undefined;
  return { namespace: r.namespace, name: r.name, key: typeof r.key === "string" && r.key ? r.key : defaultKey };
}

export function readTailnetSpec(parent: K8sObject): TailnetSpec {
  const spec = record(parent.spec);
  const hs = record(spec.headscale);
  const policy = record(spec.policy);
  return {
    name: parent.metadata.name,
    settings: tailnetSettings(parent),
    tagOwners: strings(policy.tagOwners),
    replaceLivePolicy: policy.replaceLivePolicy === true,
    splitDNSDomains: [...new Set(strings(record(record(spec.dns).splitDNS).domains))].sort(),
    apiKeyRef: refOf(hs.apiKeySecretRef, "apiKey"),
    caRef: refOf(hs.caSecretRef, "ca.crt"),
    baseRef: refOf(policy.baseConfigMapRef, "policy.hujson"),
    ...rotationOf(hs.apiKeyRotation),
  };
}

function rotationOf(value: unknown): { apiKeyRotation?: ApiKeyRotationSpec } {
  const r = record(value);
  if (r.enabled !== true) return {};
  const seconds = (v: unknown, d: number) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : d);
  return {
    apiKeyRotation: {
      expirationSeconds: seconds(r.expirationSeconds, DEFAULT_KEY_EXPIRATION_SECONDS),
      renewBeforeSeconds: seconds(r.renewBeforeSeconds, DEFAULT_RENEW_BEFORE_SECONDS),
    },
  };
}

/**
 * A Tailnet spec problem the CRD schema cannot express (api.md "Invalid input"), naming the field;
 * undefined when none. The server already checks reservedNetworks; this adds allowedEgressTargets,
 * whose entries the policy collector would otherwise silently ignore.
 */
export function tailnetSpecProblem(parent: K8sObject): string | undefined {
  const rotation = readTailnetSpec(parent).apiKeyRotation;
  if (rotation && rotation.renewBeforeSeconds >= rotation.expirationSeconds) {
    // Every new key would be due at once: the operator would create keys on every sync.
    return `spec.headscale.apiKeyRotation.renewBeforeSeconds (${rotation.renewBeforeSeconds}) must be less than expirationSeconds (${rotation.expirationSeconds})`;
  }
  const targets = record(parent.spec).allowedEgressTargets;
  if (!Array.isArray(targets)) return undefined;
  for (const [i, raw] of targets.entries()) {
    const v = String(raw).trim();
    if (v.startsWith("tag:")) {
      if (!isValidTag(v)) return `spec.allowedEgressTargets[${i}]: ${JSON.stringify(v)} is not a valid tag`;
      continue;
    }
    if (v.includes("/")) {
      const r = parseCidr(v);
      if (!r.ok) return `spec.allowedEgressTargets[${i}]: ${r.message}`;
      continue;
    }
    if (!parseCidrOrIp(v)) {
      return `spec.allowedEgressTargets[${i}]: ${JSON.stringify(v)} is neither a CIDR, an IP address nor a tag`;
    }
  }
  return undefined;
}
