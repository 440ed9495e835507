/**
 * Generates docs/reference/reasons.md from every kind's ReasonTable (src/conditions/tables) and the prose in
 * docs/reference/reasons/<kind>.md (`npm run docs`; see src/conditions/reasons-doc.ts). The page is written
 * either way; a (condition, reason) the table and the prose disagree on is printed and exits 1.
 * test/conditions/reasons-doc.test.ts fails on the same disagreements and on a stale committed page.
 */
import { writeFileSync } from "node:fs";
import { generateReasonsPage } from "../src/conditions/reasons-doc.js";

const root = new URL("../", import.meta.url);
const { page, problems } = generateReasonsPage(root);
writeFileSync(new URL("docs/reference/reasons.md", root), page);
console.log("wrote docs/reference/reasons.md");
if (problems.length > 0) {
  console.error(`the reason tables and docs/reference/reasons/*.md disagree:\n  ${problems.join("\n  ")}`);
  process.exitCode = 1;
}
