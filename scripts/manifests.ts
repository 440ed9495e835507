/**
 * Writes the generated manifests: the CRDs into manifests/crds/ and the Helm chart's crds/.
 * `npm run manifests` after a schema change; test/api/crd.test.ts fails when the committed
 * files differ from what this writes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generatedManifests } from "../src/api/generate.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
for (const [path, text] of generatedManifests()) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
  console.log(`wrote ${path}`);
}
