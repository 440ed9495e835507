/** promtool (Debian package prometheus, installed by scripts/ci-deps.sh) for the rule tests. */
import { spawnSync } from "node:child_process";
import { missingToolMessage } from "../helpers/tools.js";

export function promtool(args: string[], cwd?: string): { code: number; output: string } {
  const run = spawnSync("promtool", args, { cwd, encoding: "utf8" });
  if (run.error) {
    if ((run.error as NodeJS.ErrnoException).code === "ENOENT") throw new Error(missingToolMessage("promtool"));
    throw new Error(`promtool cannot run (${run.error.message})`);
  }
  return { code: run.status ?? 1, output: `${run.stdout}${run.stderr}` };
}
