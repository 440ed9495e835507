/**
 * The chart is the single source of the alerts, the dashboard and the monitoring objects; the
 * committed copies for kustomize and plain Prometheus must be exactly what it renders.
 * On failure: `npx tsx test/monitoring/generate.ts`, then review the diff.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { repoRoot } from "../chart/helm.js";
import { generatedFiles } from "./generated.js";

describe("rendered copies of the chart's monitoring content", () => {
  const files = generatedFiles();

  for (const [path, text] of files) {
    it(`${path} is up to date`, () => {
      const full = join(repoRoot, path);
      assert.ok(existsSync(full), `${path} is missing: run npx tsx test/monitoring/generate.ts`);
      assert.equal(readFileSync(full, "utf8"), text, `${path} is stale: run npx tsx test/monitoring/generate.ts`);
    });
  }

  it("the kustomize PrometheusRule carries the same groups as monitoring/rules.yaml", () => {
    const text = (p: string) => files.find(([path]) => path === p)?.[1] ?? "";
    const ruleFile = parse(text("monitoring/rules.yaml"));
    const prometheusRule = parse(text("manifests/components/monitoring/prometheusrule.yaml"));
    assert.deepEqual(prometheusRule.spec, ruleFile);
  });

  it("the copies carry no Helm release labels", () => {
    for (const [path, text] of files) {
      assert.doesNotMatch(text, /helm\.sh\/chart|app\.kubernetes\.io\/managed-by|app\.kubernetes\.io\/instance/, path);
    }
  });
});
