/**
 * The TailnetAuthKey's Headscale writes, each through the view (settling into an Outcome): expire the older
 * keys the plan retires (the Secret is proven to hold the newer one), and mint a key when planned — after a
 * fresh read of Headscale's key list shared with concurrent mints (freshKeyList), which finds a key another
 * replica minted for this object a moment ago (pendingKey) so no second key is minted for one renewal.
 * Logs name key ids and reasons, never a key.
 */
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { freshKeyList, type PendingAsk, pendingKeyFor } from "../../shared/pending-key.js";
import type { DeliveredKey } from "./children.js";
import type { AuthKeyObservation } from "./observe.js";
import type { AuthKeyPlan } from "./plan.js";
import type { AuthKeySpec } from "./spec.js";

export type MintOutcome =
  | { step: "minted"; key: DeliveredKey }
  | { step: "pending"; keyId: string }
  | { step: "failed"; error: string };

export interface AuthKeyOutcome {
  mint?: MintOutcome;
  /** Per retired key id: expired, or the error. */
  retired: { id: string; error?: string }[];
}

const who = (req: HookRequest) => `${req.parent.metadata.namespace}/${req.parent.metadata.name}`;

export async function actAuthKey(
  req: HookRequest,
  spec: AuthKeySpec,
  observed: AuthKeyObservation,
  plan: AuthKeyPlan,
  deps: Pick<HookDeps, "log">,
): Promise<AuthKeyOutcome> {
  if (!observed.ok) {
    // a refused object: the keys it minted are expired (plan.ts), nothing is minted
    if (!observed.withdraw || !plan.retire.length) return { retired: [] };
    const retired = await expire(observed.withdraw.view, plan.retire);
    deps.log.info({ authkey: who(req), keys: plan.retire, reason: observed.reason }, "refused: its keys expired");
    return { retired };
  }
  const { view, now } = observed;
  const retired = await expire(view, plan.retire);
  if (retired.length) deps.log.info({ authkey: who(req), keys: plan.retire }, "older pre-auth keys expired");
  if (!plan.mint) return { retired };
  if (plan.blocked) return { retired, mint: { step: "failed", error: plan.blocked } };
  // at most one undelivered key: a key that could not be expired first means no second one now
  const stuck = retired.find((r) => r.error);
  if (stuck) {
    return { retired, mint: { step: "failed", error: `key ${stuck.id} could not be expired first (${stuck.error})` } };
  }
  const mint = await mintKey(req, spec, observed, now);
  if (mint.step === "failed")
    deps.log.warn({ authkey: who(req), why: plan.mint, error: mint.error }, "pre-auth key not minted");
  if (mint.step === "minted")
    deps.log.info({ authkey: who(req), why: plan.mint, keyId: mint.key.id }, "pre-auth key minted");
  return { retired, mint };
}

async function expire(view: HeadscaleView, ids: readonly string[]): Promise<AuthKeyOutcome["retired"]> {
  const retired: AuthKeyOutcome["retired"] = [];
  for (const id of ids) {
    const outcome: Outcome<void> = await view.expirePreAuthKey(id);
    retired.push(outcome.ok ? { id } : { id, error: outcome.error.message });
  }
  return retired;
}

/** Finalize's writes: the keys expired in order, stopping at the first failure (retried by the next finalize). */
export async function expireInOrder(view: HeadscaleView, ids: readonly string[]): Promise<{ error?: string }> {
  for (const id of ids) {
    const outcome = await view.expirePreAuthKey(id);
    if (!outcome.ok) return { error: outcome.error.message };
  }
  return {};
}

async function mintKey(
  req: HookRequest,
  spec: AuthKeySpec,
  observed: Extract<AuthKeyObservation, { ok: true }>,
  now: Date,
): Promise<MintOutcome> {
  const { view, secret, userId } = observed;
  const born = new Date(req.parent.metadata.creationTimestamp ?? 0);
  const ask: PendingAsk = {
    want: {
      tags: spec.tags,
      reusable: spec.reusable,
      ephemeral: spec.ephemeral,
      notBefore: Number.isNaN(born.getTime()) ? new Date(0) : born,
      now,
      ...(userId ? { user: userId } : {}),
    },
    current: secret ? { keyId: secret.id, createdAt: secret.createdAt } : undefined,
  };
  const read = await freshKeyList(view, ask);
  if (!read.ok)
    return { step: "failed", error: `the key list could not be read before minting (${read.error.message})` };
  const pending = pendingKeyFor(read.value, ask);
  // another replica's key for this renewal, whose Secret is not observed yet: wait for it
  if (pending) return { step: "pending", keyId: pending.id };
  const expiresAt = new Date(now.getTime() + spec.expirySeconds * 1000);
  const created = await view.createPreAuthKey({
    aclTags: spec.tags,
    ...(userId ? { user: userId } : {}),
    reusable: spec.reusable,
    ephemeral: spec.ephemeral,
    expiration: expiresAt,
  });
  if (!created.ok) return { step: "failed", error: created.error.message };
  const renewAt = new Date(expiresAt.getTime() - spec.renewBeforeSeconds * 1000);
  return { step: "minted", key: { id: created.value.id, key: created.value.key, createdAt: now, expiresAt, renewAt } };
}
