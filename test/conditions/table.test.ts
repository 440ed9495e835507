import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conditionNames, conditionsOf, pairsOf, reasonNames } from "../../src/conditions/table.js";
import { notEvaluated, notEvaluatedReady } from "../../src/conditions/tables/shared.js";
import { assertCoversTable } from "../helpers/reason-coverage.js";

const table = {
  TagKnown: { Known: ["True"], PolicyPending: ["False"], Unknown: ["Unknown"] },
  Ready: { Ready: ["True"], TagUnknown: ["False"] },
} as const;
const C = conditionsOf(table);

describe("conditionsOf", () => {
  it("builds the condition the table allows, types in table order", () => {
    assert.deepEqual(C.cond("TagKnown", "False", "PolicyPending", "m"), {
      type: "TagKnown",
      status: "False",
      reason: "PolicyPending",
      message: "m",
    });
    assert.deepEqual(C.types, ["TagKnown", "Ready"]);
    // @ts-expect-error a reason of another condition does not compile
    C.cond("TagKnown", "False", "TagUnknown");
    // @ts-expect-error a status the reason does not carry does not compile
    C.cond("TagKnown", "False", "Known");
  });

  it("allows() answers for run-time values", () => {
    assert.equal(C.allows("Ready", "False", "TagUnknown"), true);
    assert.equal(C.allows("Ready", "True", "TagUnknown"), false);
    assert.equal(C.allows("Nope", "True", "Ready"), false);
  });

  it("pairsOf lists every triple in order", () => {
    assert.deepEqual(
      pairsOf(table).map((p) => `${p.type}/${p.reason}/${p.status}`),
      [
        "TagKnown/Known/True",
        "TagKnown/PolicyPending/False",
        "TagKnown/Unknown/Unknown",
        "Ready/Ready/True",
        "Ready/TagUnknown/False",
      ],
    );
  });

  it("assertCoversTable fails on a missing and on an unexpected triple", () => {
    const all = pairsOf(table).map((p) => ({ ...p, message: "" }));
    assertCoversTable(table, [all]);
    assert.throws(() => assertCoversTable(table, [all.slice(1)]), /no scenario produces/);
    assert.throws(
      () => assertCoversTable(table, [[...all, { type: "Ready", status: "True", reason: "Known", message: "" }]]),
      /does not allow/,
    );
  });
});

describe("the names a kind builds conditions with", () => {
  it("conditionNames / reasonNames name every type and every reason of the table, each as itself", () => {
    assert.deepEqual(conditionNames(table), { TagKnown: "TagKnown", Ready: "Ready" });
    assert.deepEqual(reasonNames(table), {
      Known: "Known",
      PolicyPending: "PolicyPending",
      Unknown: "Unknown",
      Ready: "Ready",
      TagUnknown: "TagUnknown",
    });
  });
  it("notEvaluated / notEvaluatedReady: Unknown / False per reason, in the order given", () => {
    const unknown = notEvaluated("NoAPIKey", "NoTailnet");
    assert.deepEqual(Object.entries(unknown), [
      ["NoAPIKey", ["Unknown"]],
      ["NoTailnet", ["Unknown"]],
    ]);
    assert.deepEqual(notEvaluatedReady("InvalidSpec"), { InvalidSpec: ["False"] });
  });
});
