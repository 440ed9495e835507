/**
 * What a render leaves out of the policy, per object (issue 31 item 4): the values and contributions
 * Headscale would refuse the whole policy over, so that everyone else's change is still written. The list
 * goes into the Tailnet's status.policy.leftOut (sorted: status is deterministic), where each object's own
 * sync reads it (src/kinds/shared/policy-left-out.ts).
 *
 * Reasons: InvalidContribution — the operator's own checks before the merge (generated.ts validators,
 * policy/validate.ts); RejectedByHeadscale — Headscale's POST /api/v1/policy/check refused the policy with
 * the object's contribution and accepted it without (isolate.ts).
 */
import { parseCidr } from "../../../net/cidr.js";
import type { Contribution, ContributionOwner } from "../../../policy/contribution.js";
import type { InvalidInput } from "../../../policy/generated-types.js";

export type LeftOutReason = "InvalidContribution" | "RejectedByHeadscale";

export interface LeftOut {
  kind: "TailnetEgress" | "TailnetIngress" | "TailnetSite" | "TailnetGateway";
  namespace: string;
  name: string;
  reason: LeftOutReason;
  message: string;
}

const KINDS: Record<ContributionOwner["kind"], LeftOut["kind"]> = {
  egress: "TailnetEgress",
  ingress: "TailnetIngress",
  site: "TailnetSite",
  gateway: "TailnetGateway",
};

export const kindOf = (owner: ContributionOwner): LeftOut["kind"] => KINDS[owner.kind];

const DEFAULT_ROUTE_DST =
  'a grant may not name a default route (Headscale: to allow all IP addresses, use "*" or "autogroup:internet")';

/** Why one value was left out, in words. */
function describe(i: InvalidInput): string {
  const what = `${i.field} ${JSON.stringify(i.value)}`;
  if (i.field === "tag" || i.field === "advertiserTags") return `${what}: not a valid tag`;
  if (i.field === "ports") return `${what}: not a port (1-65535)`;
  const r = parseCidr(i.value.trim());
  if (i.field === "targets") return `${what}: ${DEFAULT_ROUTE_DST}`;
  if (!r.ok) return `${what}: ${r.message}`;
  if (r.cidr.bits === 0)
    return `${what}: a default route is an exit route, approved only through autoApprovers.exitNode`;
  return `${what}: with the routes approved for the same tags it covers a whole address family (an exit route in pieces)`;
}

const order = (a: LeftOut, b: LeftOut) => {
  const x = `${a.kind}\u0000${a.namespace}\u0000${a.name}`;
  const y = `${b.kind}\u0000${b.namespace}\u0000${b.name}`;
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Which contribution an invalid value came from: its own list, else (a value left out across objects) its field. */
function ownerOf(i: InvalidInput, contributions: readonly Contribution[]): ContributionOwner | undefined {
  const mine = contributions.find((c) => c.invalid.includes(i));
  if (mine) return mine.owner;
  const kind = i.field === "prefixes" || i.field === "advertiserTags" ? "site" : i.field === "routes" ? "gateway" : "";
  return contributions.find(
    (c) => c.owner.kind === kind && c.owner.namespace === i.namespace && c.owner.name === i.name,
  )?.owner;
}

/** One entry per object: its left-out values (`invalid`) and refused contribution, sorted by kind, namespace, name. */
export function leftOutOf(
  contributions: readonly Contribution[],
  invalid: readonly InvalidInput[],
  refused: readonly { contribution: Contribution; message: string; reason?: LeftOutReason }[],
): LeftOut[] {
  const byObject = new Map<string, LeftOut>();
  const add = (owner: ContributionOwner, reason: LeftOutReason, message: string) => {
    const key = `${owner.kind}/${owner.namespace}/${owner.name}`;
    const entry = byObject.get(key);
    if (!entry) {
      byObject.set(key, { kind: kindOf(owner), namespace: owner.namespace, name: owner.name, reason, message });
      return;
    }
    entry.message = `${entry.message}; ${message}`;
    if (reason === "RejectedByHeadscale") entry.reason = reason;
  };
  for (const i of invalid) {
    const owner = ownerOf(i, contributions);
    if (owner) add(owner, "InvalidContribution", describe(i));
  }
  for (const r of refused) add(r.contribution.owner, r.reason ?? "InvalidContribution", r.message);
  return [...byObject.values()].sort(order);
}

/** "TailnetSite net/lab (InvalidContribution), …": PolicyApplied's words for the list. */
export function describeLeftOut(leftOut: readonly LeftOut[]): string {
  const shown = leftOut.slice(0, 5).map((l) => `${l.kind} ${l.namespace}/${l.name} (${l.reason})`);
  return `${shown.join(", ")}${leftOut.length > 5 ? `, and ${leftOut.length - 5} more` : ""}`;
}
