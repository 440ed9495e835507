import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cond } from "../../src/conditions/condition.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import { assembleStatus } from "../../src/pipeline/status.js";
import type { HookDeps } from "../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../src/server/events.js";
import { parentObject, syncRequest } from "../fixtures/hooks.js";

function deps(lines: unknown[][]): HookDeps {
  const log = { info: (...a: unknown[]) => lines.push(a) } as unknown as HookDeps["log"];
  return {
    now: () => new Date("2026-11-29T10:00:00Z"),
    metrics: createOperatorMetrics({ defaultMetrics: false }),
    log,
    events: memoryEventRecorder(),
  } as unknown as HookDeps;
}

describe("assembleStatus logs transitions, not every call", () => {
  it("one line per changed condition, none on a repeat", () => {
    const lines: unknown[][] = [];
    const d = deps(lines);
    const parent = parentObject("TailnetSite", "lan", {}, { namespace: "net" });
    const first = assembleStatus(syncRequest({ parent }) as never, d, [
      cond("Ready", "False", "NotAdvertised", "no router"),
    ]);
    assert.equal(lines.length, 1);
    assert.deepEqual(lines[0], [
      { kind: "TailnetSite", object: "net/lan", condition: "Ready", from: "", to: "False/NotAdvertised" },
      "no router",
    ]);
    assembleStatus(syncRequest({ parent: { ...parent, status: first } }) as never, d, [
      cond("Ready", "False", "NotAdvertised", "no router"),
    ]);
    assert.equal(lines.length, 1, "same status and reason: nothing logged");
    assembleStatus(syncRequest({ parent: { ...parent, status: first } }) as never, d, [
      cond("Ready", "True", "Ready", ""),
    ]);
    assert.equal(lines.length, 2);
    assert.deepEqual((lines[1][0] as { from: string; to: string }).from, "False/NotAdvertised");
  });
});
