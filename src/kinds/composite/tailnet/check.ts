/**
 * `POST /api/v1/policy/check`, memoised per connection and policy hash in its soft state
 * (soft-state.ts `checkVerdicts`): the observation's check of the render and the search for what Headscale refuses
 * (isolate.ts) share it.
 */
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { softStateOf } from "./soft-state.js";

/** How long a policy/check verdict for one text is reused. */
export const CHECK_MEMO_MS = 5 * 60 * 1000;
/** Bound on remembered verdicts per connection (renders of one Tailnet rarely alternate between more). */
const CHECK_MEMO_SIZE = 64;

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
 * `POST /api/v1/policy/check` of `text` (whose canonical hash is `hash`), memoised in the connection's soft
 * state (soft-state.ts). The text is built only on a memo miss.
 */
export async function checkPolicy(
  view: HeadscaleView,
  hash: string,
  text: () => string,
  now: Date,
): Promise<Outcome<void>> {
  const memo = softStateOf(view).checkVerdicts;
  const hit = memo.get(hash);
  if (hit && now.getTime() < hit.expiresAt) return hit.outcome;
  const outcome = await view.checkPolicy(text());
  memo.delete(hash);
  if (isVerdict(outcome)) {
    memo.set(hash, { outcome, expiresAt: now.getTime() + CHECK_MEMO_MS });
    if (memo.size > CHECK_MEMO_SIZE) memo.delete(memo.keys().next().value as string);
  }
  return outcome;
}
