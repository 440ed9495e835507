// tcp exposes, mixed roles on one ingress agent, and graceful close.
import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import { closedPort, startEchoServer, startHttpBackend } from "../fakes/agent/echo.js";
import { createTestPki } from "../fakes/agent/pki.js";
import { agentFor, attempt, collect, connectTo, httpGet } from "./helpers.js";

function echoOnce(port: number, text: string): Promise<string> {
  return connectTo(port).then(
    (socket) =>
      new Promise((resolve) => {
        let got = "";
        socket.on("data", (chunk: Buffer) => (got += chunk.toString()));
        socket.once("close", () => resolve(got));
        socket.end(text);
        collect(socket);
      }),
  );
}

test("a tcp expose forwards to its backend and a tls expose sits beside it; /status reports both backends", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const backend = await startHttpBackend();
  t.after(() => backend.close());
  const pki = await createTestPki();
  t.after(() => pki.cleanup());
  const cert = await pki.issue({ names: ["grafana.ts.example.com"] });
  const down = await closedPort();
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [
      { name: "ssh", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: echo.port } },
      {
        name: "web",
        listenPort: 0,
        mode: "http",
        backend: { host: "127.0.0.1", port: backend.port },
        tls: { certFile: cert.certFile, keyFile: cert.keyFile },
        names: ["grafana.ts.example.com"],
      },
      { name: "metrics", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: down } },
    ],
  });
  assert.deepEqual(
    agent.ports.exposes.map((e) => e.name),
    ["ssh", "web", "metrics"],
  );
  assert.equal(new Set(agent.ports.exposes.map((e) => e.listenPort)).size, 3);

  assert.equal(await echoOnce(agent.ports.exposes[0].listenPort, "over tcp"), "over tcp");
  assert.equal((await attempt(agent.ports.exposes[2].listenPort)).bytes, 0);

  await agent.refresh();
  const status = JSON.parse((await httpGet(agent.metricsPort, "/status")).body);
  assert.deepEqual(status, {
    ready: true,
    self: { hostName: "", tailscaleIPs: [], online: false },
    peers: [],
    targets: [],
    exposes: [
      { name: "ssh", backendReachable: true, error: "" },
      { name: "web", backendReachable: true, error: "" },
      { name: "metrics", backendReachable: false, error: `dial 127.0.0.1:${down}: ECONNREFUSED` },
    ],
  });
});

test("close(graceMs): no new connections, open ones may finish, then /healthz is gone", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(t, {
    role: "egress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    targets: [{ name: "postgres", host: "127.0.0.1", ports: [{ port: echo.port, listenPort: 0 }] }],
  });
  const port = agent.ports.targets[0].ports[0].listenPort;
  const open = await connectTo(port);
  open.write("before ");

  const closing = agent.close(60_000);
  await assert.rejects(connectTo(port), { code: "ECONNREFUSED" });
  const received = collect(open);
  let text = "";
  open.on("data", (chunk: Buffer) => (text += chunk.toString()));
  open.end("and after close()");
  assert.equal((await received).how, "end");
  assert.equal(text, "before and after close()");
  await closing;
  await assert.rejects(httpGet(agent.metricsPort, "/healthz"), { code: "ECONNREFUSED" });
});

test("the metrics port answers 404 for unknown paths and 405 for writes", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(t, {
    role: "egress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    targets: [{ name: "postgres", host: "127.0.0.1", ports: [{ port: echo.port, listenPort: 0 }] }],
  });
  assert.equal((await httpGet(agent.metricsPort, "/nope")).status, 404);
  const status = await new Promise<number>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: agent.metricsPort, path: "/status", method: "POST" }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
  assert.equal(status, 405);
});

test("/readyz: 503 naming the expose while a backend is unreachable, 200 once every backend answers; /healthz stays 200", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const down = await closedPort();
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [
      { name: "ssh", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: echo.port } },
      { name: "db", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: down } },
    ],
  });
  await agent.refresh();
  const unready = await httpGet(agent.metricsPort, "/readyz");
  assert.equal(unready.status, 503);
  assert.equal(unready.body, "backend unreachable: db\n");
  assert.equal((await httpGet(agent.metricsPort, "/healthz")).status, 200, "alive: no restart for a backend");

  const healthy = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [{ name: "ssh", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: echo.port } }],
  });
  await healthy.refresh();
  const ready = await httpGet(healthy.metricsPort, "/readyz");
  assert.equal(ready.status, 200);
  assert.equal(ready.body, "ok\n");
});
