/** promtool (Debian package prometheus, installed by scripts/ci-deps.sh) for the rule tests. */
import { spawnSync } from "node:child_process";

export function promtool(args: string[], cwd?: string): { code: number; output: string } {
  const run = spawnSync("promtool", args, { cwd, encoding: "utf8" });
  if (run.error) {
    throw new Error(`promtool cannot run (${run.error.message}); install it with: bash scripts/ci-deps.sh`);
  }
  return { code: run.status ?? 1, output: `${run.stdout}${run.stderr}` };
}
