/**
 * docs/architecture.md is drawn from the tree: every `src/…` or `test/…` path it names exists, and every
 * folder under src/ is named there by its path, so a folder added, moved or removed fails here until the
 * page follows. The limits the page states hold on the tree: no src file over 450 lines outside the
 * reason tables, and the control plane imports nothing from the agent (they share src/contract/).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { repoRoot } from "../chart/helm.js";

const page = readFileSync(join(repoRoot, "docs/architecture.md"), "utf8");

function walk(dir: string): string[] {
  return readdirSync(join(repoRoot, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    return statSync(join(repoRoot, path)).isDirectory() ? [path, ...walk(path)] : [path];
  });
}

/** The paths a page names in code spans: `src/…` and `test/…`, a trailing `/` for a folder. */
export function namedPaths(markdown: string): string[] {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/`((?:src|test)\/[\w./<>*-]*)`/g)) {
    const path = m[1].replace(/[*]/g, "");
    if (!/[<>]/.test(path)) out.add(path);
  }
  return [...out].sort();
}

const tree = walk("src");
const folders = tree.filter((p) => statSync(join(repoRoot, p)).isDirectory());
const sources = tree.filter((p) => p.endsWith(".ts"));

describe("docs/architecture.md follows the tree", () => {
  it("finds the paths a page names, leaving out placeholders", () => {
    assert.deepEqual(namedPaths("`src/a/` and `test/b.ts`, `src/kinds/composite/<kind>/`, `src/x/*.ts`"), [
      "src/a/",
      "src/x/.ts",
      "test/b.ts",
    ]);
  });

  it("every path it names exists", () => {
    const missing = namedPaths(page).filter((p) => !existsSync(join(repoRoot, p.replace(/\/\.ts$/, ""))));
    assert.deepEqual(missing, [], "docs/architecture.md names these, and the tree has no such path");
  });

  it("names every folder of src/ by its path", () => {
    const named = new Set(namedPaths(page).map((p) => p.replace(/\/$/, "")));
    assert.ok(folders.length >= 15, `${folders.length} folders`);
    assert.deepEqual(
      folders.filter((f) => !named.has(f)),
      [],
      "add a row for each to docs/architecture.md",
    );
  });

  it("no src file is over 450 lines outside the reason tables", () => {
    const long = sources
      .filter((p) => !p.startsWith("src/conditions/tables/"))
      .map((p) => [p, readFileSync(join(repoRoot, p), "utf8").split("\n").length] as const)
      .filter(([, n]) => n > 450)
      .map(([p, n]) => `${p}: ${n} lines`);
    assert.deepEqual(long, [], "split these by concern");
  });

  it("the control plane imports nothing from src/agent/ (both sides import src/contract/)", () => {
    const control = sources.filter((p) => !p.startsWith("src/agent/") && p !== "src/cli.ts");
    const reaching = control.filter((p) => {
      const text = readFileSync(join(repoRoot, p), "utf8");
      return [...text.matchAll(/from\s+"(\.[^"]+)"/g)].some((m) =>
        relative(repoRoot, join(repoRoot, p, "..", m[1])).startsWith("src/agent/"),
      );
    });
    assert.deepEqual(reaching, [], "import the shared shape from src/contract/ instead");
  });
});
