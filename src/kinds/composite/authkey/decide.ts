/**
 * TailnetAuthKey decide (pure): the Secret child (the minted key, else the key it holds, rebuilt with today's
 * server URL and CA; a failed observation keeps it as observed), the conditions, and the status fields —
 * key id and dates, never the key. Ready blocks on admission, then on having a valid key; a failing renewal
 * while the key is still valid is told by RenewalDue (and alerted on), not by Ready.
 */

import { type ConditionInput, toK8sTime } from "../../../conditions/condition.js";
import { conditionsOf } from "../../../conditions/table.js";
import { AUTHKEY_REASONS, AuthKeyCondition as C, AuthKeyReason as R } from "../../../conditions/tables/authkey.js";
import type { HsPreAuthKey } from "../../../headscale/types.js";
import { findObject, reuseObserved } from "../../../k8s/objects.js";
import type { DecideInput, Decision } from "../../../pipeline/run.js";
import { recordedKeyIds } from "../../shared/tenancy.js";
import type { AuthKeyOutcome } from "./act.js";
import { authKeySecretChild, type DeliveredKey } from "./children.js";
import type { AuthKeyObservation, AuthKeyUnobserved } from "./observe.js";
import type { AuthKeyPlan } from "./plan.js";
import type { AuthKeySpec } from "./spec.js";

const { cond } = conditionsOf(AUTHKEY_REASONS);
type Cond = ConditionInput;

export interface AuthKeyDecision extends Decision {
  /** The delivered key's expiry, for the metric (undefined: no valid key). */
  expiresAt?: Date;
}

/** Next sync: at the renewal time (within 5 min), sooner while a renewal waits for its Secret. */
export const MAX_RESYNC_SECONDS = 300;

type AuthKeyDecideInput = DecideInput<AuthKeySpec, AuthKeyObservation, AuthKeyPlan, AuthKeyOutcome>;
type Observed = Extract<AuthKeyObservation, { ok: true }>;

/** The Secret as observed, kept as it is when there is no key to deliver (never dropped because Headscale refused). */
function keptSecret({ req, spec }: AuthKeyDecideInput) {
  const raw = findObject(req.children, "v1", "Secret", spec.secretName, req.parent.metadata.namespace);
  return raw && !raw.metadata.deletionTimestamp ? [reuseObserved(raw)] : [];
}

const subjectOf = (spec: AuthKeySpec) => (spec.user ? `user ${spec.user}` : spec.tags.join(", "));

export function decideAuthKey(input: AuthKeyDecideInput): AuthKeyDecision {
  const { observed } = input;
  if (!observed.ok) return decideRefused(input, observed);
  if (!observed.keys.ok) return decideUnlisted(input, observed, observed.keys.error.message);
  return decideListed(input, observed, observed.keys.value);
}

/** No Tailnet, no credentials, or not admitted: nothing evaluated; a refusal says what became of its keys. */
function decideRefused(input: AuthKeyDecideInput, observed: AuthKeyUnobserved): AuthKeyDecision {
  const { req, spec, plan, outcome } = input;
  const notEvaluated = observed.admitted ? (observed.reason as "NoAPIKey") : notEvaluatedReason(observed.reason);
  const refused = observed.reason !== "NoTailnet" && !observed.admitted;
  const message = refused ? `${observed.message}${withdrawn(observed, plan, outcome)}` : observed.message;
  const admitted: Cond =
    observed.reason === "NoTailnet"
      ? cond(C.Admitted, "Unknown", R.NoTailnet, message)
      : observed.admitted
        ? cond(
            C.Admitted,
            "True",
            R.Granted,
            `${subjectOf(spec)}: granted to namespace ${req.parent.metadata.namespace}`,
          )
        : cond(C.Admitted, "False", observed.reason as "TagNotGranted", message);
  const why = `not evaluated: ${message}`;
  const failed = outcome.retired.some((r) => r.error) || (refused && observed.withdraw?.keys.ok === false);
  return {
    children: keptSecret(input),
    conditions: [
      admitted,
      cond(C.Issued, "Unknown", notEvaluated, why),
      cond(C.RenewalDue, "Unknown", notEvaluated, why),
      cond(C.Expired, "Unknown", notEvaluated, why),
      cond(C.Ready, "False", observed.reason, message),
    ],
    fields: statusFields(undefined, undefined, plan, undefined),
    ...(failed ? { resyncAfterSeconds: 10 } : {}),
  };
}

function admittedCondition({ req, spec }: AuthKeyDecideInput, observed: Observed): Cond {
  return cond(
    C.Admitted,
    "True",
    R.Granted,
    spec.user
      ? `TailnetUser ${spec.user} lets namespace ${req.parent.metadata.namespace} mint keys (Headscale user ${observed.userId})`
      : `${subjectOf(spec)}: granted to namespace ${req.parent.metadata.namespace}`,
  );
}

/** Headscale's key list could not be read: nothing known about the key. */
function decideUnlisted(input: AuthKeyDecideInput, observed: Observed, error: string): AuthKeyDecision {
  const message = `Headscale's key list could not be read (${error})`;
  return {
    children: keptSecret(input),
    conditions: [
      admittedCondition(input, observed),
      cond(C.Issued, "Unknown", R.NotObserved, message),
      cond(C.RenewalDue, "Unknown", R.NotObserved, message),
      cond(C.Expired, "Unknown", R.NotObserved, message),
      cond(C.Ready, "False", R.NotObserved, message),
    ],
    fields: statusFields(undefined, undefined, input.plan, undefined),
    resyncAfterSeconds: 10,
  };
}

/** The key to deliver: the one minted now, else the Secret's current one, else one still valid while renewal failed. */
function deliveredKey({ plan, outcome }: AuthKeyDecideInput, observed: Observed) {
  const { now, secret } = observed;
  const minted = outcome.mint?.step === "minted" ? outcome.mint.key : undefined;
  // the Secret's key with its lifetime as Headscale lists it (plan.times), not as its annotations say
  const held = secret && plan.current ? { ...secret, ...(plan.times ?? {}) } : undefined;
  const current = held && !plan.mint ? held : undefined;
  // a key still valid while its replacement could not be minted (due, changed) stays delivered
  const stillValid = !current && held && plan.mint !== "revoked" && now < held.expiresAt ? held : undefined;
  const delivered: DeliveredKey | undefined = minted ?? current ?? stillValid;
  return { minted, delivered };
}

function decideListed(input: AuthKeyDecideInput, observed: Observed, listed: readonly HsPreAuthKey[]): AuthKeyDecision {
  const { req, spec, plan, outcome } = input;
  const { now, secret } = observed;
  const { minted, delivered } = deliveredKey(input, observed);
  // without a key to deliver the observed Secret is kept as it is: never dropped because Headscale refused
  const children = delivered
    ? [authKeySecretChild(req.parent, spec.secretName, delivered, observed.server)]
    : keptSecret(input);
  const mintError = outcome.mint?.step === "failed" ? outcome.mint.error : undefined;
  const pendingId = outcome.mint?.step === "pending" ? outcome.mint.keyId : undefined;
  const issued = issuedCondition(spec, delivered, pendingId, mintError);
  const secretExpired = secret && !minted && !delivered;
  const expired = expiredCondition(spec, plan, secretExpired ? secret : undefined, delivered);
  const renewal = renewalCondition(spec, plan, outcome, delivered, secret, minted, mintError, pendingId);
  const blocker = !delivered ? (secretExpired ? expired : issued) : undefined;
  const ready = blocker
    ? cond(C.Ready, "False", blocker.reason as "NotIssued", blocker.message)
    : cond(C.Ready, "True", R.Ready, issued.message);
  return {
    children,
    conditions: [admittedCondition(input, observed), issued, renewal, expired, ready],
    // only a key this object minted is recorded as its own, never one merely found in the Secret
    fields: statusFields(delivered, minted?.id ?? ownedCurrent(plan), plan, listed),
    resyncAfterSeconds: resyncAfter(now, delivered, renewal.status === "True" || !delivered),
    ...(delivered ? { expiresAt: delivered.expiresAt } : {}),
  };
}

function issuedCondition(
  spec: AuthKeySpec,
  delivered: DeliveredKey | undefined,
  pendingId: string | undefined,
  mintError: string | undefined,
): Cond {
  if (delivered) {
    return cond(
      C.Issued,
      "True",
      R.Issued,
      `key ${delivered.id} is in Secret ${spec.secretName}, valid until ${toK8sTime(delivered.expiresAt)}`,
    );
  }
  return cond(
    C.Issued,
    "False",
    R.NotIssued,
    pendingId
      ? `key ${pendingId}, minted for this object moments ago, is not in Secret ${spec.secretName} yet; waiting for it rather than minting a second key`
      : `no key could be minted: ${mintError ?? "nothing minted yet"}`,
  );
}

/** `expiredSecret`: the Secret's key when nothing is delivered in its place. */
function expiredCondition(
  spec: AuthKeySpec,
  plan: AuthKeyPlan,
  expiredSecret: DeliveredKey | undefined,
  delivered: DeliveredKey | undefined,
): Cond {
  if (!expiredSecret)
    return cond(
      C.Expired,
      "False",
      R.Valid,
      delivered ? `valid until ${toK8sTime(delivered.expiresAt)}` : "no key yet",
    );
  return cond(
    C.Expired,
    "True",
    R.Expired,
    plan.mint === "revoked"
      ? `key ${expiredSecret.id} in Secret ${spec.secretName} is no longer valid in Headscale and no new key could be minted`
      : `key ${expiredSecret.id} in Secret ${spec.secretName} expired at ${toK8sTime(expiredSecret.expiresAt)}`,
  );
}

/**
 * What a refusal did to the keys the object minted, in words that stay the same from one sync to the next (a
 * status that changes every sync loops): expired, or which could not be and why (retried).
 */
function withdrawn(observed: AuthKeyUnobserved, plan: AuthKeyPlan, outcome: AuthKeyOutcome): string {
  if (!plan.owned.size) return "";
  const failed = outcome.retired.filter((r) => r.error);
  if (failed.length) {
    return `; key(s) ${failed.map((r) => r.id).join(", ")} it minted could not be expired yet (${failed[0].error}); retried`;
  }
  const keys = observed.withdraw?.keys;
  if (!keys) return "; the keys it minted are not expired: Headscale's credentials are not observed";
  if (!keys.ok) return `; the keys it minted could not be listed to expire them (${keys.error.message}); retried`;
  return "; the keys it minted are expired";
}

function renewalCondition(
  spec: AuthKeySpec,
  plan: AuthKeyPlan,
  outcome: AuthKeyOutcome,
  delivered: DeliveredKey | undefined,
  secret: DeliveredKey | undefined,
  minted: DeliveredKey | undefined,
  mintError: string | undefined,
  pendingId: string | undefined,
): Cond {
  const renewing = plan.mint === "due" || plan.mint === "changed";
  if (renewing && minted) {
    return cond(
      C.RenewalDue,
      "True",
      R.Renewing,
      `key ${minted.id} published in Secret ${spec.secretName}; key ${secret?.id} is expired once the Secret is observed holding the new one`,
    );
  }
  if (renewing && pendingId) {
    return cond(
      C.RenewalDue,
      "True",
      R.Renewing,
      `waiting for key ${pendingId} to appear in Secret ${spec.secretName}`,
    );
  }
  if (renewing && mintError) {
    return cond(
      C.RenewalDue,
      "True",
      R.RenewalFailed,
      `key ${secret?.id} is due since ${secret ? toK8sTime(secret.renewAt) : ""} and expires at ${secret ? toK8sTime(secret.expiresAt) : ""}; no new key could be minted: ${mintError}`,
    );
  }
  const failed = outcome.retired.filter((r) => r.error);
  if (failed.length) {
    return cond(
      C.RenewalDue,
      "True",
      R.Renewing,
      `older key(s) ${failed.map((r) => r.id).join(", ")} could not be expired yet (${failed[0].error}); retried`,
    );
  }
  const done = outcome.retired.length
    ? `renewed: older key(s) ${outcome.retired.map((r) => r.id).join(", ")} expired; `
    : "";
  return cond(
    C.RenewalDue,
    "False",
    R.NotDue,
    delivered ? `${done}next renewal at ${toK8sTime(delivered.renewAt)}` : `${done}no key to renew`,
  );
}

function notEvaluatedReason(reason: string): "NoTailnet" | "NotAdmitted" {
  return reason === "NoTailnet" ? "NoTailnet" : "NotAdmitted";
}

const ownedCurrent = (plan: AuthKeyPlan) =>
  plan.current && plan.owned.has(plan.current.id) ? plan.current.id : undefined;

function statusFields(
  key: DeliveredKey | undefined,
  recordId: string | undefined,
  plan: AuthKeyPlan,
  listed: readonly HsPreAuthKey[] | undefined,
): Record<string, unknown> {
  return {
    ...(key ? { keyId: key.id, expiresAt: toK8sTime(key.expiresAt), renewAt: toK8sTime(key.renewAt) } : {}),
    preAuthKeyIds: recordedKeyIds(plan.owned, recordId, listed ? [] : undefined, listed),
  };
}

function resyncAfter(now: Date, key: DeliveredKey | undefined, soon: boolean): number {
  if (soon || !key) return 10;
  const until = Math.ceil((key.renewAt.getTime() - now.getTime()) / 1000);
  return Math.max(1, Math.min(MAX_RESYNC_SECONDS, until));
}
