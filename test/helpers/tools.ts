/**
 * The system tools some tests shell out to. A missing tool fails the test with one line naming the
 * package that provides it, read from scripts/ci-deps.sh (the script `npm test` runs first, and the
 * one place that maps commands to packages), instead of a bare `spawnSync named-checkzone ENOENT`.
 */
import { type ExecFileSyncOptionsWithStringEncoding, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const CI_DEPS = new URL("../../scripts/ci-deps.sh", import.meta.url);

/** command → Debian/Ubuntu package, from the `[command]=package` lines of scripts/ci-deps.sh. */
export function toolPackages(): Record<string, string> {
  const text = readFileSync(CI_DEPS, "utf8");
  return Object.fromEntries([...text.matchAll(/^\s*\[([\w.-]+)\]=([\w.+-]+)/gm)].map((m) => [m[1], m[2]]));
}

export function missingToolMessage(command: string): string {
  const pkg = toolPackages()[command];
  return pkg
    ? `${command} is not installed: install the Debian/Ubuntu package ${pkg} (apt-get install ${pkg}), or run bash scripts/ci-deps.sh`
    : `${command} is not installed (and scripts/ci-deps.sh does not list it: add it there with its package)`;
}

/** execFileSync for a system tool; ENOENT becomes the one-line "install package X" error. */
export function execTool(command: string, args: string[], opts: ExecFileSyncOptionsWithStringEncoding): string {
  try {
    return execFileSync(command, args, opts);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new Error(missingToolMessage(command));
    throw e;
  }
}
