/**
 * TailnetUser decide (pure): no children; conditions and the status fields — the user's id, node count,
 * provider, and createdUserId, which is set in the answer that creates the user and kept only while that same
 * local user is the one of this name (the proof deletionPolicy Delete needs). A lost proof keeps the user:
 * never the other way round.
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { conditionsOf } from "../../../conditions/table.js";
import { UserCondition as C, UserReason as R, USER_REASONS } from "../../../conditions/tables/user.js";
import type { HsUser } from "../../../headscale/types.js";
import type { DecideInput, Decision } from "../../../pipeline/run.js";
import type { UserOutcome } from "./act.js";
import type { UserObservation } from "./observe.js";
import type { UserPlan } from "./plan.js";
import type { UserSpec } from "./spec.js";

const { cond } = conditionsOf(USER_REASONS);

export function decideUser({
  spec,
  observed,
  plan,
  outcome,
}: DecideInput<UserSpec, UserObservation, UserPlan, UserOutcome>): Decision {
  if (!observed.ok) {
    const why = `not evaluated: ${observed.message}`;
    return {
      children: [],
      conditions: [
        cond(C.UserPresent, "Unknown", observed.reason, why),
        cond(C.ProfileMatches, "Unknown", observed.reason, why),
        cond(C.Ready, "False", observed.reason, observed.message),
      ],
      fields: {},
    };
  }
  if (!observed.users.ok) {
    const message = `Headscale's users could not be read (${observed.users.error.message})`;
    return {
      children: [],
      conditions: [
        cond(C.UserPresent, "Unknown", R.NotObserved, message),
        cond(C.ProfileMatches, "Unknown", R.NotObserved, message),
        cond(C.Ready, "False", R.NotObserved, message),
      ],
      fields: {},
      resyncAfterSeconds: 10,
    };
  }
  if (plan.kind === "ambiguous") {
    const message = `Headscale user name ${spec.name} is held by users ${plan.ids.join(", ")}; nothing is adopted or written (the Tailnet's UsersUnique condition blocks its policy until one is removed)`;
    return {
      children: [],
      conditions: [
        cond(C.UserPresent, "False", R.Ambiguous, message),
        cond(C.ProfileMatches, "Unknown", R.NotObserved, "no single user to compare"),
        cond(C.Ready, "False", R.Ambiguous, message),
      ],
      fields: {},
    };
  }
  if (plan.kind === "create" && outcome.created && !outcome.created.ok) {
    const message = `Headscale refused to create user ${spec.name}: ${outcome.created.error.message}`;
    return {
      children: [],
      conditions: [
        cond(C.UserPresent, "False", R.CreateFailed, message),
        cond(C.ProfileMatches, "Unknown", R.NotObserved, "no user yet"),
        cond(C.Ready, "False", R.CreateFailed, message),
      ],
      fields: {},
      resyncAfterSeconds: 30,
    };
  }
  const created = plan.kind === "create" && outcome.created?.ok ? outcome.created.value : undefined;
  const user = created ?? (plan.kind === "found" ? plan.user : undefined);
  if (!user) return { children: [], conditions: [], fields: {} };
  const ours = created !== undefined || (plan.kind === "found" && plan.createdByUs);
  const present: ConditionInput = user.provider
    ? cond(
        C.UserPresent,
        "True",
        R.ProviderManaged,
        `user ${user.id} was created by ${user.provider}; it is reported, never changed or deleted`,
      )
    : ours
      ? cond(
          C.UserPresent,
          "True",
          R.Created,
          `user ${user.id} was created by the operator (deletionPolicy ${spec.deletionPolicy})`,
        )
      : cond(
          C.UserPresent,
          "True",
          R.Adopted,
          `user ${user.id} existed before; it is adopted, never renamed or deleted`,
        );
  const nodeCount = observed.nodes.ok ? observed.nodes.value.filter((n) => n.user?.id === user.id).length : undefined;
  return {
    children: [],
    conditions: [present, profileCondition(spec, user), cond(C.Ready, "True", R.Ready, present.message)],
    fields: {
      id: user.id,
      ...(nodeCount !== undefined ? { nodeCount } : {}),
      provider: user.provider,
      ...(ours ? { createdUserId: user.id } : {}),
    },
  };
}

/** v1 cannot update a user's display name or e-mail (only rename), so a difference is told, not written. */
function profileCondition(spec: UserSpec, user: HsUser): ConditionInput {
  const diffs = [
    spec.displayName !== undefined && spec.displayName !== user.displayName
      ? `displayName is "${user.displayName}", spec says "${spec.displayName}"`
      : "",
    spec.email !== undefined && spec.email !== user.email ? `email is "${user.email}", spec says "${spec.email}"` : "",
  ].filter(Boolean);
  if (!diffs.length) return cond(C.ProfileMatches, "True", R.Matches, "display name and e-mail as the spec says");
  return cond(
    C.ProfileMatches,
    "False",
    R.Differs,
    `${diffs.join("; ")}; Headscale's API cannot change them (only rename), so nothing is written`,
  );
}
