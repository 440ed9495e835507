/**
 * Assembles docs/reference/reasons.md from the per-kind sections in docs/reference/reasons/*.md
 * (`npm run docs`); test/conditions/reasons-doc.test.ts fails when the committed page is stale
 * or when code and page disagree about a reason.
 */
import { writeFileSync } from "node:fs";
import { assembleReasonsPage } from "../src/conditions/reasons-doc.js";

const root = new URL("../", import.meta.url);
writeFileSync(new URL("docs/reference/reasons.md", root), assembleReasonsPage(root));
console.log("wrote docs/reference/reasons.md");
