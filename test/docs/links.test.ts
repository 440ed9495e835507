/**
 * Every relative link in the README and the docs reaches a file that exists, and every `#anchor` a
 * heading of the page it names (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens,
 * repeats numbered). Code blocks and code spans are not links.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, it } from "node:test";
import { repoRoot } from "../chart/helm.js";

function markdownFiles(dir: string): string[] {
  return readdirSync(join(repoRoot, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(repoRoot, path)).isDirectory()) return markdownFiles(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

const PAGES = [
  "README.md",
  "monitoring/README.md",
  "manifests/chart/tailnet-operator/README.md",
  "test/real/README.md",
  ...markdownFiles("docs"),
  ...markdownFiles("examples"),
].sort();

/** The text without fenced blocks and code spans, where `](` is not a link. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");

export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export function brokenLinks(page: string, read: (path: string) => string | undefined): string[] {
  const text = read(page);
  if (text === undefined) return [`${page}: missing`];
  const problems: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const link = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
    const [path, anchor] = link.split("#", 2);
    const target = path ? normalize(join(dirname(page), path)) : page;
    if (target.startsWith("..")) {
      problems.push(`${page}: ${link} leaves the repository`);
      continue;
    }
    const body = read(target);
    if (body === undefined) {
      if (!existsSync(join(repoRoot, target))) problems.push(`${page}: ${link} → ${target} does not exist`);
      continue;
    }
    if (anchor && target.endsWith(".md") && !anchorsOf(body).has(anchor))
      problems.push(`${page}: ${link} → no heading #${anchor} in ${target}`);
  }
  return problems;
}

const readRepo = (path: string) => {
  const full = join(repoRoot, path);
  return existsSync(full) && statSync(full).isFile() ? readFileSync(full, "utf8") : undefined;
};

describe("links in the README and docs", () => {
  it("finds broken files and anchors, and skips code", () => {
    const pages: Record<string, string> = {
      "docs/a.md":
        "# Top\n## Same\n## Same\nsee [b](b.md#intro), [gone](gone.md), [up](../../x.md), [self](#same-1), [bad](#nope)\n`[x](y.md)`\n```\n[z](z.md)\n```\n",
      "docs/b.md": "# Intro\n",
    };
    assert.deepEqual(
      brokenLinks("docs/a.md", (p) => pages[relative(".", p)]),
      [
        "docs/a.md: gone.md → docs/gone.md does not exist",
        "docs/a.md: ../../x.md leaves the repository",
        "docs/a.md: #nope → no heading #nope in docs/a.md",
      ],
    );
  });

  it(`every relative link of ${PAGES.length} pages resolves`, () => {
    assert.ok(PAGES.length > 20, `only ${PAGES.length} pages`);
    assert.deepEqual(
      PAGES.flatMap((page) => brokenLinks(page, readRepo)),
      [],
    );
  });
});
