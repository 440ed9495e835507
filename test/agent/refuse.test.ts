// The agent's side of issue 31: tailscaled's netstack forwards a tailnet connection that serve did not handle
// to 127.0.0.1:<port> (tailscale.com wgengine/netstack/netstack.go acceptTCP), so the agent's listeners live
// elsewhere (127.0.0.2 for serve's targets, the pod IP for egress) and 127.0.0.1:<port> only resets and
// counts. Laid out as the operator renders the pod (ingress/egress children.ts), with loopback standing in
// for the pod IP where an egress needs one.
import assert from "node:assert/strict";
import { get } from "node:http";
import { connect, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { startAgent } from "../../src/agent/main.js";
import { startEchoServer, startHttpBackend } from "../fakes/agent/echo.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { proxyHeader, serveForward } from "../fakes/tailscaled-serve.js";
import { agentFor, attempt, collect, metricsText, sample, until } from "./helpers.js";

const SERVE_HOST = "127.0.0.2";
const NETSTACK_HOST = "127.0.0.1";
const ALICE = { ip: "100.64.0.7", port: 41000 };
const NODE_IP = "100.64.0.1";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({ names: ["dash.ts.example.com"] });
});
after(() => pki.cleanup());

/** A TLS GET over `socket` (after whatever was written to it): the backend's answer body, or the error. */
function getOver(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    const tls = tlsConnect({ socket, servername: "dash.ts.example.com", ca: pki.caPem });
    let raw = "";
    tls.on("secureConnect", () =>
      tls.write("GET /x HTTP/1.1\r\nHost: dash.ts.example.com\r\nConnection: close\r\n\r\n"),
    );
    tls.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")));
    tls.on("close", () => resolve(raw || "closed: no bytes"));
    tls.on("error", (err: NodeJS.ErrnoException) => resolve(`error: ${err.code ?? err.message}`));
  });
}

test("http and tcp exposes: serve's address answers, a forged PROXY header on netstack's 127.0.0.1 gets a reset and a count", async (t) => {
  const web = await startHttpBackend();
  t.after(() => web.close());
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    refuseHost: NETSTACK_HOST,
    exposes: [
      {
        name: "web",
        listenPort: 0,
        mode: "http",
        backend: { host: "127.0.0.1", port: web.port },
        tls: { certFile: cert.certFile, keyFile: cert.keyFile },
        names: ["dash.ts.example.com"],
        proxyProtocol: true,
      },
      { name: "pg", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: echo.port } },
    ],
  });
  assert.equal(agent.config.listenHost, SERVE_HOST, "the ingress default");
  const [webPort, pgPort] = agent.ports.exposes.map((e) => e.listenPort);

  // through serve: alice's address, as tailscaled wrote it
  const served = await serveForward({ TCPForward: `${SERVE_HOST}:${webPort}`, ProxyProtocol: 2 }, ALICE, NODE_IP);
  assert.match(await getOver(served), /"x-forwarded-for":"100\.64\.0\.7"/);
  const requests = web.requests.length;

  // past serve: the same header written by a peer lands on 127.0.0.1 and is reset before a byte is read
  const forged = await attempt(webPort, NETSTACK_HOST);
  assert.equal(forged.bytes, 0);
  const raw = connect({ host: NETSTACK_HOST, port: webPort });
  raw.on("error", () => undefined);
  raw.write(proxyHeader(2, ALICE, { ip: NODE_IP, port: 443 }));
  assert.match(await getOver(raw), /^(error: ECONNRESET|closed: no bytes)$/);
  assert.equal(web.requests.length, requests, "the backend saw nothing");

  const accepted = echo.accepted;
  const pg = await collect(connect({ host: NETSTACK_HOST, port: pgPort }).on("error", () => undefined));
  assert.equal(pg.bytes, 0);
  assert.equal(echo.accepted, accepted, "no backend connection was made for it");

  await until(async () => {
    const text = await metricsText(agent);
    return (
      sample(text, "tailnet_agent_serve_bypass_refused_total", { name: "web" }) === 2 &&
      sample(text, "tailnet_agent_serve_bypass_refused_total", { name: "pg" }) === 1
    );
  }, "refusals counted per expose");
});

test("egress: data listeners on the pod IP, 127.0.0.1 of the same port refused and counted; nothing on 0.0.0.0", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  // 127.0.0.3 stands for the pod IP (what POD_IP carries): netstack's 127.0.0.1 is a different address
  const podIp = "127.0.0.3";
  const running = await startAgent(
    {
      role: "egress",
      metricsPort: 0,
      refuseHost: NETSTACK_HOST,
      targets: [{ name: "postgres", host: "127.0.0.1", ports: [{ port: echo.port, listenPort: 0 }] }],
    },
    { timers: false, defaultMetrics: false, env: { POD_IP: podIp } },
  );
  t.after(() => running.close());
  assert.deepEqual([running.config.metricsHost, running.config.listenHost], [podIp, podIp]);
  const port = running.ports.targets[0].ports[0].listenPort;
  const viaService = connect({ host: podIp, port });
  viaService.end("via-service");
  const echoed = await collect(viaService);
  assert.equal(echoed.bytes, "via-service".length, "the Service path (pod IP) works");
  const bypass = await attempt(port, NETSTACK_HOST);
  assert.equal(bypass.bytes, 0);
  const metrics = await new Promise<string>((resolve, reject) => {
    get({ host: podIp, port: running.metricsPort, path: "/metrics" }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => resolve(body));
    }).on("error", reject);
  });
  assert.equal(sample(metrics, "tailnet_agent_serve_bypass_refused_total", { name: "postgres" }), 1);
  // the metrics port is on the pod IP only: 127.0.0.1 (netstack's forward) has nothing there
  const metricsOnLoopback = await attempt(running.metricsPort, NETSTACK_HOST);
  assert.equal(metricsOnLoopback.bytes, 0);
});
