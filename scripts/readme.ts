/**
 * The README's output blocks, computed: every ```console block that follows a ```sh block is what
 * that block's commands print.
 *  - After `npx tailnet-operator render …`: the command's own output, run in process.
 *  - After `kubectl apply -f - <<'YAML' … YAML` or `kubectl patch tailnet …`: `kubectl get` of every
 *    object applied so far, its columns taken from the CRDs' printer columns and the status `render`
 *    computes for those objects against the Headscale of examples/egress (the AGE column, which only a
 *    cluster knows, is shown as 1m).
 * test/readme/readme.test.ts fails when a block differs; `npx tsx scripts/readme.ts` rewrites them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";
import { KINDS } from "../src/api/schemas.js";
import type { K8sObject } from "../src/k8s/objects.js";
import { EXAMPLES_NOW } from "../src/render/examples.js";
import { type RenderResult, runRender } from "../src/render/main.js";

export const root = fileURLToPath(new URL("../", import.meta.url));

/** The README's walkthrough runs against this Headscale and these agents. */
const WALKTHROUGH_WORLD = ["--headscale", "examples/egress/snapshot.json", "--agents", "examples/egress/agents.json"];

async function renderCapture(args: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await runRender(
    args.map((a) => (a.startsWith("examples/") ? `${root}${a}` : a)),
    (s) => {
      out += s;
    },
  );
  return { code, out };
}

/** The shell words of a README command line (no quoting inside render commands). */
const words = (line: string) => line.trim().split(/\s+/);

/** Just enough JSONPath for our printer columns: `.a.b`, `.a[0]`, `.conditions[?(@.type=="X")].reason`. */
export function jsonPath(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const m of path.matchAll(/\.(\w+)|\[(\d+)\]|\[\?\(@\.(\w+)=="([^"]*)"\)\]/g)) {
    if (cur === undefined || cur === null) return "";
    if (m[1]) cur = (cur as Record<string, unknown>)[m[1]];
    else if (m[2]) cur = (cur as unknown[])[Number(m[2])];
    else cur = ((cur as Record<string, unknown>[]) ?? []).find((x) => x?.[m[3]] === m[4]);
  }
  return cur === undefined || cur === null ? "" : String(cur);
}

/** kubectl's table: columns separated by at least three spaces, the last one unpadded. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] + 3))).join("")).join("\n");
}

async function kubectlGet(objects: K8sObject[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "readme-"));
  try {
    writeFileSync(join(dir, "objects.yaml"), objects.map((o) => stringify(o)).join("---\n"));
    const { out } = await renderCapture(["-f", dir, ...WALKTHROUGH_WORLD, "--now", EXAMPLES_NOW, "-o", "json"]);
    const result = JSON.parse(out) as RenderResult;
    const lines: string[] = [];
    for (const info of KINDS) {
      const rendered = result.objects.filter((o) => o.kind === info.kind);
      if (!rendered.length) continue;
      const namespaces = [...new Set(rendered.map((o) => o.namespace ?? ""))];
      for (const ns of namespaces) {
        lines.push(ns ? `$ kubectl -n ${ns} get ${info.shortName}` : `$ kubectl get ${info.singular}`);
        const header = ["NAME", ...info.printerColumns.map((c) => c.name)];
        const rows = rendered
          .filter((o) => (o.namespace ?? "") === ns)
          .map((o) => {
            const input = objects.find((i) => i.kind === o.kind && i.metadata.name === o.name);
            const full = { ...input, status: o.status };
            return [o.name, ...info.printerColumns.map((c) => (c.name === "AGE" ? "1m" : jsonPath(full, c.jsonPath)))];
          });
        lines.push(table([header, ...rows]));
      }
    }
    return `${lines.join("\n")}\n`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target && typeof target === "object" && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export interface Block {
  lang: string;
  body: string;
  /** offsets of the body inside the README text */
  start: number;
  end: number;
}

export function blocks(text: string): Block[] {
  return [...text.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => {
    const start = (m.index ?? 0) + 3 + m[1].length + 1;
    return { lang: m[1], body: m[2], start, end: start + m[2].length };
  });
}

/** The README with every computed block recomputed. */
export async function syncReadme(text: string): Promise<string> {
  const bs = blocks(text);
  const replacements: { start: number; end: number; body: string }[] = [];
  let state: K8sObject[] = [];
  for (let i = 0; i < bs.length; i++) {
    const b = bs[i];
    if (b.lang !== "sh") continue;
    let computed: Promise<string> | undefined;
    for (const m of b.body.matchAll(/kubectl apply -f - <<'YAML'\n([\s\S]*?)\nYAML/g)) {
      for (const doc of parseAllDocuments(m[1])) {
        const o = doc.toJSON() as K8sObject;
        state = [
          ...state.filter(
            (s) =>
              !(
                s.kind === o.kind &&
                s.metadata.name === o.metadata.name &&
                s.metadata.namespace === o.metadata.namespace
              ),
          ),
          o,
        ];
      }
      computed = undefined;
    }
    for (const m of b.body.matchAll(/kubectl patch (\w+) (\S+) --type merge -p '([^']*)'/g)) {
      const info = KINDS.find((k) => k.singular === m[1] || k.shortName === m[1] || k.plural === m[1]);
      state = state.map((o) =>
        o.kind === info?.kind && o.metadata.name === m[2] ? (mergePatch(o, JSON.parse(m[3])) as K8sObject) : o,
      );
    }
    const renderLine = b.body
      .split("\n")
      .filter((l) => l.trim())
      .at(-1);
    if (renderLine?.startsWith("npx tailnet-operator render ")) {
      computed = renderCapture(words(renderLine).slice(3)).then((r) => r.out);
    } else if (/kubectl (apply -f - <<'YAML'|patch \w+ )/.test(b.body)) {
      computed = kubectlGet(state);
    }
    const next = bs[i + 1];
    if (computed && next?.lang === "console") {
      replacements.push({ start: next.start, end: next.end, body: await computed });
    }
  }
  let out = text;
  for (const r of replacements.reverse()) out = out.slice(0, r.start) + r.body + out.slice(r.end);
  return out;
}

if (process.argv[1] && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  const file = join(root, "README.md");
  const before = readFileSync(file, "utf8");
  const after = await syncReadme(before);
  writeFileSync(file, after);
  process.stdout.write(before === after ? "README.md: every block is current\n" : "README.md: blocks rewritten\n");
}
