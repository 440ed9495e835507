/**
 * The Tailnet's children, all in the operator namespace and labelled `tailnet.internal/tailnet`:
 * the rendered policy, the DNS records file for Headscale's `dns.extra_records_path`, and the
 * connection Secret the workload kinds read by name. One builder per child.
 */
import {
  credentialsSecretName,
  dnsRecordsConfigMapName,
  MANAGED_BY,
  policyConfigMapName,
  TAILNET_LABEL,
  truncateLabel,
} from "../../../k8s/labels.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { GeneratedCounts } from "../../../policy/merge.js";
import { b64 } from "../../shared/secrets.js";
import type { DnsRecord } from "./compose.js";

export const POLICY_HASH_ANNOTATION = "tailnet.internal/policy-hash";
export const GENERATED_ANNOTATION_PREFIX = "tailnet.internal/generated-";

export function tailnetLabels(tailnet: string, component: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": "tailnet-operator",
    "app.kubernetes.io/component": component,
    "app.kubernetes.io/managed-by": MANAGED_BY,
    [TAILNET_LABEL]: truncateLabel(tailnet),
  };
}

export interface PolicyConfigMapOptions {
  tailnet: string;
  namespace: string;
  /** Compact canonical JSON: `sha256sum policy.json` equals the hash. */
  canonical: string;
  hash: string;
  generated: GeneratedCounts;
}

export function policyConfigMap(o: PolicyConfigMapOptions): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: policyConfigMapName(o.tailnet),
      namespace: o.namespace,
      labels: tailnetLabels(o.tailnet, "policy"),
      annotations: {
        [POLICY_HASH_ANNOTATION]: o.hash,
        [`${GENERATED_ANNOTATION_PREFIX}tags`]: String(o.generated.tags),
        [`${GENERATED_ANNOTATION_PREFIX}grants`]: String(o.generated.grants),
        [`${GENERATED_ANNOTATION_PREFIX}routes`]: String(o.generated.routes),
      },
    },
    data: { "policy.json": o.canonical },
  };
}

export const livePolicyConfigMapName = (tailnet: string) => `tailnet-${tailnet}-live-policy`;
export const LIVE_POLICY_KEY = "policy.hujson";

/**
 * The live policy, verbatim, while the operator refuses to replace a policy it did not write (AdoptionRefused):
 * the text to put into a base ConfigMap. Dropped once the refusal is over.
 */
export function livePolicyConfigMap(o: { tailnet: string; namespace: string; text: string; hash: string }): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: livePolicyConfigMapName(o.tailnet),
      namespace: o.namespace,
      labels: tailnetLabels(o.tailnet, "live-policy"),
      annotations: { [POLICY_HASH_ANNOTATION]: o.hash },
    },
    data: { [LIVE_POLICY_KEY]: o.text },
  };
}

export interface DnsRecordsConfigMapOptions {
  tailnet: string;
  namespace: string;
  records: readonly DnsRecord[];
}

/** One record per line: readable, and valid JSON for Headscale. */
export function recordsJson(records: readonly DnsRecord[]): string {
  if (records.length === 0) return "[]\n";
  return `[\n${records.map((r) => `  ${JSON.stringify({ name: r.name, type: r.type, value: r.value })}`).join(",\n")}\n]\n`;
}

export function dnsRecordsConfigMap(o: DnsRecordsConfigMapOptions): K8sObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: dnsRecordsConfigMapName(o.tailnet),
      namespace: o.namespace,
      labels: tailnetLabels(o.tailnet, "dns-records"),
    },
    data: { "records.json": recordsJson(o.records) },
  };
}

export interface CredentialsSecretOptions {
  tailnet: string;
  namespace: string;
  url: string;
  apiKey: string;
  ca?: string;
}

export function credentialsSecret(o: CredentialsSecretOptions): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: credentialsSecretName(o.tailnet),
      namespace: o.namespace,
      labels: tailnetLabels(o.tailnet, "credentials"),
    },
    type: "Opaque",
    data: { url: b64(o.url), apiKey: b64(o.apiKey), ...(o.ca ? { "ca.crt": b64(o.ca) } : {}) },
  };
}

/** The Secret holding the API key the operator renewed (spec.headscale.apiKeyRotation); preferred once it exists. */
export const apiKeySecretName = (tailnet: string) => `tailnet-${tailnet}-api-key`;
/** The key's listed prefix (`hskey-api-<prefix>-***`): what `headscale apikeys list` shows, never the secret. */
export const API_KEY_PREFIX_ANNOTATION = "tailnet.internal/api-key-prefix";
export const API_KEY_EXPIRES_ANNOTATION = "tailnet.internal/api-key-expires-at";
export const API_KEY_ROTATED_ANNOTATION = "tailnet.internal/api-key-rotated-at";
/** The listed prefix of the key this one replaces, until the operator has expired it. */
export const API_KEY_REPLACES_ANNOTATION = "tailnet.internal/api-key-replaces";

export interface ApiKeySecretOptions {
  tailnet: string;
  namespace: string;
  apiKey: string;
  prefix: string;
  expiresAt: string;
  rotatedAt: string;
  replaces?: string;
}

export function apiKeySecret(o: ApiKeySecretOptions): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: apiKeySecretName(o.tailnet),
      namespace: o.namespace,
      labels: tailnetLabels(o.tailnet, "api-key"),
      annotations: {
        [API_KEY_PREFIX_ANNOTATION]: o.prefix,
        [API_KEY_EXPIRES_ANNOTATION]: o.expiresAt,
        [API_KEY_ROTATED_ANNOTATION]: o.rotatedAt,
        ...(o.replaces ? { [API_KEY_REPLACES_ANNOTATION]: o.replaces } : {}),
      },
    },
    type: "Opaque",
    data: { apiKey: b64(o.apiKey) },
  };
}
