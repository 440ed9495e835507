/**
 * The one shape of the kinds (issues 18, 34), checked on the source text: no src file imports a sibling kind
 * (src/kinds/composite/a/** → src/kinds/composite/b/**; shared code lives in src/kinds/shared/ or a lower
 * layer, which imports no kind), src has no import cycle (relative imports, `import type` included), and every
 * composite kind keeps the roles of its files (src/pipeline/run.ts): index.ts wires, decide.ts is pure, plan.ts
 * and act.ts exist, act.ts alone writes to Headscale, finalize runs through src/pipeline/finalize.ts. Each
 * failure names the file and the role it breaks.
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

/**
 * The kind a file belongs to: `src/kinds/composite/<kind>/…` → composite/<kind>, `src/kinds/decorators/<kind>/…`
 * → decorators/<kind>, `src/kinds/shared/…` → shared; undefined elsewhere, and for the files beside the kinds
 * (the registries, composite/related.ts, decorators/module.ts), which belong to no kind.
 */
function kindDir(file: string): string | undefined {
  const r = relative(KINDS, file).split("/");
  if (r[0] === "shared") return r.length > 1 ? "shared" : undefined;
  if (r[0] === "composite" || r[0] === "decorators") return r.length > 2 ? `${r[0]}/${r[1]}` : undefined;
  return undefined;
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

  it("no src file imports a sibling kind (src/kinds/composite/a/** → …/b/**), and src/kinds/shared imports no kind", () => {
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

  it("src/kinds/shared imports nothing from the kind families (composite/, decorators/), their registries included", () => {
    const upward = [...graph]
      .filter(([file]) => relative(KINDS, file).startsWith("shared/"))
      .flatMap(([file, deps]) =>
        deps
          .filter((d) => /^(composite|decorators)\//.test(relative(KINDS, d)))
          .map((d) => `${rel(file)} imports ${rel(d)}`),
      );
    assert.deepEqual(upward, [], "what every kind needs lives in src/kinds/shared/ or below; move it down");
  });

  it("src has no import cycle (relative imports, type-only included)", () => {
    const found = cycles(graph).map((c) => c.join(" ↔ "));
    assert.deepEqual(found, [], "these files import each other (directly or around a loop)");
  });

  it("every composite kind keeps the roles of its files", () => {
    const kinds = compositeKinds();
    assert.ok(kinds.length >= 7, `composite kinds found: ${kinds.join(", ")}`);
    assert.ok(VIEW_WRITERS.length >= 5, `view writers found: ${VIEW_WRITERS.join(", ")}`);
    assert.deepEqual(
      kinds.flatMap((k) => roleProblems(k)),
      [],
      "these files break the role the one shape gives them",
    );
  });

  it("every decorator keeps its roles: plan.ts and decide.ts exist, are pure, and decide.ts exports a decide function", () => {
    const dir = join(KINDS, "decorators");
    const decorators = readdirSync(dir).filter((d) => statSync(join(dir, d)).isDirectory());
    assert.ok(decorators.length >= 2, `decorators found: ${decorators.join(", ")}`);
    const problems = decorators.flatMap((d) =>
      ["plan.ts", "decide.ts"].flatMap((name) => {
        const file = join(dir, d, name);
        if (!existsSync(file)) return [`${rel(file)}: missing`];
        const text = readFileSync(file, "utf8");
        const io = valueImports(text).filter((s) => impure(file, s));
        const out = io.map((s) => `${rel(file)}: pure — imports ${s}`);
        if (name === "decide.ts" && ![...functionsOf(text)].some(([n, f]) => f.exported && /^decide/.test(n)))
          out.push(`${rel(file)}: exports a decide function`);
        return out;
      }),
    );
    assert.deepEqual(problems, [], "these decorator files break the role the one shape gives them");
  });

  it("finds a broken role and names the file", () => {
    const dir = join(COMPOSITE, "example");
    const files = new Map([
      [join(dir, "index.ts"), `import { x } from "../../../headscale/view.js";\nexport const m = 1;`],
      [join(dir, "decide.ts"), `import { readFileSync } from "node:fs";\nexport const d = 1;`],
      [join(dir, "observe.ts"), `export async function o(view) { await view.deleteNode("1"); }`],
      [join(dir, "finalize.ts"), `export const FINALIZE_RESYNC_SECONDS = 10;`],
    ]);
    assert.deepEqual(roleProblems("example", files), [
      "src/kinds/composite/example/index.ts: wiring — calls runSync imported from src/pipeline/run.ts",
      "src/kinds/composite/example/index.ts: wiring — no Headscale or k8s logic (imports src/headscale/view.ts)",
      "src/kinds/composite/example/decide.ts: pure — imports no view, client, server or node:* (imports node:fs)",
      "src/kinds/composite/example/decide.ts: pure — exports a decide function",
      "src/kinds/composite/example/plan.ts: plan — exists (the kind writes to Headscale)",
      "src/kinds/composite/example/act.ts: act — exists (the kind writes to Headscale)",
      "src/kinds/composite/example/finalize.ts: finalize — runs through runFinalize (src/pipeline/finalize.ts)",
      "src/kinds/composite/example/finalize.ts: finalize — no resync constant of its own (src/pipeline/finalize.ts has it)",
      "src/kinds/composite/example/observe.ts: act — only act.ts calls a Headscale write (deleteNode)",
    ]);
  });
});

const COMPOSITE = join(KINDS, "composite");
const PIPELINE_RUN = join(SRC, "pipeline", "run.ts");
const PIPELINE_FINALIZE = join(SRC, "pipeline", "finalize.ts");

function compositeKinds(): string[] {
  return readdirSync(COMPOSITE)
    .filter((d) => statSync(join(COMPOSITE, d)).isDirectory() && existsSync(join(COMPOSITE, d, "index.ts")))
    .sort();
}

/** Top-level functions of a file: name → its text up to the next top-level function. */
function functionsOf(text: string): Map<string, { exported: boolean; body: string }> {
  const out = new Map<string, { exported: boolean; body: string }>();
  for (const chunk of stripComments(text).split(/\n(?=(?:export )?(?:async )?function )/)) {
    const m = /^(export )?(?:async )?function (\w+)/.exec(chunk);
    if (m) out.set(m[2], { exported: !!m[1], body: chunk });
  }
  return out;
}

/** The HeadscaleView methods that write (through its write path): src/headscale/view.ts. */
const VIEW_WRITERS = (() => {
  const text = readFileSync(join(SRC, "headscale", "view.ts"), "utf8");
  const names: string[] = [];
  for (const m of text.matchAll(/\n {2}(?:async )?(\w+)\([^)]*\): Promise<Outcome<[^{]*\{([\s\S]*?)\n {2}\}/g)) {
    if (/this\.(write|settleWrite)\(/.test(m[2])) names.push(m[1]);
  }
  return names;
})();

/** Exported src/kinds/shared functions that reach a view writer (directly or through another of theirs). */
const SHARED_WRITERS = (() => {
  const fns = new Map<string, { exported: boolean; body: string }>();
  for (const f of tsFiles(join(KINDS, "shared")))
    for (const [k, v] of functionsOf(readFileSync(f, "utf8"))) fns.set(k, v);
  const writes = new Set<string>();
  const calls = (body: string, names: Iterable<string>, dotted: boolean) =>
    [...names].find((n) => new RegExp(`${dotted ? "\\." : "\\b"}${n}\\(`).test(body));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [name, { body }] of fns) {
      if (writes.has(name)) continue;
      if (calls(body, VIEW_WRITERS, true) || calls(body, writes, false)) {
        writes.add(name);
        grew = true;
      }
    }
  }
  return [...writes].filter((n) => fns.get(n)?.exported);
})();

/** Specifiers imported for their values (type-only imports are erased: they carry no behaviour). */
function valueImports(text: string): string[] {
  const code = stripComments(text).replace(/\bimport\s+type\s+[^;]*?\bfrom\s*["'][^"']+["']/g, "");
  return importSpecifiers(code);
}

/** Where a specifier leads: a src file (relative), or the specifier itself (node:*, a package). */
const target = (from: string, spec: string) => resolveImport(from, spec) ?? spec;

/** What decide.ts may not import, and index.ts neither: I/O (the view, the clients, the server) and node:*. */
function impure(file: string, spec: string): boolean {
  const to = target(file, spec);
  if (to.startsWith("node:")) return true;
  if (!to.startsWith(SRC)) return false;
  const r = relative(SRC, to);
  return ["headscale/view.ts", "headscale/client.ts", "headscale/http.ts"].includes(r) || r.startsWith("server/");
}

/** What breaks the roles of one composite kind's files; `files` replaces the disk (the self-test). */
function roleProblems(kind: string, files?: Map<string, string>): string[] {
  const dir = join(COMPOSITE, kind);
  const read = (f: string) => (files ? files.get(f) : existsSync(f) ? readFileSync(f, "utf8") : undefined);
  const all = files ? [...files.keys()] : tsFiles(dir);
  const problems: string[] = [];
  const say = (file: string, role: string) => problems.push(`${rel(file)}: ${role}`);

  const index = join(dir, "index.ts");
  const indexText = read(index) ?? "";
  const runSyncImported = valueImports(indexText).some((s) => target(index, s) === PIPELINE_RUN);
  if (!runSyncImported || !/\brunSync\s*\(/.test(stripComments(indexText)))
    say(index, "wiring — calls runSync imported from src/pipeline/run.ts");
  const indexIO = valueImports(indexText).filter(
    (s) => impure(index, s) || target(index, s).startsWith(join(SRC, "k8s")),
  );
  const indexCalls = /\bdeps\.views\b|\.view\(/.test(stripComments(indexText));
  if (indexIO.length || indexCalls) {
    const what = indexIO.length
      ? `imports ${indexIO.map((s) => rel(target(index, s)) || s).join(", ")}`
      : "uses deps.views";
    say(index, `wiring — no Headscale or k8s logic (${what})`);
  }

  const decide = join(dir, "decide.ts");
  const decideText = read(decide);
  if (decideText === undefined) say(decide, "pure — exists");
  else {
    const io = valueImports(decideText).filter((s) => impure(decide, s));
    if (io.length) {
      const names = io.map((s) => (target(decide, s).startsWith(SRC) ? rel(target(decide, s)) : s));
      say(decide, `pure — imports no view, client, server or node:* (imports ${names.join(", ")})`);
    }
    if (!/\bexport function decide\w*\s*\(/.test(stripComments(decideText)))
      say(decide, "pure — exports a decide function");
  }

  const writerCalls = (text: string) => [
    ...VIEW_WRITERS.filter((w) => new RegExp(`\\.${w}\\(`).test(text)),
    ...SHARED_WRITERS.filter((w) => new RegExp(`\\b${w}\\(`).test(text)),
  ];
  const writing = all.filter((f) => writerCalls(stripComments(read(f) ?? "")).length > 0);
  for (const role of ["plan", "act"]) {
    const file = join(dir, `${role}.ts`);
    if (writing.length && read(file) === undefined) say(file, `${role} — exists (the kind writes to Headscale)`);
  }

  const finalize = join(
    dir,
    existsSync(join(dir, "finalize.ts")) || files?.has(join(dir, "finalize.ts")) ? "finalize.ts" : "index.ts",
  );
  const finalizeText = read(finalize) ?? "";
  const runnerImported = valueImports(finalizeText).some((s) => target(finalize, s) === PIPELINE_FINALIZE);
  if (!runnerImported || !/\brunFinalize\s*\(/.test(stripComments(finalizeText)))
    say(finalize, "finalize — runs through runFinalize (src/pipeline/finalize.ts)");
  for (const f of all) {
    if (/\bFINALIZE_RESYNC_SECONDS\s*=/.test(stripComments(read(f) ?? "")))
      say(f, "finalize — no resync constant of its own (src/pipeline/finalize.ts has it)");
  }

  for (const f of writing) {
    if (f === join(dir, "act.ts")) continue;
    say(f, `act — only act.ts calls a Headscale write (${writerCalls(stripComments(read(f) ?? "")).join(", ")})`);
  }
  return problems;
}
