/**
 * What a TailnetUser sync wants (pure): create the user when Headscale lists no user of that name, else
 * nothing — an existing user is adopted as it is (v1 can change neither its display name nor its e-mail, and
 * the operator never renames), a user an identity provider created (provider set) is only reported, and a name
 * two users hold is the Tailnet's UsersUnique concern (nothing is written for it here). Without a user list
 * read this sync nothing is planned.
 */
import type { HsUser } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { previousStatus } from "../../../pipeline/status.js";
import type { UserObservation } from "./observe.js";
import type { UserSpec } from "./spec.js";

export type UserPlan =
  | { kind: "none" }
  | { kind: "create" }
  | { kind: "found"; user: HsUser; createdByUs: boolean }
  | { kind: "ambiguous"; ids: string[] };

/** status.createdUserId: recorded only in the answer that created the user (editors cannot write status). */
export function createdUserId(parent: K8sObject): string | undefined {
  const id = previousStatus(parent).createdUserId;
  return typeof id === "string" && /^[0-9]+$/.test(id) ? id : undefined;
}

export function planUser(parent: K8sObject, spec: UserSpec, observed: UserObservation): UserPlan {
  if (!observed.ok || !observed.users.ok) return { kind: "none" };
  const named = observed.users.value.filter((u) => u.name === spec.name);
  if (named.length > 1) return { kind: "ambiguous", ids: named.map((u) => u.id).sort((a, b) => Number(a) - Number(b)) };
  const [user] = named;
  if (!user) return { kind: "create" };
  return { kind: "found", user, createdByUs: !user.provider && createdUserId(parent) === user.id };
}
