/**
 * Agent stress, scaled down to run on every `npm test` (`npm run stress` runs bench/stress.ts at 10,000
 * connections): one ingress agent, started through the real CLI in its own process, takes 1,000 concurrent
 * connections against a limit of 500 while 50 TLS slowloris clients, 16 clients pushing into a backend that
 * never reads, and 10 loops against a target that resets are running. A healthy TCP client and a healthy HTTPS
 * keep-alive client, connected first, must keep getting answers; /healthz must stay 200; the limit must hold
 * and every refusal be counted; memory must stay under the container's 256 MiB; and once everything closed,
 * the whole budget must be free again (a refill of 500 connections all echo).
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { POD_HEAP, runAgentStress, type StressOptions, type StressReport } from "../../bench/stress.js";

const options: StressOptions = {
  clients: 1000,
  batch: 250,
  holdMs: 1500,
  maxConnections: 500,
  headerTimeoutSeconds: 1,
  idleTimeoutSeconds: 5,
  slowloris: 50,
  stalled: 16,
  resetters: 10,
  memoryLimitMiB: 256,
  agentNodeArgs: [POD_HEAP],
};

describe("agent under a connection flood, slowloris, a never-reading backend and a resetting target", () => {
  let report: StressReport;
  before(async () => {
    report = await runAgentStress(options);
  });

  it("never has more connections open than limits.maxConnections, and the flood did reach it", () => {
    assert.ok(report.maxActiveSeen <= options.maxConnections, `connections_active peaked at ${report.maxActiveSeen}`);
    assert.ok(report.flood.refused > 0, "the flood was never refused: the limit was not reached");
    assert.ok(
      report.flood.echoed > 0 && report.flood.echoed <= options.maxConnections,
      `${report.flood.echoed} admitted`,
    );
  });

  it("counts every refused flood connection in connections_rejected_total (or dial_errors_total)", () => {
    assert.equal(report.rejected.echo, report.flood.refused);
    assert.ok(report.rejected.total >= report.rejected.echo);
  });

  it("keeps the healthy TCP and HTTPS clients flowing during the flood, with correct bytes", () => {
    assert.equal(report.healthy.tcpMismatches, 0);
    assert.ok(report.healthy.tcpDuringFlood > 0, "no TCP echo came back during the flood");
    assert.equal(report.healthy.httpsFailed, 0);
    assert.ok(report.healthy.httpsDuringFlood > 0, "no HTTPS answer came back during the flood");
  });

  it("answers /healthz 200 throughout", () => {
    assert.ok(report.healthz.checks > 0);
    assert.equal(report.healthz.failures, 0);
  });

  it("closes every slowloris client itself (handshake and header timeout)", () => {
    assert.equal(report.slowloris.closedByAgent, report.slowloris.total);
  });

  it("passes every reset of the resetting target on to its client (no hung connection)", () => {
    assert.ok(report.resets.attempts > 0);
    assert.equal(report.resets.completed, report.resets.attempts);
  });

  it("frees the slots of streams stuck behind the never-reading backend once their clients left", () => {
    assert.ok(report.stalled.readByAgentMiB > 0, "the agent never read from the stalled clients");
    assert.equal(report.activeAfter, 0, "connections_active is not 0 after every client closed");
  });

  it("stays under the agent container's memory limit", () => {
    assert.ok(
      report.memory.peakRssMiB < options.memoryLimitMiB,
      `peak RSS ${report.memory.peakRssMiB.toFixed(0)} MiB (settled ${report.memory.settledRssMiB.toFixed(0)} MiB)`,
    );
  });

  it("has its whole budget back afterwards: a refill of maxConnections connections is all echoed", () => {
    assert.equal(report.refill.echoed, options.maxConnections);
    assert.equal(report.refill.newlyRejected, 0);
  });

  it("logs no warning or error", () => {
    assert.deepEqual(report.agentProblems, []);
  });
});
