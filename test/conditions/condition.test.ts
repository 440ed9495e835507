import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cond, deriveReady, mergeConditions, triState } from "../../src/conditions/condition.js";

const t0 = new Date("2026-11-29T10:00:00.750Z");
const t1 = new Date("2026-11-29T11:00:00Z");

describe("mergeConditions", () => {
  const rows = [
    {
      name: "a new condition gets now, truncated to the second",
      previous: [],
      next: cond("Ready", "False", "NotRegistered", "no node"),
      want: "2026-11-29T10:00:00Z",
    },
    {
      name: "a changed status gets a new lastTransitionTime",
      previous: [
        { type: "Ready", status: "False", reason: "NotRegistered", lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
      next: cond("Ready", "True", "Ready"),
      want: "2026-11-29T10:00:00Z",
    },
    {
      name: "the same status keeps the old time even when the reason changes",
      previous: [
        { type: "Ready", status: "False", reason: "NotRegistered", lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
      next: cond("Ready", "False", "RoutesMissing"),
      want: "2026-01-01T00:00:00Z",
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const [c] = mergeConditions(r.previous, [r.next], 4, t0);
      assert.equal(c.lastTransitionTime, r.want);
      assert.equal(c.observedGeneration, 4);
      assert.equal(c.reason, r.next.reason);
    });
  }

  it("keeps the order of next and is byte-identical on repeat", () => {
    const next = [cond("B", "True", "b"), cond("A", "Unknown", "a")];
    const first = mergeConditions(undefined, next, 1, t0);
    assert.deepEqual(
      first.map((c) => c.type),
      ["B", "A"],
    );
    const second = mergeConditions(first, next, 1, t1);
    assert.equal(JSON.stringify(second), JSON.stringify(first));
  });

  it("ignores garbage in the previous status", () => {
    const [c] = mergeConditions([null, 3, { type: 7 }], [cond("X", "True", "x")], 1, t0);
    assert.equal(c.lastTransitionTime, "2026-11-29T10:00:00Z");
  });
});

describe("deriveReady", () => {
  it("repeats the first blocker's reason and message", () => {
    const r = deriveReady(
      [
        { ok: true, reason: "Registered", message: "" },
        { ok: false, reason: "RoutesMissing", message: "postgres: NotApproved" },
        { ok: false, reason: "Unreachable", message: "x" },
      ],
      "Ready",
    );
    assert.deepEqual(r, cond("Ready", "False", "RoutesMissing", "postgres: NotApproved"));
  });
  it("is True with the ready reason when nothing blocks", () => {
    assert.deepEqual(
      deriveReady([{ ok: true, reason: "A", message: "" }], "FreshRuntimeReady"),
      cond("Ready", "True", "FreshRuntimeReady"),
    );
  });
  it("triState never guesses", () => {
    assert.deepEqual(
      [triState(true), triState(false), triState(null), triState(undefined)],
      ["True", "False", "Unknown", "Unknown"],
    );
  });
});
