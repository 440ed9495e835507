/**
 * The examples/ directories: one per kind, each a CR with its Tailnet, a Headscale snapshot and
 * optionally agent statuses, rendered at a fixed time so the output is a stable golden file
 * (`npm run examples:update` rewrites examples/<kind>/expected.yaml).
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { runRender } from "./main.js";

export const EXAMPLES_NOW = "2026-11-29T10:00:00Z";

export function exampleDirs(root: string): string[] {
  const base = join(root, "examples");
  return readdirSync(base, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => join(base, d.name))
    .sort();
}

/** The `render` arguments of an example, as its README shows them. */
export function exampleArgs(dir: string): string[] {
  const args = ["-f", dir, "--now", EXAMPLES_NOW];
  if (existsSync(join(dir, "snapshot.json"))) args.push("--headscale", join(dir, "snapshot.json"));
  if (existsSync(join(dir, "agents.json"))) args.push("--agents", join(dir, "agents.json"));
  return args;
}

export async function renderExample(dir: string): Promise<{ code: number; output: string }> {
  let output = "";
  const code = await runRender(exampleArgs(dir), (s) => {
    output += s;
  });
  return { code, output: `# render exit code: ${code}\n${output}` };
}
