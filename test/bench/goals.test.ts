// The goal table of `npm run bench` (bench/goals.ts): each row PASS, NOT MET or NOT MEASURED from the figures,
// never a PASS for a section that did not run.
import assert from "node:assert/strict";
import test from "node:test";
import type { AgentBench } from "../../bench/agent/cases.js";
import type { H2Bench } from "../../bench/agent/h2.js";
import { goalRows, goalTableRows } from "../../bench/goals.js";
import type { RealBench } from "../../bench/real.js";
import type { SoakResult } from "../../bench/soak.js";
import type { ScaleBench } from "../../bench/tailnet-scale.js";

const real = {
  throughputRatio: 0.96,
  agent: { bytesPerSecond: 0.9, connectP50ms: 2, connectP99ms: 20 },
  socks: { bytesPerSecond: 1, connectP50ms: 2, connectP99ms: 10 },
  bare: { bytesPerSecond: 1, connectP50ms: 2, connectP99ms: 10 },
} as RealBench;
const agent = {
  vsHaproxy: { throughput: 0.94, setupP50: 1.2, setupP99: 1, cpuPerGiB: 1, cpuPerConnection: 1 },
  httpsVsHaproxy: { rps: 1.01, cpuPerRequest: 1.3 },
} as AgentBench;
const soak = {
  rows: [
    {
      parents: 20_001,
      loop: { "steady+tailnet": { p99: 19.5 } },
      eventLoopP99ms: 40,
      peakRssMiB: 300,
      steady: { peakRssMiB: 257, medianRoundSeconds: 30 },
    } as unknown as SoakResult,
  ],
};
// the row with V8's own heap is not the pod's: the goal reads the pod's row
const scale = {
  rows: [
    { workloads: 20_000, peakRssMiB: 460, status: 200, pod: false },
    { workloads: 20_000, peakRssMiB: 380, status: 200, pod: true },
  ],
} as unknown as ScaleBench;

test("every goal row reads its figure and compares it with the goal", () => {
  const h2 = {
    agent: { h2: { rps: 500 }, grpc: { rps: 300 } },
    haproxy: { h2: { rps: 1000 }, grpc: { rps: 1000 } },
  } as H2Bench;
  const rows = goalRows({ real, agent, soak, scale, h2 });
  const verdict = Object.fromEntries(rows.map((r) => [r.row, r.met]));
  assert.deepEqual(Object.values(verdict), [
    true,
    false,
    false,
    false,
    true,
    true,
    false,
    true,
    false,
    true,
    "reported",
    "reported",
  ]);
  assert.deepEqual(
    rows.slice(10).map((r) => r.value),
    ["0.50", "0.30"],
    "HTTP/2 and gRPC: agent ÷ HAProxy, no goal",
  );
  assert.equal(rows[1].value, "0.90", "the floor row is agent ÷ the bare relay of the same run");
  assert.equal(rows[2].value, "2.00", "connect p99 is agent ÷ SOCKS5");
  assert.equal(rows[7].value, "19.5", "the loop goal reads the steady rounds with the Tailnet's syncs");
  assert.equal(rows[8].value, "257.0", "the RSS goal reads the steady rounds' peak, not the install's");
  assert.equal(rows[9].value, "380.0", "the Tailnet's RSS goal reads the row run with the pod's heap and budget");
});

test("a Tailnet sync the pod's limits refuse is NOT MET, whatever its RSS", () => {
  const refused = {
    rows: [{ workloads: 20_000, peakRssMiB: 120, status: 413, pod: true }],
  } as unknown as ScaleBench;
  const row = goalRows({ scale: refused })[9];
  assert.deepEqual([row.value, row.met], ["HTTP 413", false]);
});

test("a section that did not run is NOT MEASURED, never PASS", () => {
  const rows = goalTableRows(goalRows({ real: { notMeasured: "no root" } }));
  assert.equal(rows.length, 12);
  for (const [, text] of rows) assert.match(text, /^not measured \(goal .*\): NOT MEASURED$/);
});
