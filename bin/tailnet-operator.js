#!/usr/bin/env node
// Entry point of the published image and `npx tailnet-operator`: runs the compiled CLI when
// present (production image), otherwise the TypeScript sources through tsx (a source checkout).
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const compiled = join(root, "dist", "cli.js");
if (existsSync(compiled)) {
  const { main } = await import(pathToFileURL(compiled).href);
  await main(process.argv.slice(2));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  const { main } = await import(pathToFileURL(join(root, "src", "cli.ts")).href);
  await main(process.argv.slice(2));
}
