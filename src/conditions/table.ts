/**
 * Reasons tied to their conditions at the type level. Each kind declares one `ReasonTable`: per condition
 * type, the reasons it may carry and the statuses each reason comes with. `conditionsOf(table).cond` then
 * only compiles for a (type, status, reason) the table allows, so a site reason on an egress condition, or
 * `Known` with status False, fails `tsc`. The same table generates the reasons page's rows
 * (src/conditions/reasons-doc.ts) and drives every kind's "covers every (condition, reason) pair" test
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
