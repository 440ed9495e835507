import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KINDS } from "../../src/api/schemas.js";
import { type Condition, cond } from "../../src/conditions/condition.js";
import { REASON_TABLES } from "../../src/conditions/tables/index.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import {
  conditionEvents,
  eventTypeOf,
  MAX_REMEMBERED,
  recordConditionEvents,
  rememberedConditions,
} from "../../src/pipeline/condition-events.js";
import { assembleStatus } from "../../src/pipeline/status.js";
import type { EventRecorder, HookDeps } from "../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../src/server/events.js";
import { parentObject, syncRequest } from "../fixtures/hooks.js";

function deps(events = memoryEventRecorder()): HookDeps & { events: ReturnType<typeof memoryEventRecorder> } {
  return {
    now: () => new Date("2026-11-29T10:00:00Z"),
    metrics: createOperatorMetrics({ defaultMetrics: false }),
    log: { info: () => undefined } as unknown as HookDeps["log"],
    events,
  } as HookDeps & { events: ReturnType<typeof memoryEventRecorder> };
}

const site = () => parentObject("TailnetSite", "lan", {}, { namespace: "net" });

describe("an Event on every condition change (src/pipeline/condition-events.ts)", () => {
  it("records each change once, with the condition's reason and `type: message`; a repeat records nothing", () => {
    const d = deps();
    const parent = site();
    const first = assembleStatus(syncRequest({ parent }) as never, d, [
      cond("Advertised", "False", "NotAdvertised", "no router advertises 10.0.0.0/8"),
      cond("Ready", "False", "NotAdvertised", "no router advertises 10.0.0.0/8"),
    ]);
    assert.deepEqual(
      d.events.events.map((e) => [e.type, e.reason, e.message, e.regarding.metadata.name]),
      [
        ["Warning", "NotAdvertised", "Advertised: no router advertises 10.0.0.0/8", "lan"],
        ["Warning", "NotAdvertised", "Ready: no router advertises 10.0.0.0/8", "lan"],
      ],
    );
    const next = { ...parent, status: first };
    assembleStatus(syncRequest({ parent: next }) as never, d, [
      cond("Advertised", "False", "NotAdvertised", "no router advertises 10.0.0.0/8"),
      cond("Ready", "False", "NotAdvertised", "no router advertises 10.0.0.0/8"),
    ]);
    assert.equal(d.events.events.length, 2, "unchanged conditions: no Event");
    assembleStatus(syncRequest({ parent: next }) as never, d, [
      cond("Advertised", "True", "Advertised", "router-1 advertises 10.0.0.0/8"),
      cond("Ready", "True", "Ready"),
    ]);
    assert.deepEqual(
      d.events.events.slice(2).map((e) => `${e.type} ${e.reason}: ${e.message}`),
      ["Normal Advertised: Advertised: router-1 advertises 10.0.0.0/8", "Normal Ready: Ready is True"],
    );
  });

  it("the same change answered twice (status not yet written back) records one Event per recorder", () => {
    const d = deps();
    const parent = site();
    for (let i = 0; i < 3; i++) {
      assembleStatus(syncRequest({ parent }) as never, d, [cond("Ready", "False", "NotAdvertised", "none")]);
    }
    assert.equal(d.events.events.length, 1);
    const other = deps();
    assembleStatus(syncRequest({ parent }) as never, other, [cond("Ready", "False", "NotAdvertised", "none")]);
    assert.equal(other.events.events.length, 1, "another server (recorder) records its own");
  });

  it("an Unknown echo of another condition's reason ('not evaluated') records nothing of its own", () => {
    const parent = site();
    const events = conditionEvents(parent, undefined, [
      { ...cond("Advertised", "Unknown", "NoTailnet", "not evaluated"), lastTransitionTime: "", observedGeneration: 1 },
      {
        ...cond("Ready", "False", "NoTailnet", "Tailnet home not found"),
        lastTransitionTime: "",
        observedGeneration: 1,
      },
    ]);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason}: ${e.message}`),
      ["Warning NoTailnet: Ready: Tailnet home not found"],
    );
    const alone = conditionEvents(parent, undefined, [
      {
        ...cond("Advertised", "Unknown", "NotObserved", "Headscale down"),
        lastTransitionTime: "",
        observedGeneration: 1,
      },
    ]);
    assert.deepEqual(
      alone.map((e) => e.type),
      ["Warning"],
      "an Unknown nobody else explains is recorded",
    );
  });

  it("a condition back from a 'not evaluated' echo is recorded again", () => {
    const d = deps();
    const parent = site();
    const known = [cond("Advertised", "True", "Advertised", "router-1"), cond("Ready", "True", "Ready")];
    const s1 = assembleStatus(syncRequest({ parent }) as never, d, known);
    const s2 = assembleStatus(syncRequest({ parent: { ...parent, status: s1 } }) as never, d, [
      cond("Advertised", "Unknown", "NoTailnet", "not evaluated"),
      cond("Ready", "False", "NoTailnet", "Tailnet home not found"),
    ]);
    assembleStatus(syncRequest({ parent: { ...parent, status: s2 } }) as never, d, known);
    assert.deepEqual(
      d.events.events.map((e) => `${e.condition} ${e.reason}`),
      ["Advertised Advertised", "Ready Ready", "Ready NoTailnet", "Advertised Advertised", "Ready Ready"],
    );
  });

  it("Warning for the troubled state of each polarity, Normal for healthy and routine states", () => {
    const t = (type: string, status: "True" | "False" | "Unknown", reason: string) =>
      eventTypeOf({ type, status, reason });
    assert.equal(t("Ready", "True", "Ready"), "Normal");
    assert.equal(t("Ready", "False", "TagNotGranted"), "Warning");
    assert.equal(t("Ready", "False", "Suspended"), "Normal");
    assert.equal(t("ServiceConflict", "False", "NoConflict"), "Normal");
    assert.equal(t("ServiceConflict", "True", "Conflict"), "Warning");
    assert.equal(t("RouteConflict", "True", "OverlapsReserved"), "Warning");
    assert.equal(t("Expired", "False", "Valid"), "Normal");
    assert.equal(t("Expired", "True", "Expired"), "Warning");
    assert.equal(t("RenewalDue", "True", "Renewing"), "Normal");
    assert.equal(t("RenewalDue", "True", "RenewalFailed"), "Warning");
    assert.equal(t("ExitNode", "False", "NotRequested"), "Normal");
    assert.equal(t("ExitNode", "False", "ExitNodeNotAllowed"), "Warning");
    assert.equal(t("PolicyApplied", "False", "DryRun"), "Normal");
    assert.equal(t("HeadscaleCompatible", "Unknown", "CannotVerify"), "Warning");
  });

  it("every kind with hooks has a condition table, so every kind's changes are recorded the same way", () => {
    for (const k of KINDS) assert.ok(REASON_TABLES[k.kind], `${k.kind} has a reason table`);
    // A spec the operator refused is trouble on every condition that carries it.
    for (const [kind, table] of Object.entries(REASON_TABLES)) {
      for (const [type, reasons] of Object.entries(table)) {
        for (const [reason, statuses] of Object.entries(reasons)) {
          for (const status of statuses) {
            if (reason !== "InvalidSpec") continue;
            assert.equal(eventTypeOf({ type, status, reason }), "Warning", `${kind} ${type} ${status}/${reason}`);
          }
        }
      }
    }
  });

  it(`remembers ${MAX_REMEMBERED} objects, those with the same conditions sharing one record; the least recently changed go first`, () => {
    const recorded: string[] = [];
    const events: EventRecorder = {
      record: async (e) => {
        recorded.push(e.regarding.metadata.name);
      },
    };
    const lan = (i: number) => parentObject("TailnetSite", `lan-${i}`, {}, { namespace: "net", uid: `uid-${i}` });
    const full = (c: ReturnType<typeof cond>): Condition => ({ ...c, lastTransitionTime: "t", observedGeneration: 1 });
    const down = [
      cond("Advertised", "False", "NotAdvertised", "none"),
      cond("Ready", "False", "NotAdvertised", "none"),
    ].map(full);
    for (let i = 0; i <= MAX_REMEMBERED; i++) recordConditionEvents(events, lan(i), undefined, down);
    assert.equal(recorded.length, 2 * (MAX_REMEMBERED + 1));
    assert.deepEqual(rememberedConditions(events), { objects: MAX_REMEMBERED, records: 1 });
    // answered again before its status is written back: a remembered object records nothing, the forgotten one again
    recordConditionEvents(events, lan(MAX_REMEMBERED), undefined, down);
    recordConditionEvents(events, lan(1), undefined, down);
    assert.equal(recorded.length, 2 * (MAX_REMEMBERED + 1));
    recordConditionEvents(events, lan(0), undefined, down);
    assert.deepEqual(recorded.slice(-2), ["lan-0", "lan-0"]);
    // one object's change is its own: it holds a record of its own, the others keep theirs
    recordConditionEvents(events, lan(5), undefined, [full(cond("Ready", "True", "Ready"))]);
    assert.deepEqual(rememberedConditions(events), { objects: MAX_REMEMBERED, records: 2 });
    recordConditionEvents(events, lan(6), undefined, down);
    assert.equal(recorded.at(-1), "lan-5", "lan-6 still remembers its own conditions");
  });
});
