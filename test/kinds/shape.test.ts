/**
 * The one shape of the kinds (issue 18), checked on the source text: no src file imports a sibling kind
 * (src/kinds/a/** → src/kinds/b/**; shared code lives in src/kinds/shared/ or a lower layer, which imports
 * no kind), src has no import cycle (relative imports, `import type` included), and every kind's index.ts
 * is wiring through runSync (src/pipeline/run.ts). Each failure names the files to fix.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = join(ROOT, "src");
const KINDS = join(SRC, "kinds");

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith(".ts") && !p.endsWith(".d.ts") ? [p] : [];
  });
}

/** Comments out (a `//` counts only after a space or at a line start, so `https://` in a string stays). */
const stripComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");

/** The specifiers of a file's static imports and re-exports, type-only ones included, and dynamic imports. */
export function importSpecifiers(text: string): string[] {
  const code = stripComments(text);
  const out: string[] = [];
  for (const re of [
    /\b(?:import|export)\s+(?:type\s+)?[^;"'`]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  ]) {
    for (const m of code.matchAll(re)) out.push(m[1]);
  }
  return out;
}

/** The src file a relative specifier names (`./x.js` → x.ts, a directory → its index.ts); undefined otherwise. */
function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = resolve(dirname(from), spec);
  for (const c of [base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts"), base]) {
    if (c.endsWith(".ts") && existsSync(c) && statSync(c).isFile()) return c;
  }
  return undefined;
}

const files = tsFiles(SRC).sort();
const rel = (p: string) => relative(ROOT, p);
const graph = new Map<string, string[]>(
  files.map((f) => [
    f,
    importSpecifiers(readFileSync(f, "utf8")).flatMap((s) => {
      const r = resolveImport(f, s);
      return r ? [r] : [];
    }),
  ]),
);

/** `src/kinds/<dir>/…` → dir; undefined outside src/kinds or for files directly in it. */
function kindDir(file: string): string | undefined {
  const r = relative(KINDS, file).split("/");
  return r.length > 1 && r[0] !== ".." ? r[0] : undefined;
}

/** Strongly connected components of more than one file (or a file importing itself): the import cycles. */
function cycles(g: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v) ?? 0, idx.get(w) ?? 0));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (g.get(v) ?? []).includes(v)) out.push(scc.map(rel).sort());
    }
  };
  for (const v of g.keys()) if (!idx.has(v)) visit(v);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

describe("the shape of src", () => {
  it("parses imports: static, type-only, re-exports, multi-line and dynamic, not those in comments", () => {
    const text = [
      `import { a } from "./a.js";`,
      `import type { B } from "../b.js";`,
      `import {\n  c,\n  type D,\n} from "./c.js";`,
      `export { e } from "./e.js";`,
      `export type { F } from "./f.js";`,
      `import "./side.js";`,
      `const g = await import("./g.js");`,
      `// import { x } from "./commented.js";`,
      `/** import { y } from "./doc.js"; */`,
      `const url = "https://example.com/x";`,
    ].join("\n");
    assert.deepEqual(importSpecifiers(text).sort(), [
      "../b.js",
      "./a.js",
      "./c.js",
      "./e.js",
      "./f.js",
      "./g.js",
      "./side.js",
    ]);
  });

  it("finds the import cycles of a graph", () => {
    const g = new Map([
      ["/r/a.ts", ["/r/b.ts"]],
      ["/r/b.ts", ["/r/a.ts", "/r/c.ts"]],
      ["/r/c.ts", []],
      ["/r/d.ts", ["/r/d.ts"]],
    ]);
    assert.equal(cycles(g).length, 2);
  });

  it("no src file imports a sibling kind (src/kinds/a/** → src/kinds/b/**), and src/kinds/shared imports no kind", () => {
    const sideways: string[] = [];
    for (const [file, deps] of graph) {
      const from = kindDir(file);
      if (!from) continue;
      for (const dep of deps) {
        const to = kindDir(dep);
        if (to && to !== from && to !== "shared") sideways.push(`${rel(file)} imports ${rel(dep)}`);
      }
    }
    assert.deepEqual(
      sideways,
      [],
      "move the shared piece to src/kinds/shared/ (or a lower layer such as src/k8s) and import it from there",
    );
  });

  it("src has no import cycle (relative imports, type-only included)", () => {
    const found = cycles(graph).map((c) => c.join(" ↔ "));
    assert.deepEqual(found, [], "these files import each other (directly or around a loop)");
  });

  it("every src/kinds/<kind>/index.ts is wiring through runSync (src/pipeline/run.ts)", () => {
    const kinds = readdirSync(KINDS).filter(
      (d) => d !== "shared" && statSync(join(KINDS, d)).isDirectory() && existsSync(join(KINDS, d, "index.ts")),
    );
    assert.ok(kinds.length >= 5, `kinds found: ${kinds.join(", ")}`);
    const notWired = kinds.filter((k) => {
      const text = stripComments(readFileSync(join(KINDS, k, "index.ts"), "utf8"));
      const imported = importSpecifiers(text).some(
        (s) => resolveImport(join(KINDS, k, "index.ts"), s) === join(KINDS, "pipeline.ts"),
      );
      return !(imported && /\brunSync\s*\(/.test(text));
    });
    assert.deepEqual(
      notWired.map((k) => `src/kinds/${k}/index.ts`),
      [],
      "these index.ts do not call runSync from ../pipeline.js",
    );
  });
});
