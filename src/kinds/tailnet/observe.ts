/**
 * What a Tailnet sync observes in Headscale (I/O through the shared view cache; every failure is an
 * observation, nothing throws): health, nodes, users, the live policy, API keys, and the
 * non-mutating `POST /api/v1/policy/check` of the policy we would write.
 *
 * The check is memoised per connection and policy hash: a verdict (accepted, rejected, or the
 * endpoint missing) for the same text is reused for CHECK_MEMO_MS, so a steady Tailnet does not
 * POST a check on every resync. Transport and server failures are never memoised.
 */
import { asHeadscaleError, type Outcome } from "../../headscale/capabilities.js";
import type { HsApiKey, HsNode, HsPolicy, HsUser } from "../../headscale/types.js";
import type { HeadscaleView, Obs } from "../../headscale/view.js";

export interface HeadscaleObservations {
  health: Obs<{ databaseConnectivity: boolean }>;
  nodes: Obs<HsNode[]>;
  users: Obs<HsUser[]>;
  /** null: database mode with no policy stored yet. */
  policy: Obs<HsPolicy | null>;
  apiKeys: Obs<HsApiKey[]>;
}

export async function observeHeadscale(view: HeadscaleView): Promise<HeadscaleObservations> {
  const [health, nodes, users, policy, apiKeys] = await Promise.all([
    view.apiHealth(),
    view.nodes(),
    view.users(),
    view.policy(),
    view.apiKeys(),
  ]);
  return { health, nodes, users, policy, apiKeys };
}

/** How long a policy/check verdict for one text is reused. */
export const CHECK_MEMO_MS = 5 * 60 * 1000;
/** Bound on remembered verdicts per connection (renders of one Tailnet rarely alternate between more). */
const CHECK_MEMO_SIZE = 64;

const checkMemo = new WeakMap<HeadscaleView, Map<string, { outcome: Outcome<void>; expiresAt: number }>>();

/** A verdict worth remembering: accepted, rejected by the policy engine, or the endpoint is missing. */
function isVerdict(outcome: Outcome<void>): boolean {
  if (outcome.ok) return true;
  const e = outcome.error;
  return (
    e.kind === "http" &&
    (e.status === 400 || e.status === 404 || e.status === 405 || e.classification === "policyInvalid")
  );
}

/**
 * `POST /api/v1/policy/check` of `text` (whose canonical hash is `hash`), memoised per view. The
 * text is built only on a memo miss.
 */
export async function checkPolicy(
  view: HeadscaleView,
  hash: string,
  text: () => string,
  now: Date,
): Promise<Outcome<void>> {
  let memo = checkMemo.get(view);
  if (!memo) {
    memo = new Map();
    checkMemo.set(view, memo);
  }
  const hit = memo.get(hash);
  if (hit && now.getTime() < hit.expiresAt) return hit.outcome;
  let outcome: Outcome<void>;
  try {
    await view.client.policy.check(text());
    outcome = { ok: true, value: undefined };
  } catch (error) {
    outcome = { ok: false, error: asHeadscaleError(error, "POST /api/v1/policy/check") };
  }
  memo.delete(hash);
  if (isVerdict(outcome)) {
    memo.set(hash, { outcome, expiresAt: now.getTime() + CHECK_MEMO_MS });
    if (memo.size > CHECK_MEMO_SIZE) memo.delete(memo.keys().next().value as string);
  }
  return outcome;
}
