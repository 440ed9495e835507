/**
 * The operator container's runtime environment (NODE_OPTIONS, glibc's MALLOC_*) is the same in the kustomize base
 * and the chart, and it is what the benches run (bench/pod-runtime.ts reads the base): a change to one that misses
 * the other would ship settings no bench measured.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { operatorPodEnv } from "../../bench/pod-runtime.js";

const CHART = new URL("../../manifests/chart/tailnet-operator/templates/deployment.yaml", import.meta.url);
const TUNED = ["NODE_OPTIONS", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"];

/** `- name: X` followed by `value: "Y"` in the chart template (literal entries only). */
function chartEnv(): Record<string, string> {
  const text = readFileSync(CHART, "utf8");
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/- name: ([A-Z_]+)\n\s+value: "([^"]*)"/g)) out[m[1]] = m[2];
  return out;
}

describe("operator runtime environment", () => {
  it("the base Deployment sets the young generation and malloc tunables the memory figures were measured with", () => {
    const env = operatorPodEnv();
    assert.deepEqual(
      TUNED.map((k) => [k, env[k]]),
      [
        ["NODE_OPTIONS", "--max-semi-space-size=4"],
        ["MALLOC_ARENA_MAX", "2"],
        ["MALLOC_MMAP_THRESHOLD_", "131072"],
        ["MALLOC_TRIM_THRESHOLD_", "131072"],
      ],
    );
    // secrets never appear as literal values: the hook token stays a secretKeyRef
    assert.equal(env.HOOK_TOKEN, undefined);
  });

  it("the chart's Deployment sets the same values", () => {
    const base = operatorPodEnv();
    const chart = chartEnv();
    for (const k of TUNED) assert.equal(chart[k], base[k], k);
  });

  it("another copy of the manifest can be read (the starting commit's, for a before and after)", () => {
    const env = operatorPodEnv(new URL("../../manifests/base/operator.yaml", import.meta.url));
    assert.equal(env.MALLOC_ARENA_MAX, "2");
    const dir = mkdtempSync(join(tmpdir(), "runtime-env-"));
    writeFileSync(join(dir, "operator.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n");
    assert.throws(() => operatorPodEnv(join(dir, "operator.yaml")), /no Deployment with an "operator" container/);
  });
});
