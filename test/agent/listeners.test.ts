// Listen port 0 (tests) takes whatever port the kernel hands out on the listen host, and the refuser then needs
// the same number on refuseHost, where an outgoing socket may already hold it (a slow-suite flake: EADDRINUSE).
// startListeners binds everything again then, a bounded number of times; a configured port is never retried.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { createConnectionBudget } from "../../src/agent/forward.js";
import { startListeners } from "../../src/agent/listeners.js";
import type { AgentLogger } from "../../src/agent/log.js";
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { validateAgentConfig } from "../../src/contract/agent-config.js";

function common(host: string) {
  const warnings: unknown[] = [];
  const log: AgentLogger = { debug() {}, info() {}, warn: (_m, f) => warnings.push(f), error() {} };
  const metrics = createAgentMetrics(["db"], { defaultMetrics: false });
  return {
    warnings,
    common: { listenHost: host, budget: createConnectionBudget(8), idleTimeoutMs: 1000, metrics, log },
  };
}

const egress = (listenPort: number, refuseHost: string) =>
  validateAgentConfig({
    role: "egress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    refuseHost,
    targets: [{ name: "db", host: "db-1", ports: [{ port: 5432, listenPort }] }],
  });

test("an ephemeral port the refuser cannot have is bound again, at most 5 times in all, then the bind error", async () => {
  // the refuser on the listen host itself: every ephemeral port clashes, so every attempt fails
  const { warnings, common: c } = common("127.0.0.1");
  await assert.rejects(
    startListeners(egress(0, "127.0.0.1"), c, () => undefined),
    /\(refuse\) for db: EADDRINUSE/,
  );
  assert.deepEqual(warnings, [{ attempt: 1 }, { attempt: 2 }, { attempt: 3 }, { attempt: 4 }]);
});

test("a configured port is never retried: its clash is the error at once", async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", () => resolve()));
  const port = (holder.address() as { port: number }).port;
  try {
    const { warnings, common: c } = common("127.0.0.2");
    await assert.rejects(
      startListeners(egress(port, "127.0.0.1"), c, () => undefined),
      /EADDRINUSE/,
    );
    assert.deepEqual(warnings, []);
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});

test("without a clash an ephemeral port binds once, on both hosts", async () => {
  const { warnings, common: c } = common("127.0.0.2");
  const listeners = await startListeners(egress(0, "127.0.0.1"), c, () => undefined);
  try {
    const bound = listeners.ports.targets[0].ports[0].listenPort;
    assert.ok(bound > 0);
    assert.deepEqual(warnings, []);
  } finally {
    await listeners.close(0);
  }
});
