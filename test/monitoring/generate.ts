/** Rewrites the rendered copies of the chart's monitoring content; see generated.ts. */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { repoRoot } from "../chart/helm.js";
import { generatedFiles } from "./generated.js";

for (const [path, text] of generatedFiles()) {
  mkdirSync(dirname(join(repoRoot, path)), { recursive: true });
  writeFileSync(join(repoRoot, path), text);
  console.log(`wrote ${path}`);
}
