/**
 * The Tailnet's render among other clusters' sections of one Headscale policy (policy/sections.ts): what the
 * candidate keeps of it, whether the live policy holds it (plan.ts), and the render again against a fresher live
 * policy (act.ts: read, merge, write, read back).
 */

import type { ConditionInput } from "../../../conditions/condition.js";
import { TailnetCondition as C, TailnetReason as R } from "../../../conditions/tables/tailnet.js";
import type { HsPolicy } from "../../../headscale/types.js";
import { attachedMemo } from "../../../k8s/attached.js";
import { prettyPolicyText } from "../../../policy/merge.js";
import {
  type Contest,
  composeShared,
  type LiveShared,
  metaOf,
  parseShared,
  sharedPolicyText,
} from "../../../policy/sections.js";
import type { PolicyCandidate, TailnetRender } from "./compose.js";
import { tailnetConditions } from "./conditions.js";
import type { HeadscaleObservations } from "./observed.js";
import { sharedCandidate } from "./shared-render.js";
import { policyHash } from "./write.js";

const { cond } = tailnetConditions;

/** Parsed lines per cached live-policy object (the view hands out one object for its TTL). */
const parsed = attachedMemo<HsPolicy, LiveShared>("liveShared");
/**
 * The last text parsed, so each read of an unchanged policy (a new object every cache TTL) shares one parse. A
 * section line holds the generated policy of every object of its cluster: at 20,000 objects a parse is 4 MiB of
 * heap, and the compose memo's last render keeps the one it was made from (issue 36: two were live at once).
 */
let lastParsed: { text: string; value: LiveShared } | undefined;

/** The live policy's marker, base and section lines; undefined when none is stored. Read only: it is shared. */
export function liveShared(live: HsPolicy | null | undefined): LiveShared | undefined {
  if (!live) return undefined;
  return parsed.of(live, () => {
    if (lastParsed?.text !== live.policy) lastParsed = { text: live.policy, value: parseShared(live.policy) };
    return lastParsed.value;
  });
}

const liveOf = (hs: HeadscaleObservations | null) => (hs?.policy.ok ? hs.policy.value : undefined);

/**
 * Headscale holds the candidate: the same body and, when rendered among sections, the same base and section
 * lines (a change of first appearances or published names alone changes only the lines).
 */
export function liveHolds(hs: HeadscaleObservations | null, candidate: PolicyCandidate): boolean {
  const live = liveOf(hs);
  if (live === undefined || policyHash(live) !== candidate.hash) return false;
  if (!candidate.shared) return true;
  const l = liveShared(live);
  // the render's body without the operator's lines, while no other cluster shares the policy: an equivalent
  // text edited by hand (a comment, key order) is not rewritten; a marked text of an older version is (adoption)
  if (l && !l.marked && candidate.shared.others.length === 0) return true;
  return !!l?.marked && metaOf(l) === candidate.shared.meta;
}

/** This cluster's section line in the live policy ("" when it has none). */
export function liveOwnLine(live: HsPolicy | null | undefined, id: string): string {
  return liveShared(live)?.sections.find((s) => s.data.id === id)?.line ?? "";
}

/**
 * The candidate rendered again among the sections of a fresher live policy: this cluster's section as it was
 * rendered (same generated parts, same first appearances), every other line as it is stored now. A merge the
 * fresher lines make impossible (the other clusters removed the last rule: PolicyEmpty) is no render, so
 * nothing is written from lines that are no longer live.
 */
export function recompose(candidate: PolicyCandidate, live: HsPolicy | null): TailnetRender {
  const shared = candidate.shared;
  if (!shared) return { ok: true, candidate };
  const input = { ...shared.input, live: liveShared(live) };
  const s = composeShared(input);
  if (!s.merged.ok) return { ok: false, reason: s.merged.reason, message: s.merged.message };
  const { policy, canonical, hash } = s.merged;
  return { ok: true, candidate: { ...candidate, policy, canonical, hash, shared: sharedCandidate(s, input) } };
}

/** The text to PUT for a candidate: marker, the base and section lines, the body. */
export function candidateText(hash: string, policy: Record<string, unknown>, meta: string | undefined): string {
  return sharedPolicyText(hash, meta ?? "", prettyPolicyText(policy));
}

const MAX_LISTED = 5;

function listed(contests: readonly Contest[]): string {
  const say = contests.slice(0, MAX_LISTED).map((c) => `${c.kind} ${c.value} (${c.other})`);
  return `${say.join(", ")}${contests.length > MAX_LISTED ? ` and ${contests.length - MAX_LISTED} more` : ""}`;
}

/**
 * SharedPolicy: this cluster's section among the others of the live policy. Unknown without a render among
 * the live sections (the live policy unread, nothing rendered).
 */
export function sharedPolicyCondition(candidate: PolicyCandidate | undefined, rendered: boolean): ConditionInput {
  const type = C.SharedPolicy;
  const s = candidate?.shared;
  if (!s || !rendered) {
    return cond(type, "Unknown", R.CannotVerify, "not judged: no render among the live policy's cluster sections");
  }
  if (s.nameTaken) {
    return cond(
      type,
      "False",
      R.ClusterNameTaken,
      `the section ${s.own.id} belongs to another installation (Tailnet uid ${s.nameTaken.uid}); this cluster writes nothing: give it its own clusterName`,
    );
  }
  if (s.refused.length) {
    return cond(
      type,
      "False",
      R.ClaimsRefused,
      `refused here, held by an older cluster section: ${listed(s.refused)}; left out of this cluster's policy part and DNS records; rename them, or remove them from the other cluster`,
    );
  }
  if (s.contested.length) {
    return cond(
      type,
      "False",
      R.ClaimsContested,
      `claimed by a newer cluster section as well, refused there and kept here: ${listed(s.contested)}`,
    );
  }
  if (s.baseHeldBy) {
    return cond(
      type,
      "False",
      R.BaseHeldElsewhere,
      `the live base policy was written by ${s.baseHeldBy} and differs from this Tailnet's; it is kept: configure the base in one cluster only, or the same base in each`,
    );
  }
  const others = s.others.length ? `sections of ${s.others.join(", ")} kept as written` : "no other cluster's section";
  return cond(type, "True", R.Exclusive, `section ${s.own.id}: nothing it claims is claimed elsewhere; ${others}`);
}

/** The DNS records without the names an older cluster section holds (SharedPolicy=ClaimsRefused). */
export function withoutRefused<T extends { name: string }>(records: T[], candidate: PolicyCandidate | undefined): T[] {
  const refused = new Set(candidate?.shared?.refused.filter((c) => c.kind === "name").map((c) => c.value));
  return refused.size ? records.filter((r) => !refused.has(r.name)) : records;
}
