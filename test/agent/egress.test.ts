// The egress data path for real on loopback: client → agent listener → (SOCKS5 →) target.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer, type Socket } from "node:net";
import { test } from "node:test";
import { closedPort, startEchoServer, startStalledServer } from "../fakes/agent/echo.js";
import { fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";
import { startSocks5Server } from "../fakes/agent/socks5.js";
import { agentFor, attempt, collect, connectTo, httpGet, metricsText, sample, sha256, until } from "./helpers.js";

function egress(targets: { name: string; host: string; port: number }[], extra: Record<string, unknown> = {}) {
  return {
    role: "egress" as const,
    metricsPort: 0,
    listenHost: "127.0.0.1",
    metricsHost: "127.0.0.1",
    targets: targets.map((t) => ({ name: t.name, host: t.host, ports: [{ port: t.port, listenPort: 0 }] })),
    ...extra,
  };
}

async function roundTrip(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const onData = (chunk: Buffer) => {
      got += chunk.toString();
      if (got.length >= text.length) {
        socket.off("data", onData);
        resolve(got);
      }
    };
    socket.on("data", onData);
    socket.write(text);
  });
}

test("a large payload goes through both ways intact and is counted by target name", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(t, egress([{ name: "postgres", host: "127.0.0.1", port: echo.port }]));
  const payload = randomBytes(8 * 1024 * 1024);

  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  const received = collect(client);
  client.end(payload);
  const got = await received;

  assert.deepEqual(got, { bytes: payload.length, sha256: sha256(payload), how: "end" });
  await until(
    async () => sample(await metricsText(agent), "tailnet_agent_connections_active", { name: "postgres" }) === 0,
    "connection closed",
  );
  const text = await metricsText(agent);
  assert.equal(sample(text, "tailnet_agent_bytes_total", { name: "postgres", direction: "in" }), payload.length);
  assert.equal(sample(text, "tailnet_agent_bytes_total", { name: "postgres", direction: "out" }), payload.length);
  assert.equal(sample(text, "tailnet_agent_dial_duration_seconds_count", { name: "postgres" }), 1);
  assert.equal(sample(text, "tailnet_agent_dial_errors_total", { name: "postgres" }), 0);
});

test("half-close: the target sees the client's FIN and can still answer after it", async (t) => {
  // Answers only once the client has finished sending: the reply travels after the client's FIN.
  const target = createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => socket.end(`got ${Buffer.concat(chunks).toString()}; bye`));
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", () => resolve()));
  t.after(() => new Promise<void>((resolve) => target.close(() => resolve())));
  const port = (target.address() as { port: number }).port;
  const agent = await agentFor(t, egress([{ name: "halfclose", host: "127.0.0.1", port }]));

  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  let text = "";
  client.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const done = collect(client);
  client.end("hello");
  const result = await done;

  assert.equal(text, "got hello; bye");
  assert.equal(result.how, "end");
});

test("target down: the client is closed, the dial error is counted and /status says why", async (t) => {
  const port = await closedPort();
  const agent = await agentFor(t, egress([{ name: "down", host: "127.0.0.1", port }]));

  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  const result = await collect(client);
  assert.equal(result.bytes, 0);
  await until(
    async () => sample(await metricsText(agent), "tailnet_agent_dial_errors_total", { name: "down" }) === 1,
    "dial error counted",
  );

  await agent.refresh();
  const status = JSON.parse((await httpGet(agent.metricsPort, "/status")).body);
  assert.deepEqual(status.targets, [
    // no tailscaled netmap here: 127.0.0.1 is no peer's address, so the dial is outside the tailnet
    {
      name: "down",
      address: "127.0.0.1",
      reachable: false,
      error: `dial 127.0.0.1:${port}: ECONNREFUSED`,
      via: "outside",
    },
  ]);
});

test("a target that does not read stops the agent from reading the client (bounded buffering)", async (t) => {
  const stalled = await startStalledServer();
  t.after(() => stalled.close());
  const agent = await agentFor(t, egress([{ name: "slow", host: "127.0.0.1", port: stalled.port }]));
  const payload = randomBytes(64 * 1024 * 1024);

  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  client.on("error", () => {});
  client.end(payload);
  await stalled.connected;
  // Let the pipeline fill: the client's kernel-bound byte count stops moving once every buffer is full.
  let last = -1;
  await until(async () => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const now = client.bytesWritten - client.writableLength;
    const settled = now === last;
    last = now;
    return settled;
  }, "pipeline full");
  const readByAgent =
    sample(await metricsText(agent), "tailnet_agent_bytes_total", { name: "slow", direction: "in" }) ?? 0;
  assert.ok(readByAgent < 32 * 1024 * 1024, `agent read ${readByAgent} bytes of a stalled 64 MiB transfer`);
  assert.ok(client.writableLength > 0, "the client still holds unsent bytes");

  stalled.resume();
  assert.deepEqual(await stalled.received, { bytes: payload.length, sha256: sha256(payload) });
});

test("connections over limits.maxConnections are closed at once and counted", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(
    t,
    egress([{ name: "limited", host: "127.0.0.1", port: echo.port }], { limits: { maxConnections: 2 } }),
  );
  const listenPort = agent.ports.targets[0].ports[0].listenPort;

  const first = await connectTo(listenPort);
  const second = await connectTo(listenPort);
  assert.equal(await roundTrip(first, "one"), "one");
  assert.equal(await roundTrip(second, "two"), "two");

  const refused = await attempt(listenPort);
  assert.equal(refused.bytes, 0);
  const text = await metricsText(agent);
  assert.equal(sample(text, "tailnet_agent_connections_rejected_total", { name: "limited" }), 1);
  assert.equal(sample(text, "tailnet_agent_connections_active", { name: "limited" }), 2);

  const firstClosed = collect(first);
  first.end();
  await firstClosed;
  await until(
    async () => sample(await metricsText(agent), "tailnet_agent_connections_active", { name: "limited" }) === 1,
    "slot freed",
  );
  const fourth = await connectTo(listenPort);
  assert.equal(await roundTrip(fourth, "four"), "four");
  fourth.destroy();
  second.destroy();
});

test("an idle connection is closed after limits.idleTimeoutSeconds", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(
    t,
    egress([{ name: "idle", host: "127.0.0.1", port: echo.port }], { limits: { idleTimeoutSeconds: 0.2 } }),
  );

  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  assert.equal(await roundTrip(client, "still here"), "still here");
  const closed = await collect(client); // resolves only if the agent closes the silent connection
  assert.equal(closed.bytes, 0);
  await until(
    async () => sample(await metricsText(agent), "tailnet_agent_connections_active", { name: "idle" }) === 0,
    "gauge back to 0",
  );
});

test("through SOCKS5 with a LocalAPI: nothing is dialled until tailscaled is Running (its SOCKS5 would use the pod network)", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const socks = await startSocks5Server({ resolve: () => "127.0.0.1" });
  t.after(() => socks.close());
  const localApi = await startFakeLocalApi(
    fakeStatus({ HostName: "shop-db", TailscaleIPs: [], Online: false }, [], "NeedsLogin"),
  );
  t.after(() => localApi.close());
  const agent = await agentFor(
    t,
    egress([{ name: "postgres", host: "db-1", port: echo.port }], {
      tailscale: { socksAddr: socks.address, localApiSocket: localApi.socketPath },
    }),
  );
  const before = await agent.refresh();
  assert.equal(before.targets[0].reachable, false);
  assert.equal(before.targets[0].error, `dial db-1:${echo.port}: tailscaled is NeedsLogin, not Running`);
  // a client is closed at once (connect may already see the reset)
  await connectTo(agent.ports.targets[0].ports[0].listenPort).then(
    (client) => new Promise((resolve) => client.once("close", resolve)),
    (err: NodeJS.ErrnoException) => assert.equal(err.code, "ECONNRESET"),
  );
  assert.equal(socks.requests.length, 0, "neither the probe nor the client reached the SOCKS5 proxy");

  localApi.setStatus(fakeStatus({ HostName: "shop-db", TailscaleIPs: ["100.64.0.9"], Online: true }, []));
  const after = await agent.refresh();
  assert.equal(after.targets[0].reachable, true, after.targets[0].error);
  const again = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  assert.equal(await roundTrip(again, "up now"), "up now");
  again.destroy();
});

test("through SOCKS5: the proxy is asked for the target host by name, probes go the same way", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const down = await closedPort();
  const socks = await startSocks5Server({ resolve: () => "127.0.0.1" });
  t.after(() => socks.close());
  const agent = await agentFor(
    t,
    egress(
      [
        { name: "postgres", host: "db-1.ts.example.com", port: echo.port },
        { name: "gone", host: "db-2", port: down },
      ],
      { tailscale: { socksAddr: socks.address } },
    ),
  );

  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  assert.equal(await roundTrip(client, "via socks"), "via socks");
  client.destroy();
  assert.deepEqual(socks.requests[0], { host: "db-1.ts.example.com", port: echo.port, addressType: 3 });

  const status = await agent.refresh();
  assert.deepEqual(status.targets, [
    { name: "postgres", address: "db-1.ts.example.com", reachable: true, error: "", via: "unknown" },
    {
      name: "gone",
      address: "db-2",
      reachable: false,
      error: `dial db-2:${down}: SOCKS5 ConnectionRefused`,
      via: "unknown",
    },
  ]);
});

test("SOCKS5 proxy down: the probe error names the proxy failure", async (t) => {
  const proxyPort = await closedPort();
  const agent = await agentFor(
    t,
    egress([{ name: "postgres", host: "db-1", port: 5432 }], { tailscale: { socksAddr: `127.0.0.1:${proxyPort}` } }),
  );
  const status = await agent.refresh();
  assert.deepEqual(status.targets, [
    {
      name: "postgres",
      address: "db-1",
      reachable: false,
      error: "dial db-1:5432: SOCKS5 proxy unreachable (ECONNREFUSED)",
      via: "unknown",
    },
  ]);
});

test("agent metrics carry target names only: no peer, IP or host in any label", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(
    t,
    egress([
      { name: "postgres", host: "127.0.0.1", port: echo.port },
      { name: "redis", host: "localhost", port: echo.port },
    ]),
  );
  const client = await connectTo(agent.ports.targets[0].ports[0].listenPort);
  assert.equal(await roundTrip(client, "x"), "x");
  client.destroy();

  const text = await metricsText(agent);
  const families = new Set<string>();
  for (const line of text.split("\n")) {
    const match = /^(tailnet_agent_\w+?)(?:_bucket|_sum|_count)?\{(.*)\} /.exec(line);
    if (!match) continue;
    families.add(match[1]);
    const labels = [...match[2].matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]] as const);
    for (const [key, value] of labels) {
      assert.ok(["name", "direction", "le"].includes(key), `unexpected label ${key} in ${line}`);
      if (key === "name") assert.ok(["postgres", "redis"].includes(value), `unexpected name ${value}`);
      if (key === "direction") assert.ok(["in", "out"].includes(value));
    }
  }
  assert.deepEqual([...families].sort(), [
    "tailnet_agent_bytes_total",
    "tailnet_agent_connections_active",
    "tailnet_agent_connections_rejected_total",
    "tailnet_agent_dial_duration_seconds",
    "tailnet_agent_dial_errors_total",
    "tailnet_agent_serve_bypass_refused_total",
  ]);
  assert.doesNotMatch(text, /127\.0\.0\.1|localhost/);
});

test("/healthz stays green while a connection flood is being refused", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(
    t,
    egress([{ name: "flood", host: "127.0.0.1", port: echo.port }], { limits: { maxConnections: 5 } }),
  );
  const listenPort = agent.ports.targets[0].ports[0].listenPort;

  const flood = Array.from({ length: 200 }, () => attempt(listenPort));
  const health = await httpGet(agent.metricsPort, "/healthz");
  assert.equal(health.status, 200);
  assert.equal(health.body, "ok\n");
  await until(
    async () =>
      (sample(await metricsText(agent), "tailnet_agent_connections_rejected_total", { name: "flood" }) ?? 0) >= 195,
    "flood refused",
  );
  await agent.close();
  const outcomes = await Promise.all(flood);
  assert.equal(outcomes.filter((o) => o.bytes > 0).length, 0);
});
