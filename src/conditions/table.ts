/**
 * Reasons tied to their conditions at the type level. Each kind declares one `ReasonTable`: per condition
 * type, the reasons it may carry and the statuses each reason comes with. `conditionsOf(table).cond` then
 * only compiles for a (type, status, reason) the table allows, so a site reason on an egress condition, or
 * `Known` with status False, fails `tsc`. The same table generates the reasons page's rows
 * (src/conditions/reasons-doc.ts), the typed constants kinds build conditions with (`conditionNames`,
 * `reasonNames`) and drives every kind's "covers every (condition, reason) pair" test
 * (test/helpers/reason-coverage.ts).
 */
import type { ConditionInput, ConditionStatus } from "./condition.js";

/** Per condition type (in status order), its reasons (in the page's order) and their statuses. */
export type ReasonTable = {
  readonly [type: string]: { readonly [reason: string]: readonly ConditionStatus[] };
};

/** A condition whose type and reason come from table `M`. */
export interface TypedCondition<M extends ReasonTable, T extends keyof M & string = keyof M & string>
  extends ConditionInput {
  readonly type: T;
  readonly reason: ReasonOf<M, T>;
}

export type ReasonOf<M extends ReasonTable, T extends keyof M> = keyof M[T] & string;
export type StatusOf<M extends ReasonTable, T extends keyof M, R extends keyof M[T]> = M[T][R][number];

export interface ConditionsOf<M extends ReasonTable> {
  readonly table: M;
  /** The condition types in status order. */
  readonly types: readonly (keyof M & string)[];
  /** A condition the table allows; anything else is a compile error. */
  cond<T extends keyof M & string, R extends ReasonOf<M, T>>(
    type: T,
    status: StatusOf<M, T, R>,
    reason: R,
    message?: string,
  ): TypedCondition<M, T>;
  /** Whether the table allows (type, status, reason): for values built at run time (e.g. a repeated blocker). */
  allows(type: string, status: ConditionStatus, reason: string): boolean;
}

export function conditionsOf<const M extends ReasonTable>(table: M): ConditionsOf<M> {
  return {
    table,
    types: Object.keys(table) as (keyof M & string)[],
    cond: (type, status, reason, message = "") => ({ type, status, reason, message }),
    allows: (type, status, reason) => table[type]?.[reason]?.includes(status) ?? false,
  };
}

/** Every (type, reason, status) triple a table allows, in table order. */
export function pairsOf(table: ReasonTable): { type: string; reason: string; status: ConditionStatus }[] {
  return Object.entries(table).flatMap(([type, reasons]) =>
    Object.entries(reasons).flatMap(([reason, statuses]) => statuses.map((status) => ({ type, reason, status }))),
  );
}

/** Every reason any condition of table `M` may carry. */
export type AnyReasonOf<M extends ReasonTable> = { [T in keyof M]: keyof M[T] & string }[keyof M];

/** The table's condition types as typed constants (`C.Ready`): what a kind builds its conditions with. */
export function conditionNames<const M extends ReasonTable>(table: M): { readonly [T in keyof M & string]: T } {
  return Object.fromEntries(Object.keys(table).map((t) => [t, t])) as { readonly [T in keyof M & string]: T };
}

/** The table's reasons (of every condition) as typed constants (`R.NoTailnet`). */
export function reasonNames<const M extends ReasonTable>(table: M): { readonly [R in AnyReasonOf<M>]: R } {
  const reasons = Object.values(table).flatMap((r) => Object.keys(r));
  return Object.fromEntries(reasons.map((r) => [r, r])) as { readonly [R in AnyReasonOf<M>]: R };
}
