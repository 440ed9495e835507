/**
 * The log a user reads when Metacontroller reports hook errors: one line per non-200 answer with
 * method, path, status, reason and parent; never the token, the body or a Secret; and at debug one
 * line per sync with its duration and the Headscale requests it caused.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useFakeHeadscale } from "../fakes/headscale/index.js";
import { parentObject, syncRequest } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";

const TOKEN = "s3cret-hook-token-0123456789";

const egress = () =>
  parentObject(
    "TailnetEgress",
    "db",
    { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432 }] }] },
    { namespace: "shop" },
  );

type Line = Record<string, unknown> & { msg: string; level: number };
const lines = (logs: string[]) => logs.map((l) => JSON.parse(l) as Line);
const answers = (logs: string[]) => lines(logs).filter((l) => l.msg.startsWith("hook answered "));

describe("hook answers in the log", () => {
  it("a 401 is one warn line: method, path, status, reason, kind — and never the token", async (t) => {
    const { app, logs } = await build(t, { env: { HOOK_TOKEN: TOKEN } });
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync?x=1",
      headers: { authorization: "Bearer wrong-token-wrong-token", "content-type": "application/json" },
      payload: JSON.stringify(syncRequest({ parent: egress() })),
    });
    assert.equal(res.statusCode, 401);
    const got = answers(logs);
    assert.equal(got.length, 1);
    const { time: _t, pid: _p, hostname: _h, reqId: _r, ...line } = got[0];
    assert.deepEqual(line, {
      level: 40,
      method: "POST",
      path: "/hooks/egress/sync",
      status: 401,
      reason: "unauthorized: a valid bearer token is required",
      kind: "TailnetEgress",
      msg: "hook answered 401: unauthorized: a valid bearer token is required",
    });
    const all = logs.join("");
    assert.ok(!all.includes(TOKEN) && !all.includes("wrong-token"), "no token in the log");
  });

  it("a 400 names the field and the parent it was about", async (t) => {
    const { app, logs } = await build(t);
    const body = syncRequest({ parent: egress() });
    const res = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ ...body, children: [] }),
    });
    assert.equal(res.statusCode, 400);
    const [line] = answers(logs);
    assert.equal(line.msg, "hook answered 400: children: must be an object keyed by Kind.group/version");
    assert.equal(line.kind, "TailnetEgress");
    assert.equal(line.namespace, "shop");
    assert.equal(line.name, "db");
  });

  it("a 413 (body over the limit) and a 404 (unknown hook) each leave one line", async (t) => {
    const { app, logs, config } = await build(t);
    const big = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      headers: { "content-type": "application/json" },
      payload: `{"pad":"${"x".repeat(config.hooks.bodyLimitBytes + 10)}"}`,
    });
    assert.equal(big.statusCode, 413);
    const missing = await app.inject({ method: "POST", url: "/hooks/egress/resync", payload: {} });
    assert.equal(missing.statusCode, 404);
    const got = answers(logs);
    assert.deepEqual(
      got.map((l) => [l.status, l.path]),
      [
        [413, "/hooks/egress/sync"],
        [404, "/hooks/egress/resync"],
      ],
    );
    assert.ok(String(got[0].reason).startsWith(`body: larger than the limit of ${config.hooks.bodyLimitBytes} bytes`));
    assert.equal(got[0].kind, "TailnetEgress");
    assert.equal(got[1].reason, 'unknown hook "resync"');
  });

  it("a 200 leaves no answer line", async (t) => {
    const { app, logs } = await build(t, { config: { logLevel: "info" } });
    const res = await app.inject({ method: "GET", url: "/healthz" });
    assert.equal(res.statusCode, 200);
    const sync = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify(syncRequest({ parent: egress() })),
    });
    assert.equal(sync.statusCode, 200);
    assert.deepEqual(answers(logs), []);
  });
});

describe("LOG_LEVEL=debug", () => {
  it("one line per sync with its duration and the Headscale requests it caused; none at info", async (t) => {
    const hs = await useFakeHeadscale(t);
    const tailnet = parentObject("Tailnet", "home", {
      headscale: { url: hs.url, apiKeySecretRef: { namespace: "tailnet-system", name: "headscale-api-key" } },
      policy: { mode: "DryRun" },
    });
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "headscale-api-key", namespace: "tailnet-system" },
      data: { apiKey: Buffer.from(hs.apiKey).toString("base64") },
    };
    const payload = JSON.stringify(syncRequest({ parent: tailnet, related: [secret] }));
    const send = (app: Awaited<ReturnType<typeof build>>["app"]) =>
      app.inject({
        method: "POST",
        url: "/hooks/tailnet/sync",
        headers: { "content-type": "application/json" },
        payload,
      });

    const debug = await build(t, { config: { logLevel: "debug", headscale: { cacheTTLSeconds: 0 } } });
    assert.equal((await send(debug.app)).statusCode, 200);
    const synced = lines(debug.logs).filter((l) => l.hook === "sync");
    assert.equal(synced.length, 1, debug.logs.join(""));
    const [line] = synced;
    assert.equal(line.level, 20);
    assert.equal(line.kind, "Tailnet");
    assert.equal(line.name, "home");
    assert.equal(typeof line.ms, "number");
    assert.ok((line.headscaleCalls as number) >= 3, `headscaleCalls ${line.headscaleCalls}`);
    assert.equal(line.headscaleCalls, hs.requests.length, "every request the fake saw is counted");
    assert.match(line.msg, /^sync answered in [\d.]+ ms with \d+ Headscale calls$/);
    assert.ok(!debug.logs.join("").includes(hs.apiKey), "the API key never reaches the log");

    const info = await build(t, { config: { logLevel: "info" } });
    assert.equal((await send(info.app)).statusCode, 200);
    assert.deepEqual(
      lines(info.logs).filter((l) => l.hook === "sync"),
      [],
    );
  });
});
