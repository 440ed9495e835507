/**
 * The typed condition constructor of the TailnetIngress kind: `cond(type, status, reason, message)`
 * compiles only for a (type, status, reason) that src/conditions/tables/ingress.ts allows.
 */
import { conditionsOf, type ReasonOf, type TypedCondition } from "../../../conditions/table.js";
import { INGRESS_REASONS } from "../../../conditions/tables/ingress.js";

type Table = typeof INGRESS_REASONS;

export const ingressConditions = conditionsOf(INGRESS_REASONS);
export const { cond } = ingressConditions;

type Types = keyof Table & string;
/** A condition of this kind, of one type or (distributed) of any. */
export type IngressCondition<T extends Types = Types> = { [K in T]: TypedCondition<Table, K> }[T];
export type ReadyReason = ReasonOf<Table, "Ready">;

/** Whether `reason` may stand on Ready=False (a blocker's reason repeated there). */
export const isReadyBlocker = (reason: string): reason is ReadyReason =>
  ingressConditions.allows("Ready", "False", reason);
