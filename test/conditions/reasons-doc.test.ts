import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { ALL_REASONS, CommonReason } from "../../src/conditions/reasons.js";
import { assembleReasonsPage, reasonsByKind } from "../../src/conditions/reasons-doc.js";

const root = new URL("../../", import.meta.url);
const page = readFileSync(new URL("docs/reference/reasons.md", root), "utf8");
const intro = reasonsByKind(`## Common\n${page.split("\n## ")[0]}`).get("Common") ?? new Set<string>();
const byKind = reasonsByKind(page);

describe("docs/reference/reasons.md", () => {
  it("is assembled from docs/reference/reasons/*.md (npm run docs)", () => {
    assert.equal(page, assembleReasonsPage(root));
  });
  for (const [kind, { reasons }] of Object.entries(ALL_REASONS)) {
    it(`documents every ${kind} reason the code defines`, () => {
      const documented = byKind.get(kind);
      assert.ok(documented, `no "## ${kind}" section`);
      const missing = Object.values(reasons).filter((r) => !documented.has(r) && !intro.has(r));
      assert.deepEqual(missing, []);
    });
    it(`names no ${kind} reason the code does not define`, () => {
      const known = new Set<string>([...Object.values(reasons), ...Object.values(CommonReason)]);
      const unknown = [...(byKind.get(kind) ?? [])].filter((r) => !known.has(r));
      assert.deepEqual(unknown, []);
    });
  }
});
