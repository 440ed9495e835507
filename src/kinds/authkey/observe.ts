/**
 * What a TailnetAuthKey sync reads (impure, never throws): its Tailnet and credentials (resolveWorkload, which
 * also judges the namespace), whether its tags are granted to the namespace (tenancy.ts admission, the rule every
 * workload's spec.tag follows) or its TailnetUser lets the namespace mint keys, the key Secret among its
 * children, and Headscale's pre-auth key list through the shared view. Every failure is an observation; a
 * refused object reads nothing from Headscale, so nothing is minted for it.
 */
import { API_VERSION } from "../../api/schemas.js";
import type { HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView, Obs } from "../../headscale/view.js";
import { findObject, isRecord, type K8sObject } from "../../k8s/objects.js";
import { admission, namespaceOf } from "../shared/tenancy.js";
import { resolveWorkload, type TailnetSettings } from "../shared/workload.js";
import type { HookDeps, HookRequest } from "../types.js";
import { type ObservedAuthKeySecret, observedAuthKeySecret } from "./children.js";
import type { AuthKeySpec } from "./spec.js";

export type AdmissionReason = "NamespaceNotAllowed" | "TagNotGranted" | "UserNotAllowed" | "UserNotFound";

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
}

export type AuthKeyObservation = AuthKeyReads | AuthKeyUnobserved;

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec => (isRecord(v) ? v : {});

/** The TailnetUser a user's key names, judged for this namespace and Tailnet: its Headscale id, or why not. */
export function userForKey(
  user: K8sObject | undefined,
  name: string,
  tailnet: string,
  namespace: string,
): { id: string } | { reason: "UserNotAllowed" | "UserNotFound"; message: string } {
  if (!user) return { reason: "UserNotFound", message: `TailnetUser ${name} not found` };
  const spec = rec(user.spec);
  if (rec(spec.tailnetRef).name !== tailnet) {
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
  const id = rec(user.status).id;
  if (typeof id !== "string" || !/^[0-9]+$/.test(id)) {
    return { reason: "UserNotFound", message: `TailnetUser ${name} has no Headscale user id yet` };
  }
  return { id };
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
  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok && (ctx.reason === "NoTailnet" || !ctx.settings)) return refuse(ctx.reason, ctx.message);
  if (!ctx.ok && ctx.reason !== "NoAPIKey") return refuse(ctx.reason, ctx.message);
  const settings = ctx.settings;
  if (!settings) return refuse("NoTailnet", "Tailnet not found");
  const namespace = req.parent.metadata.namespace ?? "";
  let userId: string | undefined;
  if (spec.user) {
    const user = findObject(req.related, API_VERSION, "TailnetUser", spec.user);
    const verdict = userForKey(user, spec.user, settings.name, namespace);
    if ("reason" in verdict) return refuse(verdict.reason, verdict.message);
    userId = verdict.id;
  } else {
    const ns = namespaceOf(req.related, namespace);
    for (const tag of spec.tags) {
      const refused = admission(settings.tenancy, namespace, ns, tag);
      if (refused) return refuse(refused.reason, refused.message);
    }
  }
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
