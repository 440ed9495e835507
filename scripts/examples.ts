/** `npm run examples:update`: re-renders every example into its expected.yaml. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { exampleDirs, renderExample } from "../src/render/examples.js";

const root = fileURLToPath(new URL("..", import.meta.url));
for (const dir of exampleDirs(root)) {
  const { code, output } = await renderExample(dir);
  writeFileSync(join(dir, "expected.yaml"), output);
  console.log(`${dir}: exit ${code}`);
}
