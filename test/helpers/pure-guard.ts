/**
 * Preloaded by `npm run test:pure` (`--import ./test/helpers/pure-guard.ts`): in each test file's process,
 * starting a child process throws, so a test that spawns one cannot sit in the pure set unnoticed. It
 * names the fix: list the file in test/helpers/suites.ts (SLOW_FILES) or drop the spawn.
 *
 * One spawn stays allowed: `go mod download -json` from test/helpers/upstream.ts, which reads Headscale's
 * published Swagger document and policy corpus from the Go module cache (downloaded once, then answered from
 * the cache in milliseconds). Without it no test could use the fake Headscale.
 *
 * Only the test files' processes are guarded, never the runner that spawns them: node's test runner marks
 * its children with NODE_TEST_CONTEXT (nodejs/node lib/internal/test_runner/runner.js).
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { test } from "node:test";
import { promisify } from "node:util";
import { allowedInPure } from "./suites.js";

const SPAWNERS = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;

export function pureSpawnError(name: string, command: unknown): Error {
  return new Error(
    `pure tests start no processes, but this one called child_process.${name}(${JSON.stringify(command)}): ` +
      "list its file in SLOW_FILES of test/helpers/suites.ts (npm run test:slow runs it), or drop the spawn",
  );
}

/**
 * Throws, and also fails a test of its own: the caller may catch the throw (a test of a tool's error path),
 * and in node 22 a throw in a describe() body is printed but fails neither the run nor its exit code.
 * A test made during another one becomes its subtest, so the failure shows where the spawn was.
 */
function refuse(name: string, command: unknown): never {
  const error = pureSpawnError(name, command);
  test("starts no process (test/helpers/pure-guard.ts)", () => {
    throw error;
  });
  throw error;
}

function guard(): void {
  const target = childProcess as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const name of SPAWNERS) {
    const original = target[name];
    const guarded = function (this: unknown, command: unknown, args: unknown, ...rest: unknown[]) {
      if (!allowedInPure(command, args)) refuse(name, command);
      return original.call(this, command, args, ...rest);
    };
    // exec and execFile promisify to { stdout, stderr } through this symbol; keep that shape.
    const custom = (original as unknown as Record<symbol, (...a: unknown[]) => unknown>)[promisify.custom];
    if (custom) {
      Object.assign(guarded, {
        [promisify.custom]: (command: unknown, args: unknown, ...rest: unknown[]) => {
          if (!allowedInPure(command, args)) refuse(name, command);
          return custom(command, args, ...rest);
        },
      });
    }
    target[name] = guarded;
  }
  // Named imports (`import { execFileSync } from "node:child_process"`) are live bindings of the builtin's
  // ESM facade; this makes them see the guarded functions.
  syncBuiltinESMExports();
}

if (process.env.NODE_TEST_CONTEXT?.startsWith("child")) guard();
