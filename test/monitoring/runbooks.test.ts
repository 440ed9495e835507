/**
 * docs/OPERATIONS.md against the shipped monitoring: one runbook section per alert and no
 * section without an alert, runbook_url anchors that exist, every metric family documented and
 * no undocumented one, and every chart value the page names present in values.yaml.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { createRecordsMetrics } from "../../src/records/metrics.js";
import { chartDir, repoRoot } from "../chart/helm.js";
import { alertRules } from "./content.js";
import { FOREIGN_METRICS, knownMetrics } from "./known-metrics.js";

const doc = readFileSync(join(repoRoot, "docs", "OPERATIONS.md"), "utf8");

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function runbookHeadings(markdown: string): string[] {
  const start = markdown.indexOf("\n## Alert runbooks\n");
  assert.ok(start >= 0, "OPERATIONS.md has no '## Alert runbooks' section");
  const rest = markdown.slice(start + 1);
  const end = rest.indexOf("\n## ", 1);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^### (.+)$/gm)].map((m) => m[1].trim());
}

/** `a.{b,c}.d` → a.b.d, a.c.d */
function expandBraces(path: string): string[] {
  const m = /^(.*?)\{([^}]*)\}(.*)$/.exec(path);
  if (!m) return [path];
  return m[2].split(",").flatMap((alt) => expandBraces(`${m[1]}${alt.trim()}${m[3]}`));
}

describe("docs/OPERATIONS.md", () => {
  const rules = alertRules();
  const headings = runbookHeadings(doc);

  it("computes anchors as GitHub does", () => {
    assert.equal(anchorOf("TailnetOperatorDown"), "tailnetoperatordown");
    assert.equal(anchorOf("Who may create what"), "who-may-create-what");
    assert.equal(anchorOf("Ingress: HTTPS"), "ingress-https");
  });

  it("has a runbook section for every alert and none for an alert that does not exist", () => {
    assert.deepEqual([...headings].sort(), rules.map((r) => r.alert).sort());
  });

  it("every runbook_url points at its alert's section", () => {
    const anchors = new Set(headings.map(anchorOf));
    for (const rule of rules) {
      const url = new URL(rule.annotations.runbook_url);
      assert.ok(url.pathname.endsWith("/docs/OPERATIONS.md"), rule.annotations.runbook_url);
      assert.equal(url.hash, `#${anchorOf(rule.alert)}`);
      assert.ok(anchors.has(url.hash.slice(1)), `${rule.alert}: no heading for ${url.hash}`);
    }
  });

  it("every runbook section says what it means and what to do", () => {
    for (const name of headings) {
      const at = doc.indexOf(`### ${name}\n`);
      const next = doc.indexOf("\n### ", at + 1);
      const body = doc.slice(at, next < 0 ? undefined : next);
      for (const part of ["**Meaning.**", "**Diagnose.**", "**Fix.**"])
        assert.ok(body.includes(part), `${name}: ${part}`);
    }
  });

  it("documents every metric family and no other", () => {
    // a family is `tailnet_<...>`; a bare `tailnet` is a config field (the records sidecar's sources[].kubernetes)
    const documented = new Set([...doc.matchAll(/`(tailnet[a-z]*_[a-z_]*)`/g)].map((m) => m[1]));
    // the operator's and agent's families, and the records sidecar's (it runs next to Headscale, src/records)
    const records = createRecordsMetrics([], false).registry.getMetricsAsArray();
    const families = [
      ...[...knownMetrics().keys()].filter((n) => !FOREIGN_METRICS.has(n)),
      ...records.map((m) => (m as unknown as { name: string }).name),
    ];
    assert.deepEqual(
      families.filter((n) => !documented.has(n)),
      [],
      "families missing from the page",
    );
    assert.deepEqual(
      [...documented].filter((n) => !families.includes(n)).sort(),
      [],
      "names on the page that no code registers",
    );
  });

  it("names only chart values that exist", () => {
    const values = parse(readFileSync(join(chartDir, "values.yaml"), "utf8"));
    const roots = [
      "monitoring",
      "networkPolicy",
      "hookToken",
      "image",
      "images",
      "headscale",
      "rbac",
      "compositeControllers",
    ];
    const paths = [...doc.matchAll(/`([a-zA-Z]+(?:\.[a-zA-Z{},]+)+)`/g)]
      .map((m) => m[1])
      .filter((p) => roots.includes(p.split(".")[0]))
      .flatMap(expandBraces);
    assert.ok(paths.length > 10, `only ${paths.length} value paths found`);
    for (const path of paths) {
      let node: unknown = values;
      for (const key of path.split(".")) {
        assert.ok(node && typeof node === "object" && key in node, `${path} is not in values.yaml`);
        node = (node as Record<string, unknown>)[key];
      }
    }
  });
});
