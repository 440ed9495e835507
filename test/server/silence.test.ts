/**
 * When hooks stop arriving (Metacontroller down, webhook unreachable, token mismatch), the last state
 * stays exported — a NotReady alert must not resolve because nobody reconciles any more — and the time of
 * the last answered hook is there for TailnetHooksSilent. Stale series still go once hooks flow again.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HookActivity } from "../../src/metrics/hook-activity.js";
import { parentObject, syncRequest } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";

const egress = (name: string) =>
  parentObject(
    "TailnetEgress",
    name,
    { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432 }] }] },
    { namespace: "shop" },
  );
const MINUTE = 60_000;

describe("hook silence", () => {
  it("HookActivity: a streak starts at the first hook after a pause longer than the gap", () => {
    const a = new HookActivity(120_000);
    assert.equal(a.flowingForMs(0), 0, "no hook yet");
    a.answered(1_000);
    assert.equal(a.flowingForMs(61_000), 60_000);
    a.answered(100_000);
    assert.equal(a.flowingForMs(200_000), 199_000, "pauses within the gap keep the streak");
    assert.equal(a.flowingForMs(220_001), 0, "a pause past the gap is silence");
    a.answered(400_000);
    assert.equal(a.flowingForMs(430_000), 30_000, "a new streak starts after silence");
  });

  it("silence withdraws nothing; hooks that flow again for 3 resync periods sweep what they no longer sync", async (t) => {
    let now = Date.parse("2026-12-05T10:00:00Z");
    const { app } = await build(t, { server: { deps: { now: () => new Date(now) } } });
    const sync = async (name: string) => {
      const res = await app.inject({
        method: "POST",
        url: "/hooks/egress/sync",
        payload: syncRequest({ parent: egress(name) }),
      });
      assert.equal(res.statusCode, 200);
    };
    const scrape = async () => (await app.inject({ method: "GET", url: "/metrics" })).body;
    const readySeries = (text: string, name: string) =>
      new RegExp(`^tailnet_resource_ready\\{kind="TailnetEgress",namespace="shop",name="${name}",`, "m").test(text);

    assert.match(await scrape(), /^tailnet_hook_last_success_timestamp_seconds 0$/m, "0 until the first hook");
    const first = now;
    await sync("db");
    now += 30 * MINUTE; // Metacontroller stopped: no hook for half an hour
    const silent = await scrape();
    assert.ok(readySeries(silent, "db"), "db's Ready series is still exported during the silence");
    assert.match(silent, new RegExp(`^tailnet_hook_last_success_timestamp_seconds ${first / 1000}$`, "m"));

    // hooks come back, but only for web (db was deleted meanwhile, its finalize answered elsewhere)
    for (let i = 0; i < 2; i++) {
      await sync("web");
      now += MINUTE;
      assert.ok(readySeries(await scrape(), "db"), `hooks flowing for ${i + 1} min < 3 resync periods: db kept`);
    }
    await sync("web");
    now += 90_000;
    const swept = await scrape();
    assert.ok(!readySeries(swept, "db"), "hooks flowed for 3.5 min without db: its series are stale");
    assert.ok(readySeries(swept, "web"));
    assert.match(swept, new RegExp(`^tailnet_hook_last_success_timestamp_seconds ${(now - 90_000) / 1000}$`, "m"));
  });

  it("a 401 (token mismatch) is not an answered hook", async (t) => {
    const { app } = await build(t, { config: { hookToken: "0123456789abcdef0123" } });
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      payload: syncRequest({ parent: egress("db") }),
    });
    assert.equal(res.statusCode, 401);
    const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
    assert.match(text, /^tailnet_hook_last_success_timestamp_seconds 0$/m);
  });
});
