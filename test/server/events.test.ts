import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { FastifyBaseLogger } from "fastify";
import { EVENT_QUEUE, EVENT_WRITERS, kubeEventRecorder } from "../../src/server/events.js";
import { parentObject } from "../fixtures/hooks.js";

function quietLog(warnings: unknown[]): FastifyBaseLogger {
  return { info: () => undefined, warn: (...a: unknown[]) => void warnings.push(a) } as unknown as FastifyBaseLogger;
}

describe("kubeEventRecorder (src/server/events.ts)", () => {
  it("writes a core/v1 Event on the object: cluster-scoped ones in default, a long message cut at 1 kB", async () => {
    const bodies: [string, Record<string, unknown>][] = [];
    const rec = kubeEventRecorder(quietLog([]), {
      client: { create: async (ns, body) => void bodies.push([ns, body as Record<string, unknown>]) },
    });
    const site = parentObject("TailnetSite", "lan", {}, { namespace: "net", uid: "u-1" });
    const tailnet = parentObject("Tailnet", "home", {}, { uid: "u-2" });
    await rec.record({ regarding: site, reason: "NotAdvertised", type: "Warning", message: "Ready: no router" });
    await rec.record({
      regarding: tailnet,
      reason: "InSync",
      type: "Normal",
      message: `PolicyApplied: ${"x".repeat(2000)}`,
    });
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(
      bodies.map(([ns, b]) => [ns, b.reason, b.type, (b.involvedObject as Record<string, unknown>).uid]),
      [
        ["net", "NotAdvertised", "Warning", "u-1"],
        ["default", "InSync", "Normal", "u-2"],
      ],
    );
    assert.equal((bodies[0][1].involvedObject as Record<string, unknown>).namespace, "net");
    assert.equal((bodies[1][1].involvedObject as Record<string, unknown>).namespace, undefined);
    assert.equal(String(bodies[1][1].message).length, 1024);
    assert.deepEqual(bodies[0][1].source, { component: "tailnet-operator" });
  });

  it("a burst keeps at most EVENT_WRITERS creates in flight and EVENT_QUEUE waiting; the rest is dropped and counted", async () => {
    const warnings: unknown[] = [];
    let inFlight = 0;
    let most = 0;
    let written = 0;
    const gate: (() => void)[] = [];
    const rec = kubeEventRecorder(quietLog(warnings), {
      client: {
        create: () =>
          new Promise<void>((resolve) => {
            inFlight++;
            most = Math.max(most, inFlight);
            gate.push(() => {
              inFlight--;
              written++;
              resolve();
            });
          }),
      },
    });
    const regarding = parentObject("TailnetEgress", "db", {}, { namespace: "shop" });
    const burst = EVENT_WRITERS + EVENT_QUEUE + 6;
    for (let i = 0; i < burst; i++) await rec.record({ regarding, reason: "Ready", type: "Normal", message: `${i}` });
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(inFlight, EVENT_WRITERS);
    while (gate.length) {
      (gate.shift() as () => void)();
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(most, EVENT_WRITERS);
    assert.equal(written, EVENT_WRITERS + EVENT_QUEUE);
    assert.deepEqual(
      warnings.map((w) => (w as [Record<string, unknown>])[0].dropped),
      [6],
    );
  });
});
