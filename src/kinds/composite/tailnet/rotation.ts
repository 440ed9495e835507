/**
 * API keys that renew themselves (spec.headscale.apiKeyRotation, opt-in), the pure part. Once the key in use
 * expires within renewBeforeSeconds, act creates a new key with it (POST /api/v1/apikey), verifies the new key
 * (an authenticated GET /api/v1/apikey that lists it) and decide publishes it in the Secret
 * tailnet-<name>-api-key, which observe prefers from then on. The old key is expired
 * (POST /api/v1/apikey/expire) only in a later sync that worked with the new key and saw it published in the
 * credentials Secret the workload kinds read. At every step one key works: a failed create or verification
 * keeps the old key, an outage after publishing keeps both, and a published key Headscale refuses falls back
 * to the key of spec.headscale.apiKeySecretRef (NOTES §1.4). No key ever reaches status, an Event or a log:
 * only its listed prefix (`hskey-api-<prefix>-***`).
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { toK8sTime } from "../../../conditions/condition.js";
import { TailnetReason as R } from "../../../conditions/tables/tailnet.js";
import type { HeadscaleError } from "../../../headscale/errors.js";
import type { HsApiKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { secretValue } from "../../shared/secrets.js";
import {
  API_KEY_EXPIRES_ANNOTATION,
  API_KEY_REPLACES_ANNOTATION,
  API_KEY_ROTATED_ANNOTATION,
  apiKeySecret,
  apiKeySecretName,
} from "./children.js";
import { NO_CALL, oneLine, tailnetConditions } from "./conditions.js";
import type { HeadscaleObservations } from "./observed.js";
import type { ApiKeyRotationSpec } from "./spec.js";

const { cond } = tailnetConditions;
export const ROTATION = "ApiKeyRotation";

/** The key the operator renewed, as its Secret (a child) holds it. */
export interface RenewedKey {
  apiKey: string;
  prefix: string;
  expiresAt?: string;
  rotatedAt?: string;
  /** Listed prefix of the key it replaces, until that one is expired. */
  replaces?: string;
}

/** Which key this sync uses, and what the observation says about the renewed one. */
export interface ApiKeyUse {
  source: "spec" | "renewed";
  renewed?: RenewedKey;
  /** The preferred key was refused (401 while /health passes), so the other one is used. */
  refused?: { source: "spec" | "renewed"; message: string };
  /** The credentials Secret observed among the children already carries the key in use. */
  published: boolean;
}

/** What act does for the rotation; decide says why nothing when there is none. */
export type RotationPlan = { kind: "create"; expiration: Date; replaces: string } | { kind: "expire"; prefix: string };

export type RotationOutcome =
  | { step: "created"; apiKey: string; prefix: string; expiresAt: string; rotatedAt: string; replaces: string }
  | { step: "createFailed"; error: HeadscaleError }
  | { step: "verifyFailed"; prefix: string; error: HeadscaleError; cleanedUp: boolean }
  | { step: "expired"; prefix: string; alreadyGone: boolean }
  | { step: "expireFailed"; prefix: string; error: HeadscaleError };

export type RotationStatus = {
  keyPrefix?: string;
  expiresAt?: string;
  renewAt?: string;
  rotatedAt?: string;
  replacesPrefix?: string;
};

/**
 * Our key among the listed ones. 0.28+ keys are `hskey-api-<prefix>-<secret>` with a prefix of exactly 12
 * base64url characters, which may themselves hold "-" and "_" (hscontrol/db/api_key.go), listed as
 * `hskey-api-<prefix>-***`; legacy keys are `<7-character prefix>.<secret>`, listed as `<prefix>***`
 * (hscontrol/types/api_key.go). The bare prefix is accepted too.
 */
export function findOwnApiKey(keys: readonly HsApiKey[], apiKey: string): HsApiKey | undefined {
  const modern = /^hskey-api-([A-Za-z0-9_-]{12})-/.exec(apiKey)?.[1];
  const legacy = !modern && apiKey.includes(".") ? apiKey.slice(0, apiKey.indexOf(".")) : undefined;
  const candidates = modern
    ? [`hskey-api-${modern}-***`, `hskey-api-${modern}`, modern]
    : legacy
      ? [`${legacy}***`, legacy]
      : [];
  return keys.find((k) => k.prefix !== "" && candidates.includes(k.prefix));
}
/** The listed form of a key's prefix: 0.28+ `hskey-api-<12>-***`, legacy `<7>***` (hscontrol/types/api_key.go). */
export function listedPrefix(apiKey: string): string {
  const modern = /^hskey-api-([A-Za-z0-9_-]{12})-/.exec(apiKey)?.[1];
  if (modern) return `hskey-api-${modern}-***`;
  return `${apiKey.includes(".") ? apiKey.slice(0, apiKey.indexOf(".")) : apiKey.slice(0, 7)}***`;
}

/** The prefix expire takes: the listed 0.28+ form as is, a legacy one without its `***`. */
export const expirePrefix = (listed: string) => (listed.startsWith("hskey-api-") ? listed : listed.replace(/\*+$/, ""));

export function readRenewedKey(children: K8sObject | undefined): RenewedKey | undefined {
  const apiKey = secretValue(children, "apiKey")?.trim();
  if (!children || !apiKey) return undefined;
  const a = (children.metadata.annotations ?? {}) as Record<string, string | undefined>;
  const text = (v: string | undefined) => (typeof v === "string" && v ? v : undefined);
  const replaces = text(a[API_KEY_REPLACES_ANNOTATION]);
  const expiresAt = text(a[API_KEY_EXPIRES_ANNOTATION]);
  const rotatedAt = text(a[API_KEY_ROTATED_ANNOTATION]);
  return {
    apiKey,
    prefix: listedPrefix(apiKey),
    ...(expiresAt ? { expiresAt } : {}),
    ...(rotatedAt ? { rotatedAt } : {}),
    ...(replaces ? { replaces } : {}),
  };
}

/** A timestamp Headscale lists as "never" or not at all. */
const when = (ts: string | null | undefined) => {
  if (!ts || ts.startsWith("0001-")) return undefined;
  const ms = Date.parse(ts);
  return Number.isNaN(ms) ? undefined : new Date(ms);
};

interface RotationContext {
  rotation: ApiKeyRotationSpec;
  hs: HeadscaleObservations | null;
  apiKey: string | undefined;
  use: ApiKeyUse;
  now: Date;
}

/** The key in use as listed, when Headscale listed the keys. */
function inUse(ctx: RotationContext): HsApiKey | undefined {
  const { hs, apiKey } = ctx;
  return hs?.apiKeys.ok && apiKey ? findOwnApiKey(hs.apiKeys.value, apiKey) : undefined;
}

/** Headscale answered this sync with the key in use: a write with it is meaningful. */
const keyWorks = (hs: HeadscaleObservations | null) => !!hs && hs.health.ok && hs.apiKeys.ok;

export function planRotation(ctx: RotationContext): RotationPlan | undefined {
  const { hs, use, rotation, now } = ctx;
  if (!keyWorks(hs) || !hs?.apiKeys.ok) return undefined;
  const renewed = use.renewed;
  if (use.source === "renewed" && renewed?.replaces) {
    // The old key goes only after the new one worked in this (later) sync and the workloads can read it.
    if (!use.published || renewed.replaces === renewed.prefix) return undefined;
    const old = hs.apiKeys.value.find((k) => k.prefix === renewed.replaces);
    const expiry = when(old?.expiration);
    if (!old || (expiry && expiry <= now)) return undefined;
    return { kind: "expire", prefix: renewed.replaces };
  }
  if (use.refused) return undefined;
  const current = inUse(ctx);
  const expiry = when(current?.expiration);
  if (!current || !expiry) return undefined;
  if (expiry.getTime() - now.getTime() > rotation.renewBeforeSeconds * 1000) return undefined;
  return {
    kind: "create",
    expiration: new Date(now.getTime() + rotation.expirationSeconds * 1000),
    replaces: current.prefix,
  };
}

/** The renewed key's Secret after this sync: published, rewritten without `replaces`, kept, or dropped. */
export function renewedKeyChild(
  tailnet: string,
  namespace: string,
  use: ApiKeyUse,
  outcome: RotationOutcome | undefined,
  enabled: boolean,
  replacedGone: boolean,
  specKeyWorks: boolean,
): K8sObject | undefined {
  if (outcome?.step === "created") {
    const { apiKey, prefix, expiresAt, rotatedAt, replaces } = outcome;
    return apiKeySecret({ tailnet, namespace, apiKey, prefix, expiresAt, rotatedAt, replaces });
  }
  const renewed = use.renewed;
  if (!renewed) return undefined;
  // Refused while the spec's key works: it is dropped, the next renewal starts from the spec's key.
  if (use.refused?.source === "renewed") return undefined;
  // Rotation switched off: dropped once the spec's key demonstrably works (never on a failed observation).
  if (!enabled && use.source === "spec" && specKeyWorks) return undefined;
  const done = outcome?.step === "expired" || replacedGone;
  return apiKeySecret({
    tailnet,
    namespace,
    apiKey: renewed.apiKey,
    prefix: renewed.prefix,
    expiresAt: renewed.expiresAt ?? "",
    rotatedAt: renewed.rotatedAt ?? "",
    ...(renewed.replaces && !done ? { replaces: renewed.replaces } : {}),
  });
}

/** The replaced key is no longer listed, or already expired: nothing is left to expire. */
export function replacedGone(hs: HeadscaleObservations | null, use: ApiKeyUse, now: Date): boolean {
  const replaces = use.source === "renewed" ? use.renewed?.replaces : undefined;
  if (!replaces || !hs?.apiKeys.ok || !hs.health.ok) return false;
  const old = hs.apiKeys.value.find((k) => k.prefix === replaces);
  const expiry = when(old?.expiration);
  return !old || (!!expiry && expiry <= now);
}

export interface RotationDecideContext extends RotationContext {
  tailnet: string;
  namespace: string;
  plan?: RotationPlan;
  outcome?: RotationOutcome;
}

const secretRef = (c: RotationDecideContext) => `Secret ${c.namespace}/${apiKeySecretName(c.tailnet)}`;

/** ApiKeyRotation after this sync. */
export function rotationCondition(c: RotationDecideContext): ConditionInput {
  const { outcome, use, hs } = c;
  const current = inUse(c);
  const currentName = current?.prefix ?? (c.apiKey ? listedPrefix(c.apiKey) : "the API key");
  if (outcome?.step === "created") {
    return cond(
      ROTATION,
      "True",
      R.Renewed,
      `created the API key ${outcome.prefix} (expires ${outcome.expiresAt}) with ${outcome.replaces}, verified it and published it in ${secretRef(c)}; ${outcome.replaces} is expired once a later sync has worked with the new key`,
    );
  }
  if (outcome?.step === "createFailed") {
    return cond(
      ROTATION,
      "False",
      R.CreateFailed,
      `${currentName} is due for renewal but creating a new key failed: ${oneLine(outcome.error.message)}; ${currentName} stays in use and the next sync tries again`,
    );
  }
  if (outcome?.step === "verifyFailed") {
    const cleanup = outcome.cleanedUp
      ? "it was expired again"
      : `expiring it failed too: expire it with "headscale apikeys expire --prefix ${outcome.prefix}"`;
    return cond(
      ROTATION,
      "False",
      R.VerifyFailed,
      `created the API key ${outcome.prefix} but it did not work (${oneLine(outcome.error.message)}), so it was not published and ${cleanup}; ${currentName} stays in use and the next sync tries again`,
    );
  }
  if (outcome?.step === "expired") {
    const how = outcome.alreadyGone ? "was already gone" : "was expired";
    return cond(
      ROTATION,
      "True",
      R.OldKeyExpired,
      `the previous API key ${outcome.prefix} ${how} after ${currentName} worked; ${currentName} (${secretRef(c)}) is in use`,
    );
  }
  if (outcome?.step === "expireFailed") {
    return cond(
      ROTATION,
      "False",
      R.ExpireFailed,
      `expiring the previous API key ${outcome.prefix} failed: ${oneLine(outcome.error.message)}; both keys work, ${currentName} is in use and the next sync tries again`,
    );
  }
  if (use.refused?.source === "renewed") {
    return cond(
      ROTATION,
      "False",
      R.NewKeyRejected,
      `Headscale refuses the renewed API key ${use.renewed?.prefix ?? ""} (${secretRef(c)}: ${oneLine(use.refused.message)}); the key of spec.headscale.apiKeySecretRef works and is used again, the operator's Secret is dropped and the next renewal starts from it`,
    );
  }
  if (!hs) return cond(ROTATION, "Unknown", R.CannotVerify, NO_CALL);
  if (!keyWorks(hs)) {
    const failed = [hs.health, hs.apiKeys].find((o) => !o.ok);
    const why = failed && !failed.ok ? oneLine(failed.error.message) : "Headscale did not answer";
    const pending =
      use.renewed?.replaces && use.source === "renewed" ? `; ${use.renewed.replaces} is not expired yet` : "";
    return cond(ROTATION, "Unknown", R.CannotVerify, `cannot tell whether the API key is due: ${why}${pending}`);
  }
  if (use.source === "renewed" && use.renewed?.replaces && !replacedGone(hs, use, c.now)) {
    return cond(
      ROTATION,
      "Unknown",
      R.AwaitingConfirmation,
      `${currentName} (${secretRef(c)}) works; the previous key ${use.renewed.replaces} is expired once the credentials Secret carries the new key`,
    );
  }
  const expiry = when(current?.expiration);
  if (!current || !expiry) {
    return cond(
      ROTATION,
      "Unknown",
      R.CannotVerify,
      `cannot tell when the API key expires: ${current ? `Headscale lists ${current.prefix} without an expiration` : "GET /api/v1/apikey does not list the key in use"}`,
    );
  }
  const renewAt = new Date(expiry.getTime() - c.rotation.renewBeforeSeconds * 1000);
  return cond(
    ROTATION,
    "True",
    R.NotDue,
    `${current.prefix} expires ${toK8sTime(expiry)}; a new key is created from ${toK8sTime(renewAt)} (spec.headscale.apiKeyRotation.renewBeforeSeconds before)`,
  );
}

/** status.apiKeyRotation: the key in use (by prefix), when it expires and is renewed, what it replaces. */
export function rotationStatus(c: RotationDecideContext, previous: RotationStatus | undefined): RotationStatus {
  const { outcome, use } = c;
  const at = (d: Date | undefined) => (d ? toK8sTime(d) : undefined);
  const renewAt = (expiresAt: string | undefined) => {
    const e = when(expiresAt);
    return e ? at(new Date(e.getTime() - c.rotation.renewBeforeSeconds * 1000)) : undefined;
  };
  const out = (s: RotationStatus): RotationStatus => {
    const r: RotationStatus = {};
    if (s.keyPrefix) r.keyPrefix = s.keyPrefix;
    if (s.expiresAt) r.expiresAt = s.expiresAt;
    const renew = renewAt(s.expiresAt);
    if (renew) r.renewAt = renew;
    if (s.rotatedAt) r.rotatedAt = s.rotatedAt;
    if (s.replacesPrefix) r.replacesPrefix = s.replacesPrefix;
    return r;
  };
  if (outcome?.step === "created") {
    return out({
      keyPrefix: outcome.prefix,
      expiresAt: outcome.expiresAt,
      rotatedAt: outcome.rotatedAt,
      replacesPrefix: outcome.replaces,
    });
  }
  const current = inUse(c);
  const renewed = use.source === "renewed" ? use.renewed : undefined;
  const done = outcome?.step === "expired" || replacedGone(c.hs, use, c.now);
  const expiresAt = at(when(current?.expiration)) ?? renewed?.expiresAt ?? previous?.expiresAt;
  return out({
    keyPrefix: current?.prefix ?? renewed?.prefix ?? (c.apiKey ? listedPrefix(c.apiKey) : previous?.keyPrefix),
    expiresAt,
    rotatedAt: renewed?.rotatedAt,
    replacesPrefix: renewed?.replaces && !done ? renewed.replaces : undefined,
  });
}
