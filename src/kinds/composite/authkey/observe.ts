/**
 * What a TailnetAuthKey sync reads (impure, never throws): its Tailnet and credentials (resolveWorkload, which
 * also judges the namespace), whether its tags are granted to the namespace (tenancy.ts admission, the rule every
 * workload's spec.tag follows) or its TailnetUser lets the namespace mint keys, the key Secret among its
 * children, and Headscale's pre-auth key list through the shared view. Every failure is an observation; a
 * refused object reads nothing from Headscale, so nothing is minted for it.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { Obs } from "../../../headscale/errors.js";
import type { HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { findObject, type K8sObject, recordOf } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { statusKeyIds } from "../../shared/authkey.js";
import { admission, namespaceOf } from "../../shared/tenancy.js";
import { resolveWorkload, type TailnetSettings } from "../../shared/workload.js";
import { type ObservedAuthKeySecret, observedAuthKeySecret } from "./children.js";
import type { AuthKeySpec } from "./spec.js";

export type AdmissionReason =
  | "NamespaceNotAllowed"
  | "TagNotGranted"
  | "UserNotAllowed"
  | "UserNotFound"
  | "ExpiryTooLong"
  | "SecretNotOwned";

interface Observed {
  /** The clock of this sync (plan, act and decide use the same instant). */
  now: Date;
  /** The key Secret among the children, parsed (undefined: none yet, or not readable). */
  secret?: ObservedAuthKeySecret;
}

export interface AuthKeyReads extends Observed {
  ok: true;
  settings: TailnetSettings;
  /** What the Secret delivers besides the key: the login server (Tailnet spec.headscale.url) and the CA. */
  server: { url: string; ca?: string };
  /** The Headscale user id of spec.user (a user's key). */
  userId?: string;
  /** Where act writes (never read by decide). */
  view: HeadscaleView;
  keys: Obs<HsPreAuthKey[]>;
}

export interface AuthKeyUnobserved extends Observed {
  ok: false;
  reason: "NoTailnet" | "NoAPIKey" | AdmissionReason;
  message: string;
  /** Admission was judged and passed (only NoAPIKey comes after it). */
  admitted: boolean;
  /**
   * A refused object's keys, read to expire the ones it minted (a withdrawn grant bounds them): only when it
   * records or holds a key and Headscale is reachable.
   */
  withdraw?: { view: HeadscaleView; keys: Obs<HsPreAuthKey[]> };
}

export type AuthKeyObservation = AuthKeyReads | AuthKeyUnobserved;

/** The TailnetUser a user's key names, judged for this namespace and Tailnet: its Headscale id, or why not. */
export function userForKey(
  user: K8sObject | undefined,
  name: string,
  tailnet: string,
  namespace: string,
): { id: string } | { reason: "UserNotAllowed" | "UserNotFound"; message: string } {
  if (!user) return { reason: "UserNotFound", message: `TailnetUser ${name} not found` };
  const spec = recordOf(user.spec);
  if (recordOf(spec.tailnetRef).name !== tailnet) {
    return { reason: "UserNotFound", message: `TailnetUser ${name} belongs to another Tailnet than ${tailnet}` };
  }
  const allowed = Array.isArray(spec.authKeyNamespaces) ? spec.authKeyNamespaces : [];
  if (!allowed.includes(namespace)) {
    return {
      reason: "UserNotAllowed",
      message: `TailnetUser ${name} does not list namespace ${namespace} in spec.authKeyNamespaces; nothing is minted for it`,
    };
  }
  // status is written by the operator only (editors cannot write it), so the id is the user's own
  const id = recordOf(user.status).id;
  if (typeof id !== "string" || !/^[0-9]+$/.test(id)) {
    return { reason: "UserNotFound", message: `TailnetUser ${name} has no Headscale user id yet` };
  }
  return { id };
}

/**
 * The Secret spec.secretName names, when it exists and is not this object's (no controller reference to it):
 * Metacontroller would fail to create it (AlreadyExists) on every sync and a key minted for it would never be
 * delivered, so nothing is minted (issue 31). Read from the related objects: children list only what we own.
 */
export function foreignSecret(req: HookRequest, secretName: string): string | undefined {
  const ns = req.parent.metadata.namespace ?? "";
  const found = findObject(req.related, "v1", "Secret", secretName, ns);
  if (!found) return undefined;
  const ours = (found.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === req.parent.metadata.uid);
  if (ours) return undefined;
  return `Secret ${ns}/${secretName} exists and is not this TailnetAuthKey's (no controller reference to it); nothing is minted — name another spec.secretName or delete that Secret`;
}

/** Why this object may not mint (pure, given its Tailnet): its user or tags, its lifetime, its Secret. */
function admissionOf(
  req: HookRequest,
  spec: AuthKeySpec,
  settings: TailnetSettings,
): { reason: AdmissionReason; message: string } | { userId?: string } {
  const namespace = req.parent.metadata.namespace ?? "";
  let userId: string | undefined;
  if (spec.user) {
    const user = findObject(req.related, API_VERSION, "TailnetUser", spec.user);
    const verdict = userForKey(user, spec.user, settings.name, namespace);
    if ("reason" in verdict) return verdict;
    userId = verdict.id;
  } else {
    const ns = namespaceOf(req.related, namespace);
    for (const tag of spec.tags) {
      const refused = admission(settings.tenancy, namespace, ns, tag);
      if (refused) return refused;
    }
  }
  if (spec.expirySeconds > settings.maxAuthKeyLifetimeSeconds) {
    return {
      reason: "ExpiryTooLong",
      message: `spec.expiry ${spec.expiry} is longer than the Tailnet's spec.maxAuthKeyLifetime ${settings.maxAuthKeyLifetime}; nothing is minted`,
    };
  }
  const foreign = foreignSecret(req, spec.secretName);
  if (foreign) return { reason: "SecretNotOwned", message: foreign };
  return userId ? { userId } : {};
}

/** A refused object's key list, read only when it may own a key (recorded, or a Secret it holds). */
async function withdrawal(req: HookRequest, deps: HookDeps, holds: boolean): Promise<AuthKeyUnobserved["withdraw"]> {
  if (!holds && !statusKeyIds(req.parent).length) return undefined;
  // the connection without admission: what it removes is only what the object minted (plan.ts ownership)
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) return undefined;
  const view = deps.views.view(ctx.conn);
  return { view, keys: await view.preAuthKeys() };
}

export async function observeAuthKey(req: HookRequest, spec: AuthKeySpec, deps: HookDeps): Promise<AuthKeyObservation> {
  const now = deps.now();
  const secret = observedAuthKeySecret(req.children, req.parent, spec.secretName);
  const base = { now, ...(secret ? { secret } : {}) };
  const refuse = (reason: AuthKeyUnobserved["reason"], message: string, admitted = false): AuthKeyUnobserved => ({
    ok: false,
    reason,
    message,
    admitted,
    ...base,
  });
  const refuseAndWithdraw = async (reason: AdmissionReason, message: string): Promise<AuthKeyUnobserved> => {
    const withdraw = await withdrawal(req, deps, secret !== undefined);
    return { ...refuse(reason, message), ...(withdraw ? { withdraw } : {}) };
  };
  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok && (ctx.reason === "NoTailnet" || !ctx.settings)) return refuse(ctx.reason, ctx.message);
  if (!ctx.ok && ctx.reason !== "NoAPIKey" && ctx.reason !== "NoTailnet") {
    return refuseAndWithdraw(ctx.reason, ctx.message);
  }
  const settings = ctx.settings;
  if (!settings) return refuse("NoTailnet", "Tailnet not found");
  const admitted = admissionOf(req, spec, settings);
  if ("reason" in admitted) return refuseAndWithdraw(admitted.reason, admitted.message);
  const userId = admitted.userId;
  if (!ctx.ok) return refuse(ctx.reason, ctx.message, true);
  const view = deps.views.view(ctx.conn);
  const keys = await view.preAuthKeys();
  return {
    ok: true,
    ...base,
    settings,
    // the URL machines log in to is the Tailnet's (as agents get it), not necessarily the operator's API URL
    server: { url: settings.url || ctx.conn.url, ...(ctx.conn.ca ? { ca: ctx.conn.ca } : {}) },
    ...(userId ? { userId } : {}),
    view,
    keys,
  };
}
