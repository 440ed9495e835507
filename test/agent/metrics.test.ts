import assert from "node:assert/strict";
import { test } from "node:test";
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { sample } from "./helpers.js";

test("every configured name has its series before any traffic; default process metrics are included", async () => {
  const metrics = createAgentMetrics(["postgres", "web"]);
  const text = await metrics.registry.metrics();
  for (const name of ["postgres", "web"]) {
    assert.equal(sample(text, "tailnet_agent_connections_active", { name }), 0);
    assert.equal(sample(text, "tailnet_agent_bytes_total", { name, direction: "in" }), 0);
    assert.equal(sample(text, "tailnet_agent_bytes_total", { name, direction: "out" }), 0);
    assert.equal(sample(text, "tailnet_agent_connections_rejected_total", { name }), 0);
    assert.equal(sample(text, "tailnet_agent_dial_errors_total", { name }), 0);
    assert.equal(sample(text, "tailnet_agent_dial_duration_seconds_count", { name }), 0);
  }
  assert.match(text, /^process_cpu_user_seconds_total /m);
  assert.match(text, /^# HELP tailnet_agent_bytes_total .*TLS bytes included/m);
});
