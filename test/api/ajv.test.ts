import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { newAjv } from "../../src/api/ajv.js";
import { KINDS } from "../../src/api/schemas.js";

describe("newAjv", () => {
  it("compiles every CRD status schema without an 'unknown format' warning", () => {
    const warnings: unknown[] = [];
    const logger = { log: () => {}, warn: (...a: unknown[]) => warnings.push(a), error: () => {} };
    const ajv = newAjv({ strict: false, logger });
    for (const k of KINDS) {
      ajv.compile(k.status);
      ajv.compile(k.spec);
    }
    assert.deepEqual(warnings, []);
  });
  it("checks date-time and int64 as the apiserver does", () => {
    const ajv = newAjv({ strict: false });
    const status = ajv.compile(KINDS[0].status);
    const cond = { type: "Ready", status: "True", reason: "Ready", message: "", observedGeneration: 1 };
    assert.equal(status({ conditions: [{ ...cond, lastTransitionTime: "2026-11-29T10:00:00Z" }] }), true);
    assert.equal(status({ conditions: [{ ...cond, lastTransitionTime: "yesterday" }] }), false);
    assert.match(JSON.stringify(status.errors), /date-time/);
  });
});
