/**
 * Every test file runs in exactly one of `npm test`'s suites (test/helpers/suites.ts), and the package.json
 * scripts run the suites from that one list: a file nobody lists, a stale entry or a script that stops
 * running a suite fails here, instead of the file silently dropping out of CI.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import {
  allowedInPure,
  allTestFiles,
  REAL_FOLDER,
  repoRoot,
  SLOW_FILES,
  SLOW_FOLDERS,
  SUITES,
  suiteFiles,
  suiteOf,
  TEST_FILE,
} from "./suites.js";

/** Anything under test/ whose name says it is a test, whatever pattern TEST_FILE matches. */
function testLookingFiles(dir = join(repoRoot, "test")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testLookingFiles(path);
    return /[.\-_](test|spec)\.[a-z]+$/.test(entry.name) ? [relative(repoRoot, path)] : [];
  });
}

describe("test suites (test/helpers/suites.ts)", () => {
  const files = allTestFiles();

  it("every test file is in exactly one suite, and together they are every test file", () => {
    const listed = SUITES.flatMap((suite) => suiteFiles(suite, files));
    assert.deepEqual([...listed].sort(), files);
    assert.equal(new Set(listed).size, listed.length);
    for (const suite of SUITES) assert.ok(suiteFiles(suite, files).length > 0, `the ${suite} suite is empty`);
  });

  it("nothing named like a test escapes the pattern the suites read", () => {
    const missed = testLookingFiles().filter((file) => !TEST_FILE.test(file.split("/").pop() ?? ""));
    assert.deepEqual(missed, [], "rename these to *.test.ts, or they never run");
  });

  it("every slow entry names a test file or folder that exists, outside the real suite", () => {
    for (const folder of [...SLOW_FOLDERS, REAL_FOLDER]) {
      assert.ok(existsSync(join(repoRoot, folder)) && statSync(join(repoRoot, folder)).isDirectory(), folder);
    }
    for (const file of Object.keys(SLOW_FILES)) {
      assert.ok(files.includes(file), `SLOW_FILES lists ${file}, which is not a test file`);
      assert.equal(suiteOf(file), "slow");
      assert.ok(!SLOW_FOLDERS.some((folder) => file.startsWith(`${folder}/`)), `${file}: its folder is slow already`);
    }
  });

  it("npm test runs typecheck, lint and the three suites, each from test/helpers/suites.ts", () => {
    const { scripts } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const steps = scripts.test.split("&&").map((step) => step.trim());
    assert.deepEqual(steps, [
      "npm run typecheck",
      "npm run lint",
      "npm run test:pure",
      "npm run test:slow",
      "npm run test:real",
    ]);
    for (const suite of SUITES) {
      const script = scripts[`test:${suite}`] ?? "";
      // `files=$(…) && node … $files`: an empty or failed listing stops the script instead of running nothing.
      assert.match(script, new RegExp(`^files=\\$\\(tsx test/helpers/suites\\.ts ${suite}\\) && node `));
      assert.match(script, /--test .*\$files$/);
    }
    assert.match(scripts["test:pure"], /--import \.\/test\/helpers\/pure-guard\.ts /);
  });

  it("the guard in the pure suite lets through only the Go module cache lookup", () => {
    assert.ok(allowedInPure("go", ["mod", "download", "-json", "github.com/juanfont/headscale@v0.29.2"]));
    assert.ok(!allowedInPure("openssl", ["req"]));
    assert.ok(!allowedInPure("go", ["build", "./..."]));
    assert.ok(!allowedInPure(process.execPath, ["--import", "tsx", "src/cli.ts"]));
  });
});
