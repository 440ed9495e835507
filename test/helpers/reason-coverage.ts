/**
 * The "covers every (condition, reason) pair" check each kind's decide test runs over its scenario rows:
 * every condition the rows produce is one the kind's ReasonTable allows, and every (type, reason, status)
 * the table allows is produced by some row. A reason nobody can reach, or one the table forgets, fails.
 */
import assert from "node:assert/strict";
import type { ConditionInput } from "../../src/conditions/condition.js";
import { pairsOf, type ReasonTable } from "../../src/conditions/table.js";

const key = (c: { type: string; reason: string; status: string }) => `${c.type}/${c.reason}/${c.status}`;

export function assertCoversTable(table: ReasonTable, produced: readonly (readonly ConditionInput[])[]): void {
  const seen = new Set(produced.flat().map(key));
  const allowed = new Set(pairsOf(table).map(key));
  const unexpected = [...seen].filter((k) => !allowed.has(k)).sort();
  const missing = [...allowed].filter((k) => !seen.has(k));
  assert.deepEqual(unexpected, [], "produced (type/reason/status) triples the table does not allow");
  assert.deepEqual(missing, [], "table triples no scenario produces");
}
