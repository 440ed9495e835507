import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ConfigError, configFrom, DEFAULT_CONFIG, loadConfig } from "../src/config.js";

describe("operator config", () => {
  it("defaults without a file", () => {
    assert.deepEqual(loadConfig(undefined, {}), DEFAULT_CONFIG);
  });
  it("tailscale containers send no logs to Tailscale unless switched off", () => {
    assert.equal(DEFAULT_CONFIG.tailscale.noLogsNoSupport, true);
    assert.equal(configFrom({ tailscale: { noLogsNoSupport: false } }, {}).tailscale.noLogsNoSupport, false);
  });
  it("environment overrides", () => {
    const c = configFrom(
      {},
      { PORT: "9090", OPERATOR_NAMESPACE: "ops", HOOK_TOKEN: "t".repeat(20), LOG_LEVEL: "warn" },
    );
    assert.deepEqual([c.port, c.operatorNamespace, c.hookToken, c.logLevel], [9090, "ops", "t".repeat(20), "warn"]);
  });
  it("the cluster name: default, file, environment (the CLI's --cluster-name sets TAILNET_CLUSTER_NAME)", () => {
    assert.equal(DEFAULT_CONFIG.clusterName, "default");
    assert.equal(configFrom({ clusterName: "eu-1" }, {}).clusterName, "eu-1");
    assert.equal(configFrom({ clusterName: "eu-1" }, { TAILNET_CLUSTER_NAME: "us-2" }).clusterName, "us-2");
    assert.throws(
      () => configFrom({}, { TAILNET_CLUSTER_NAME: "EU_1" }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.message ===
          `invalid TAILNET_CLUSTER_NAME: "EU_1" is not a DNS label (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)`,
    );
  });
  it("merges a partial file with the defaults", () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    const file = join(dir, "c.yaml");
    writeFileSync(
      file,
      "headscale: { timeoutSeconds: 3 }\nmonitoring:\n  podMonitor:\n    scrapeFrom:\n      - namespaceSelector: { matchLabels: { a: b } }\n",
    );
    const c = loadConfig(file, {});
    assert.equal(c.headscale.timeoutSeconds, 3);
    assert.equal(c.headscale.cacheTTLSeconds, 10);
    assert.deepEqual(c.monitoring.podMonitor.scrapeFrom, [{ namespaceSelector: { matchLabels: { a: "b" } } }]);
  });
  const bad: [string, unknown, string][] = [
    [
      "unknown field",
      { headscale: { timeout: 5 } },
      "invalid operator config: headscale.timeout: must NOT have additional properties",
    ],
    [
      "wrong type",
      { headscale: { timeoutSeconds: "5" } },
      "invalid operator config: headscale.timeoutSeconds: must be integer",
    ],
    [
      "a non-boolean tailscale.noLogsNoSupport",
      { tailscale: { noLogsNoSupport: "yes" } },
      "invalid operator config: tailscale.noLogsNoSupport: must be boolean",
    ],
    [
      "a cluster name that is not a DNS label",
      { clusterName: "-eu" },
      'invalid operator config: clusterName: must match pattern "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"',
    ],
    [
      "bad namespace",
      { operatorNamespace: "Bad_NS" },
      'invalid operator config: operatorNamespace: must match pattern "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"',
    ],
  ];
  for (const [name, raw, message] of bad) {
    it(`rejects ${name}, naming the field`, () => {
      assert.throws(
        () => configFrom(raw, {}),
        (e: unknown) => e instanceof ConfigError && e.message === message,
      );
    });
  }
  it("an invalid file makes serve exit non-zero naming the field", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    const file = join(dir, "c.yaml");
    writeFileSync(file, "images: { agent: 3 }\n");
    const { spawnSync } = await import("node:child_process");
    const r = spawnSync(process.execPath, ["--import", "tsx", "src/cli.ts", "serve", "--config", file], {
      encoding: "utf8",
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /invalid operator config: images\.agent: must be string/);
  });
  it("HOOK_TOKEN is trimmed (a Secret made with echo or --from-file ends in a newline)", () => {
    assert.equal(configFrom({}, { HOOK_TOKEN: `${"t".repeat(20)}\n` }).hookToken, "t".repeat(20));
  });
  for (const [name, value, length] of [
    ["short", "abcde", 5],
    ["long only with its newline", `${"t".repeat(15)}\n`, 15],
    ["whitespace", " \n", 0],
  ] as const) {
    it(`a ${name} HOOK_TOKEN is refused, naming the minimum`, () => {
      assert.throws(
        () => configFrom({}, { HOOK_TOKEN: value }),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.message ===
            `invalid HOOK_TOKEN: must be at least 16 characters (without surrounding whitespace), got ${length}`,
      );
    });
  }
  it("serve exits non-zero on a short HOOK_TOKEN, naming the problem and not the token", async () => {
    const { spawnSync } = await import("node:child_process");
    const r = spawnSync(process.execPath, ["--import", "tsx", "src/cli.ts", "serve"], {
      encoding: "utf8",
      env: { ...process.env, HOOK_TOKEN: "s3cr3t", PORT: "0" },
      timeout: 30_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /invalid HOOK_TOKEN: must be at least 16 characters/);
    assert.ok(!r.stderr.includes("s3cr3t"), "the token must not be printed");
  });
});
