/**
 * The operator container's runtime environment (NODE_OPTIONS, glibc's MALLOC_*) is what the benches run
 * (bench/pod-runtime.ts reads the kustomize base); test/chart/chart.test.ts holds the chart's rendered Deployment to
 * the same values, so neither can ship settings no bench measured.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { operatorPodEnv } from "../../bench/pod-runtime.js";

const TUNED = ["NODE_OPTIONS", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"];

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

  it("another copy of the manifest can be read (the starting commit's, for a before and after)", () => {
    const env = operatorPodEnv(new URL("../../manifests/base/operator.yaml", import.meta.url));
    assert.equal(env.MALLOC_ARENA_MAX, "2");
    const dir = mkdtempSync(join(tmpdir(), "runtime-env-"));
    writeFileSync(join(dir, "operator.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n");
    assert.throws(() => operatorPodEnv(join(dir, "operator.yaml")), /no Deployment with an "operator" container/);
  });
});
