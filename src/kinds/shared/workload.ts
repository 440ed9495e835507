/**
 * What every workload kind (egress, ingress, site, gateway) resolves first from `related`: its
 * Tailnet, the Headscale connection republished in `tailnet-<name>-credentials`, and its effective
 * tag. Missing pieces are Ready reasons (NoTailnet, NoAPIKey) that come before the ordered blockers.
 */

import { API_VERSION } from "../../api/schemas.js";
import { CommonReason } from "../../conditions/tables/shared.js";
import type { HeadscaleConnection } from "../../headscale/view.js";
import { credentialsSecretName } from "../../k8s/labels.js";
import { findObject, type K8sObject } from "../../k8s/objects.js";
import { namespaceTerminating } from "../../pipeline/status.js";
import type { HookDeps, HookRequest } from "../../pipeline/types.js";
import { readTailnetCertificates, type TailnetCertificates } from "./certificates.js";
import { flatNamespacesOf } from "./dns-tenancy.js";
import { keptTagRefusal } from "./kept-tags.js";
import { secretValue } from "./secrets.js";
import { tailnetRefName } from "./tailnet-ref.js";
import { admitObject, explicitTag, objectDerivedTag, type Refusal, readTenancy, type Tenancy } from "./tenancy.js";

/** The Tailnet spec fields workload kinds read, with api.md's defaults applied. */
export interface TailnetSettings {
  name: string;
  url: string;
  tagPrefix: string;
  /** Lifetime of agent keys: spec.authKeyTTL, never past maxAuthKeyLifetimeSeconds. */
  authKeyTTLSeconds: number;
  /** spec.maxAuthKeyLifetime: no key the operator mints for this Tailnet lives longer (issue 31). */
  maxAuthKeyLifetimeSeconds: number;
  /** spec.maxAuthKeyLifetime as written, for messages. */
  maxAuthKeyLifetime: string;
  policyMode: "Apply" | "DryRun";
  allowedIngressSources: string[];
  allowedEgressTargets: string[];
  reservedNetworks: string[];
  baseDomain?: string;
  /** spec.tenancy.dns.flatNamespaces (dns-tenancy.ts); undefined: every namespace publishes flat names. */
  dnsFlatNamespaces?: string[];
  /** spec.tenancy: which namespaces may use the Tailnet, which explicit tags each may use. */
  tenancy: Tenancy;
  /** spec.certificates: the default cert-manager issuer and the ClusterIssuers ingresses may name (certificates.ts). */
  certificates?: TailnetCertificates;
}

export type WorkloadContext =
  | { ok: true; tailnet: K8sObject; settings: TailnetSettings; conn: HeadscaleConnection }
  | {
      ok: false;
      reason: typeof CommonReason.NoTailnet | typeof CommonReason.NoAPIKey | Refusal["reason"];
      message: string;
      tailnet?: K8sObject;
      settings?: TailnetSettings;
    };

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** The Tailnet reports HeadscaleCompatible=False: an incompatible server is never driven (api.md). */
export function tailnetIncompatible(tailnet: K8sObject): boolean {
  const conditions = (tailnet.status as { conditions?: unknown } | undefined)?.conditions;
  return (
    Array.isArray(conditions) &&
    conditions.some(
      (c: { type?: unknown; status?: unknown } | null) => c?.type === "HeadscaleCompatible" && c.status === "False",
    )
  );
}

/** Go-style duration (24h, 90m, 1h30m, 45s) in seconds; undefined when unparsable. */
export function parseDuration(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
  const units: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== consumed) return undefined;
    total += Number(m[1]) * (units[m[2]] ?? 0);
    consumed += m[0].length;
  }
  return consumed === text.length && consumed > 0 ? total : undefined;
}

function dnsTenancyOf(spec: unknown): { dnsFlatNamespaces?: string[] } {
  const flat = flatNamespacesOf(spec);
  return flat ? { dnsFlatNamespaces: flat } : {};
}

/** Tailnet spec.maxAuthKeyLifetime's default (the CRD's): 30 days. */
export const DEFAULT_MAX_KEY_LIFETIME = "720h";

export function tailnetSettings(tailnet: K8sObject): TailnetSettings {
  const spec = (tailnet.spec ?? {}) as Record<string, unknown>;
  const hs = (spec.headscale ?? {}) as Record<string, unknown>;
  const policy = (spec.policy ?? {}) as Record<string, unknown>;
  const dns = (spec.dns ?? {}) as Record<string, unknown>;
  const maxText = typeof spec.maxAuthKeyLifetime === "string" ? spec.maxAuthKeyLifetime : DEFAULT_MAX_KEY_LIFETIME;
  const maxSeconds = parseDuration(maxText) ?? (parseDuration(DEFAULT_MAX_KEY_LIFETIME) as number);
  return {
    name: tailnet.metadata.name,
    url: typeof hs.url === "string" ? hs.url : "",
    tagPrefix: typeof spec.tagPrefix === "string" ? spec.tagPrefix : "tag:k8s-",
    authKeyTTLSeconds: Math.min(parseDuration(spec.authKeyTTL as string | undefined) ?? 24 * 3600, maxSeconds),
    maxAuthKeyLifetimeSeconds: maxSeconds,
    maxAuthKeyLifetime: maxText,
    policyMode: policy.mode === "Apply" ? "Apply" : "DryRun",
    allowedIngressSources: strings(spec.allowedIngressSources),
    allowedEgressTargets: strings(spec.allowedEgressTargets),
    reservedNetworks: strings(spec.reservedNetworks),
    baseDomain: typeof dns.baseDomain === "string" && dns.baseDomain ? dns.baseDomain.replace(/\.$/, "") : undefined,
    ...dnsTenancyOf(spec),
    tenancy: readTenancy(spec),
    certificates: readTailnetCertificates(spec),
  };
}

/** Effective tag: spec.tag, else the derived tag (tenancy.ts: injective over namespace and name, kept across upgrades). */
export function effectiveTag(parent: K8sObject, tagPrefix: string): string {
  return explicitTag(parent) ?? objectDerivedTag(parent, tagPrefix);
}

/**
 * The Tailnet, its tenancy verdict and the connection. A sync is refused (NamespaceNotAllowed,
 * TagNotGranted) before any Headscale read, so nothing is minted; finalize passes `cleanup` and is never
 * refused: what it removes is only what the object minted (tenancy.ts nodesMintedBy).
 */
export function resolveWorkload(req: HookRequest, deps: HookDeps, opts: { cleanup?: boolean } = {}): WorkloadContext {
  const ref = tailnetRefName(req.parent);
  const tailnet = ref ? findObject(req.related, API_VERSION, "Tailnet", ref) : undefined;
  if (!ref || !tailnet) {
    return { ok: false, reason: CommonReason.NoTailnet, message: `Tailnet "${ref ?? ""}" not found` };
  }
  const settings = tailnetSettings(tailnet);
  const refused = opts.cleanup
    ? undefined
    : (terminating(req) ?? admitObject(req.parent, settings.tenancy, req.related));
  if (refused) return { ok: false, ...refused, tailnet, settings };
  const secretName = credentialsSecretName(ref);
  const secret = findObject(req.related, "v1", "Secret", secretName, deps.config.operatorNamespace);
  const apiKey = secretValue(secret, "apiKey");
  const url = secretValue(secret, "url") ?? settings.url;
  if (!secret || !apiKey || !url) {
    return {
      ok: false,
      reason: CommonReason.NoAPIKey,
      message: `Secret ${deps.config.operatorNamespace}/${secretName} ${secret ? "has no apiKey" : "not found yet"} (the Tailnet publishes it once its API key Secret exists)`,
      tailnet,
      settings,
    };
  }
  return { ok: true, tailnet, settings, conn: { url, apiKey, ca: secretValue(secret, "ca.crt") } };
}

/** resolveWorkload, or TagInUse for a derived tag another object kept (kept-tags.ts keptTagRefusal). */
export type AgentWorkloadContext =
  | WorkloadContext
  | { ok: false; reason: "TagInUse"; message: string; tailnet: K8sObject; settings: TailnetSettings };

/**
 * resolveWorkload for the kinds that mint under their derived tag (egress, ingress, gateway): also refused, before
 * any Headscale read, when that tag is one another object kept from before injective derivation (issue 31).
 */
export function resolveAgentWorkload(req: HookRequest, deps: HookDeps): AgentWorkloadContext {
  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok) return ctx;
  const kept = keptTagRefusal(req.parent, ctx.tailnet, ctx.settings.tagPrefix);
  return kept ? { ok: false, ...kept, tailnet: ctx.tailnet, settings: ctx.settings } : ctx;
}

/**
 * A namespace being deleted takes nothing new: the API server refuses every create there, so a key minted for a
 * child Secret would never be delivered (issue 31). Refused like a namespace the Tailnet does not select, which
 * also expires the keys the object minted (shared/withdraw.ts, the TailnetAuthKey's refusal).
 */
function terminating(req: HookRequest): Refusal | undefined {
  if (!namespaceTerminating(req)) return undefined;
  return {
    reason: "NamespaceNotAllowed",
    message: `namespace ${req.parent.metadata.namespace} is being deleted; nothing is minted or created in it`,
  };
}

/** Pods of this object (related, by owner-uid label), for /status scrapes. */
export function agentPods(req: HookRequest): K8sObject[] {
  const group = req.related["Pod.v1"] ?? {};
  return Object.values(group)
    .filter((p) => p?.metadata?.labels?.["tailnet.internal/owner-uid"] === req.parent.metadata.uid)
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}
