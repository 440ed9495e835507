/**
 * When Headscale still refuses the merged policy (POST /api/v1/policy/check, after the operator's own checks
 * in policy/validate.ts left out what they can tell), find the objects responsible and leave them out, so
 * that everyone else's change is written (issue 31 item 4). Headscale 0.29 can test a policy without writing
 * it (hscontrol/grpcv1.go CheckPolicy runs the same SetPolicy validation and `tests` on a sandbox), so the
 * search only ever calls policy/check:
 *
 * - the base with every object's tags and no object's grants, routes or exit-node approvals must pass, else
 *   the base (or the Tailnet's tag owners) is at fault and no object is blamed;
 * - otherwise the contributions that carry anything (in render order) are searched for the shortest prefix
 *   Headscale refuses: its last one is responsible (binary search, ⌈log₂ n⌉ checks); it is left out (its tags
 *   stay) and the rest is checked again; repeated until Headscale accepts. A left-out object's tags stay
 *   owned, so another object's grant naming them is unaffected.
 *
 * Bounded: at most MAX_ISOLATION_CHECKS policy/check calls per sync (each verdict is memoised like every check,
 * so a resync costs memo hits), and the culprits of a render are remembered for CHECK_MEMO_MS in the
 * connection's soft state (soft-state.ts), so a steady Tailnet re-checks one policy instead of bisecting again.
 * Past the bound, or when a check fails for another reason than a refusal (transport, 5xx), nothing is left
 * out: PolicyRejected as before.
 * The result depends only on the inputs and Headscale's verdicts, never on the memo, so status is deterministic.
 */
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { Contribution } from "../../../policy/contribution.js";
import { combineContributions } from "../../../policy/generated.js";
import type { GeneratedPolicy } from "../../../policy/generated-types.js";
import { type MergeResult, mergePolicy, prettyPolicyText } from "../../../policy/merge.js";
import { composeShared } from "../../../policy/sections.js";
import { tagsOnly } from "../../../policy/validate.js";
import { CHECK_MEMO_MS, checkPolicy } from "./check.js";
import type { PolicyCandidate } from "./compose.js";
import { type LeftOut, leftOutOf } from "./left-out.js";
import { oneLine } from "./messages.js";
import { sharedCandidate } from "./shared-render.js";
import { softStateOf } from "./soft-state.js";

/** policy/check calls one sync may spend searching (16 objects' worth per culprit at 2,000 objects: ~11 each). */
export const MAX_ISOLATION_CHECKS = 40;

type MergeOk = Extract<MergeResult, { ok: true }>;

const refused = (o: Outcome<void>) => !o.ok && o.error.classification === "policyInvalid";
const keyOf = (c: Contribution) => `${c.owner.kind}/${c.owner.namespace}/${c.owner.name}`;

/** The candidate with `out` (contributions of `candidate.parts`) reduced to their tags; undefined if it does not render. */
function renderWithout(candidate: PolicyCandidate, out: ReadonlySet<Contribution>) {
  const { baseText, tagOwners, contributions } = candidate.parts;
  const merged = contributions.map((c) => (out.has(c) ? tagsOnly(c) : c));
  const collected = combineContributions(tagOwners, merged);
  const r = mergePolicy(baseText, collected.generated);
  return r.ok ? { r, merged, gen: collected.generated } : undefined;
}

/** The reduced render among the other clusters' sections, as the candidate was rendered (shared.ts). */
function amongSections(candidate: PolicyCandidate, rendered: { r: MergeOk; gen: GeneratedPolicy }) {
  if (!candidate.shared) return { r: rendered.r };
  const input = { ...candidate.shared.input, gen: rendered.gen };
  const s = composeShared(input);
  return s.merged.ok ? { r: s.merged, shared: sharedCandidate(s, input) } : undefined;
}

export interface Isolated {
  candidate: PolicyCandidate;
  check: Outcome<void>;
}

/**
 * The candidate without the contributions Headscale refuses it over, and the check that accepted it; undefined
 * when the refusal cannot be pinned on objects (the base alone is refused, a check failed, the bound was hit).
 */
export async function isolateRefused(
  view: HeadscaleView,
  candidate: PolicyCandidate,
  refusal: Outcome<void>,
  now: Date,
): Promise<Isolated | undefined> {
  let calls = 0;
  const check = async (out: ReadonlySet<Contribution>) => {
    const rendered = renderWithout(candidate, out);
    if (!rendered) return undefined;
    calls++;
    const { r } = rendered;
    const outcome = await checkPolicy(view, r.hash, () => prettyPolicyText(r.policy), now);
    return { outcome, rendered };
  };
  const suspects = candidate.parts.contributions.filter((c) => c.grants.length || c.routes.length || c.exitNode.length);
  const finish = (
    out: Set<Contribution>,
    culprits: { c: Contribution; message: string }[],
    accepted: Outcome<void>,
  ) => {
    const rendered = renderWithout(candidate, out);
    const among = rendered && amongSections(candidate, rendered);
    if (!rendered || !among) return undefined;
    const { merged } = rendered;
    const { r } = among;
    const found = leftOutOf(
      candidate.parts.contributions,
      [],
      culprits.map((x) => ({ contribution: x.c, message: x.message, reason: "RejectedByHeadscale" as const })),
    );
    const leftOut = mergeLeftOut(candidate.leftOut, found);
    return {
      candidate: {
        ...candidate,
        policy: r.policy,
        canonical: r.canonical,
        hash: r.hash,
        generated: r.generated,
        leftOut,
        parts: { ...candidate.parts, contributions: merged },
        ...(among.shared ? { shared: among.shared } : {}),
      },
      check: accepted,
    };
  };

  // a render seen before: its culprits, re-checked (a memo hit while the verdicts last)
  const known = softStateOf(view).isolations.get(candidate.hash);
  if (known && now.getTime() < known.expiresAt) {
    const byKey = new Map(suspects.map((c) => [keyOf(c), c]));
    const culprits = known.culprits.flatMap((k) => {
      const c = byKey.get(k.key);
      return c ? [{ c, message: k.message }] : [];
    });
    const out = new Set(culprits.map((x) => x.c));
    const again = await check(out);
    if (again?.outcome.ok) return finish(out, culprits, again.outcome);
  }

  const baseline = await check(new Set(suspects));
  if (!baseline?.outcome.ok) return undefined;
  const culprits: { c: Contribution; message: string }[] = [];
  const out = new Set<Contribution>();
  let remaining = suspects.slice();
  let error = refusal;
  while (remaining.length > 0) {
    // the shortest prefix of `remaining` Headscale refuses (the whole of it is refused, none of it passes)
    let lo = 0;
    let hi = remaining.length;
    let hiError = error;
    while (hi - lo > 1) {
      if (calls >= MAX_ISOLATION_CHECKS) return undefined;
      const mid = (lo + hi) >> 1;
      const probe = await check(new Set([...out, ...remaining.slice(mid)]));
      if (!probe) return undefined;
      if (refused(probe.outcome)) {
        hi = mid;
        hiError = probe.outcome;
      } else if (probe.outcome.ok) lo = mid;
      else return undefined;
    }
    const culprit = remaining[hi - 1];
    const detail = !hiError.ok ? oneLine(hiError.error.detail) : "";
    culprits.push({
      c: culprit,
      message: `Headscale rejects the policy with it (POST /api/v1/policy/check): ${detail}`,
    });
    out.add(culprit);
    remaining = remaining.filter((c) => c !== culprit);
    if (calls >= MAX_ISOLATION_CHECKS) return undefined;
    const rest = await check(out);
    if (!rest) return undefined;
    if (rest.outcome.ok) {
      remember(view, candidate.hash, culprits, now);
      return finish(out, culprits, rest.outcome);
    }
    if (!refused(rest.outcome)) return undefined;
    error = rest.outcome;
  }
  return undefined;
}

function remember(view: HeadscaleView, hash: string, culprits: { c: Contribution; message: string }[], now: Date) {
  const memo = softStateOf(view).isolations;
  memo.delete(hash);
  memo.set(hash, {
    culprits: culprits.map((x) => ({ key: keyOf(x.c), message: x.message })),
    expiresAt: now.getTime() + CHECK_MEMO_MS,
  });
  if (memo.size > 16) memo.delete(memo.keys().next().value as string);
}

/** Both lists' entries, one per object (a RejectedByHeadscale entry wins), in left-out.ts order. */
function mergeLeftOut(a: readonly LeftOut[], b: readonly LeftOut[]): LeftOut[] {
  const byKey = new Map<string, LeftOut>();
  for (const l of [...a, ...b]) {
    const key = `${l.kind}\u0000${l.namespace}\u0000${l.name}`;
    const seen = byKey.get(key);
    byKey.set(key, seen ? { ...l, message: `${seen.message}; ${l.message}` } : l);
  }
  return [...byKey.entries()].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)).map(([, l]) => l);
}
