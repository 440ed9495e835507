import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConfigError, checkHookAuth, configFrom } from "../../src/config.js";
import { ByteBudget, containerMemory, hookLimits, RESERVE_BYTES } from "../../src/server/limits.js";

const MiB = 1024 * 1024;
const files = (m: Record<string, string>) => (p: string) => {
  if (p in m) return m[p];
  throw new Error("ENOENT");
};

describe("hook limits from the container's memory", () => {
  it("reads cgroup v2 memory.max, then v1 limit_in_bytes, then the V8 heap limit", () => {
    assert.deepEqual(containerMemory(files({ "/sys/fs/cgroup/memory.max": "402653184\n" })), {
      bytes: 402653184,
      source: "cgroup v2 memory.max",
    });
    // "max" (v2) and the page-rounded 2^63 (v1) mean no limit
    const v1 = containerMemory(
      files({ "/sys/fs/cgroup/memory.max": "max\n", "/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n" }),
    );
    assert.deepEqual(v1, { bytes: 268435456, source: "cgroup v1 memory.limit_in_bytes" });
    const none = containerMemory(files({ "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712" }));
    assert.equal(none.source, "V8 heap limit");
    assert.ok(none.bytes > 0);
  });

  it("the chart's 384Mi gives a 64 MiB budget; the Tailnet's 128 MiB limit bounds the transfer, not what is held", () => {
    const l = hookLimits(configFrom({}), { bytes: 384 * MiB, source: "cgroup v2 memory.max" });
    assert.equal(l.bodyBudgetBytes, 64 * MiB);
    // a Tailnet body is parsed as it arrives: the lease bounds what it holds (src/server/stream-body.ts)
    assert.equal(l.tailnetBodyLimitBytes, 128 * MiB);
    assert.equal(l.bodyLimitBytes, 8 * MiB);
    // the other kinds' limit is capped by what one request can draw
    const small = hookLimits(configFrom({}), { bytes: 60 * MiB, source: "cgroup v2 memory.max" });
    assert.equal(small.bodyLimitBytes, 10 * MiB - 63 * RESERVE_BYTES);
    assert.equal(small.tailnetBodyLimitBytes, 128 * MiB);
    // an explicit budget wins
    const set = hookLimits(configFrom({ hooks: { bodyBudgetBytes: 200 * MiB } }), {
      bytes: 384 * MiB,
      source: "V8 heap limit",
    });
    assert.equal(set.bodyBudgetBytes, 200 * MiB);
    assert.equal(set.tailnetBodyLimitBytes, 128 * MiB);
  });

  it("flags' environment overrides are validated; a budget below the reserves is refused", () => {
    assert.equal(configFrom({}, { HOOK_BODY_BUDGET_BYTES: String(32 * MiB) }).hooks.bodyBudgetBytes, 32 * MiB);
    assert.equal(configFrom({}, { HOOK_MAX_IN_FLIGHT: "8" }).hooks.maxInFlight, 8);
    assert.throws(
      () => configFrom({}, { HOOK_MAX_IN_FLIGHT: "x" }),
      /invalid HOOK_MAX_IN_FLIGHT: must be an integer 1-4096/,
    );
    assert.throws(
      () => configFrom({ hooks: { maxInFlight: 64, bodyBudgetBytes: 4 * MiB } }),
      /bodyBudgetBytes 4194304 is below maxInFlight 64 × 131072/,
    );
  });

  it("serve needs a token or the explicit opt-out", () => {
    assert.throws(() => checkHookAuth(configFrom({}), false), ConfigError);
    checkHookAuth(configFrom({}), true);
    checkHookAuth(configFrom({ hookToken: "0123456789abcdef" }), false);
  });
});

describe("the byte budget", () => {
  it("each request has its reserve; beyond it the shared pool, refused when spent, returned on close", () => {
    const b = new ByteBudget(4 * MiB, 4); // 512 KiB of reserves, 3.5 MiB shared
    const a = b.lease();
    const c = b.lease();
    assert.equal(a.take(RESERVE_BYTES), true);
    assert.equal(b.free, 3.5 * MiB);
    assert.equal(a.take(3 * MiB), true);
    assert.equal(c.take(MiB), false, "the pool has 0.5 MiB left");
    assert.equal(c.take(RESERVE_BYTES), true, "the reserve is always there");
    a.give(MiB);
    assert.equal(c.take(MiB), true);
    a.close();
    c.close();
    assert.equal(b.free, 3.5 * MiB);
  });
});
