/**
 * The records sidecar's config (src/records/config.ts): the defaults, and every error naming its field —
 * all errors of a file at once, so one edit fixes them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDuration, parseRecordsConfig } from "../../src/records/config.js";

const base = { output: "/var/lib/r/records.json", baseDomain: "TS.Example.com." };

describe("records config", () => {
  it("fills the defaults: state next to the file, Headscale's prefixes, 15s, every name below the base domain", () => {
    const c = parseRecordsConfig({ ...base, sources: [{ name: "a", kubernetes: { tailnet: "home" } }] });
    assert.equal(c.statePath, "/var/lib/r/.records.json.state.json");
    assert.equal(c.baseDomain, "ts.example.com");
    assert.deepEqual(
      c.prefixes.map((p) => p.text),
      ["100.64.0.0/10", "fd7a:115c:a1e0::/48"],
    );
    assert.deepEqual([c.intervalMs, c.timeoutMs, c.maxRecords, c.port], [15_000, 10_000, 10_000, 9091]);
    assert.deepEqual(c.sources[0].names, ["*.ts.example.com"]);
    assert.deepEqual(c.sources[0].spec, {
      kind: "kubernetes",
      kubeconfig: undefined,
      context: undefined,
      namespace: "tailnet-system",
      configMap: "tailnet-home-dns-records",
      key: "records.json",
    });
  });

  it("lists every error, each naming its field", () => {
    assert.throws(
      () =>
        parseRecordsConfig({
          output: "/r/records.json",
          baseDomain: "ts.test",
          prefixes: ["100.64.0.1/10"],
          interval: "100ms",
          port: 70000,
          bogus: 1,
          sources: [
            { name: "a", file: "/a.json", kubernetes: { tailnet: "home" } },
            { name: "a", file: "relative.json" },
            { name: "b", names: ["*.c.ts.test", "x.other.test"], kubernetes: { kubeconfig: "k", namespace: "" } },
          ],
        }),
      (e: Error) => {
        assert.equal(
          e.message,
          [
            "records config:",
            "  bogus: unknown field",
            "  prefixes: 100.64.0.1/10 has non-address bits set; expected 100.64.0.0/10",
            '  interval: a duration of at least 1s ("15s", "1m")',
            "  port: 0..65535",
            "  sources[0]: set one of kubernetes and file, not both",
            "  sources[1].name: a is listed twice",
            "  sources[1].file: an absolute path",
            '  sources[2].names: "x.other.test" is not below the base domain ts.test',
            "  sources[2].kubernetes.namespace: a non-empty string",
            "  sources[2].kubernetes.tailnet: the Tailnet's name (its ConfigMap tailnet-<name>-dns-records)",
            "  sources[2].kubernetes.kubeconfig: an absolute path",
          ].join("\n"),
        );
        return true;
      },
    );
  });

  it("parses durations strictly", () => {
    assert.deepEqual(["500ms", "15s", "2m", "1h", "1.5s", " 1s", 15].map(parseDuration), [
      500,
      15_000,
      120_000,
      null,
      null,
      null,
      null,
    ]);
  });
});
