/**
 * docs/OPERATIONS.md's records sidecar section says what the code does: the metrics table lists exactly the
 * families the sidecar registers, with their labels; the config table lists exactly the fields the config
 * accepts (an unknown one is refused); the refusal reasons named are the code's.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parseRecordsConfig } from "../../src/records/config.js";
import { createRecordsMetrics } from "../../src/records/metrics.js";
import { REFUSALS } from "../../src/records/validate.js";

const ops = readFileSync(new URL("../../docs/OPERATIONS.md", import.meta.url), "utf8");
const section = ops.split("\n## Headscale outside the operator's namespace or cluster\n")[1]?.split("\n## ")[0] ?? "";
const rows = (text: string, first: RegExp) =>
  text
    .split("\n")
    .filter((l) => first.test(l))
    .map((l) => l.split("|").map((c) => c.trim()));

describe("OPERATIONS.md: the records sidecar", () => {
  it("has the section", () => {
    assert.ok(section.length > 1000);
  });

  it("lists every metric family the sidecar registers, with its type and labels", async () => {
    const metrics = createRecordsMetrics(["a"], false);
    const families = (await metrics.registry.getMetricsAsJSON()).map((m) => {
      const { labelNames } = metrics.registry.getSingleMetric(m.name) as unknown as { labelNames: string[] };
      return [m.name, String(m.type), labelNames.join(", ")];
    });
    const documented = rows(ops, /^\| `tailnet_records_/).map(([, name, type, labels]) => [
      name.replaceAll("`", ""),
      type,
      labels,
    ]);
    assert.deepEqual(documented.sort(), families.sort());
  });

  it("lists every config field, and the config refuses any other", () => {
    const documented = rows(section, /^\| `[a-zA-Z[\]. ]+` \|/).map(([, f]) => f.replaceAll("`", ""));
    const top = documented.filter((f) => !f.startsWith("sources[]")).sort();
    assert.deepEqual(top, ["baseDomain", "interval", "maxRecords", "output", "port", "prefixes", "state", "timeout"]);
    assert.deepEqual(documented.filter((f) => f.startsWith("sources[]")).sort(), [
      "sources[].file",
      "sources[].kubernetes",
      "sources[].name",
      "sources[].names",
    ]);
    const base = { output: "/r/records.json", baseDomain: "ts.test", sources: [{ name: "a", file: "/r/a.json" }] };
    const values: Record<string, unknown> = {
      baseDomain: "ts.test",
      interval: "15s",
      maxRecords: 10,
      output: "/r/records.json",
      port: 9091,
      prefixes: ["100.64.0.0/10"],
      state: "/r/state.json",
      timeout: "1s",
    };
    assert.doesNotThrow(() => parseRecordsConfig({ ...base, ...values }));
    assert.throws(() => parseRecordsConfig({ ...base, extraRecords: true }), /extraRecords: unknown field/);
  });

  it("names every refusal reason the code has", () => {
    for (const r of REFUSALS) assert.ok(section.includes(`\`${r}\``), r);
  });
});
