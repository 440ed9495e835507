import assert from "node:assert/strict";
import { connect, createServer, type Socket } from "node:net";
import { describe, it } from "node:test";
import { relay } from "../../src/agent/forward.js";
import { silentLogger } from "../../src/agent/log.js";
import { createAgentMetrics } from "../../src/agent/metrics.js";
import { startStalledServer } from "../fakes/agent/echo.js";

describe("relay under a backend that never reads", () => {
  it("frees the connection soon after the client hangs up, not at the idle timeout", async (t) => {
    const backend = await startStalledServer();
    t.after(() => backend.close());
    const metrics = createAgentMetrics(["db"], { defaultMetrics: false });
    let relayed: Promise<void> | undefined;
    let upstream: Socket | undefined;
    const front = createServer((client) => {
      upstream = connect({ host: "127.0.0.1", port: backend.port });
      relayed = relay(client, upstream, {
        name: "db",
        idleTimeoutMs: 60_000,
        stallTimeoutMs: 300,
        metrics,
        log: silentLogger,
      });
    });
    await new Promise<void>((r) => front.listen(0, "127.0.0.1", r));
    t.after(() => front.close());
    const port = (front.address() as { port: number }).port;
    const client = connect({ host: "127.0.0.1", port });
    await new Promise<void>((r) => client.once("connect", () => r()));
    const chunk = Buffer.alloc(1 << 20);
    // fill every buffer on the way until the agent pauses reading the client
    for (let i = 0; i < 64 && client.write(chunk); i++);
    await new Promise((r) => setTimeout(r, 100));
    client.destroy();
    const started = Date.now();
    await Promise.race([
      relayed,
      new Promise((_, reject) => setTimeout(() => reject(new Error("slot still held after 5 s")), 5000)),
    ]);
    assert.ok(upstream?.destroyed, "the upstream side is closed too");
    assert.ok(Date.now() - started < 5000);
  });
});

describe("relay of a half-closed connection", () => {
  it("keeps the answer flowing after the client's FIN for longer than the stall timeout", async (t) => {
    // The backend answers 600 ms after the client's FIN; the stall timeout is 300 ms. Nothing is paused by
    // backpressure here, so nothing may be cut (socket.pipe's unpipe on the FIN paused the client, which armed
    // the stall timer and cut this answer).
    const backend = createServer({ allowHalfOpen: true }, (socket) => {
      socket.on("error", () => socket.destroy());
      socket.resume();
      socket.once("end", () => setTimeout(() => socket.end("late answer"), 600));
    });
    await new Promise<void>((r) => backend.listen(0, "127.0.0.1", r));
    t.after(() => backend.close());
    const metrics = createAgentMetrics(["db"], { defaultMetrics: false });
    let relayed: Promise<void> | undefined;
    const front = createServer({ allowHalfOpen: true }, (client) => {
      const upstream = connect({ host: "127.0.0.1", port: (backend.address() as { port: number }).port });
      upstream.allowHalfOpen = true;
      relayed = relay(client, upstream, {
        name: "db",
        idleTimeoutMs: 60_000,
        stallTimeoutMs: 300,
        metrics,
        log: silentLogger,
      });
    });
    await new Promise<void>((r) => front.listen(0, "127.0.0.1", r));
    t.after(() => front.close());
    const client = connect({
      host: "127.0.0.1",
      port: (front.address() as { port: number }).port,
      allowHalfOpen: true,
    });
    let answer = "";
    client.on("data", (chunk: Buffer) => (answer += chunk.toString()));
    const ended = new Promise<void>((r) => client.once("end", () => r()));
    client.once("connect", () => client.end("question"));
    await ended;
    client.end();
    assert.equal(answer, "late answer");
    await relayed;
  });
});
