// http exposes for real on loopback: TLS terminated by the agent with certificates from a test CA, SNI
// choosing the certificate and backend, an HTTP/1.1 reverse proxy with keep-alive and X-Forwarded-*.
import assert from "node:assert/strict";
import { randomBytes, X509Certificate } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import type { IncomingHttpHeaders } from "node:http";
import { Agent, request } from "node:https";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex } from "node:stream";
import { after, before, test } from "node:test";
import { type PeerCertificate, type TLSSocket, connect as tlsConnect } from "node:tls";
import { startAgent } from "../../src/agent/main.js";
import type { AgentExpose } from "../../src/contract/agent-config.js";
import { closedPort, freePort, type HttpBackend, startHttpBackend } from "../fakes/agent/echo.js";
import { createTestPki, type IssuedCertificate, type TestPki, writeSecretVolume } from "../fakes/agent/pki.js";
import { agentFor, collect, metricsText, sample, sha256, until } from "./helpers.js";

let pki: TestPki;
let dash: IssuedCertificate;
let api: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  dash = await pki.issue({ names: ["dash.ts.example.com"] });
  api = await pki.issue({ names: ["api.ts.example.com", "api-eu.ts.example.com"] });
});
after(() => pki.cleanup());

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  cert: PeerCertificate;
  socket: TLSSocket;
}

interface Ask {
  port: number;
  servername?: string;
  host?: string;
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer;
  agent?: Agent;
  ca?: string;
  rejectUnauthorized?: boolean;
}

function ask(opts: Ask): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: opts.port,
        path: opts.path ?? "/",
        method: opts.method ?? "GET",
        servername: opts.servername ?? "",
        headers: { host: opts.host ?? opts.servername ?? "127.0.0.1", ...opts.headers },
        ca: opts.ca ?? pki.caPem,
        rejectUnauthorized: opts.rejectUnauthorized ?? true,
        agent: opts.agent ?? false,
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const cert = socket.getPeerCertificate();
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, cert, socket }));
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

function expose(
  name: string,
  cert: IssuedCertificate,
  names: string[],
  backendPort: number,
  listenPort = 0,
): AgentExpose {
  return {
    name,
    listenPort,
    mode: "http",
    backend: { host: "127.0.0.1", port: backendPort },
    tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    names,
  };
}

function ingress(exposes: AgentExpose[], limits: Record<string, number> = {}) {
  return {
    role: "ingress" as const,
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes,
    limits,
  };
}

async function backendFor(t: { after(fn: () => Promise<void>): void }): Promise<HttpBackend> {
  const backend = await startHttpBackend();
  t.after(() => backend.close());
  return backend;
}

test("SNI picks the certificate and backend among exposes sharing a listener; an alias works; no SNI gets the first", async (t) => {
  const dashBackend = await backendFor(t);
  const apiBackend = await backendFor(t);
  const shared = await freePort();
  const agent = await agentFor(
    t,
    ingress([
      expose("web", dash, ["dash.ts.example.com"], dashBackend.port, shared),
      expose("api", api, ["api.ts.example.com", "api-eu.ts.example.com"], apiBackend.port, shared),
    ]),
  );
  assert.deepEqual(agent.ports.exposes, [
    { name: "web", listenPort: shared },
    { name: "api", listenPort: shared },
  ]);

  const toDash = await ask({ port: shared, servername: "dash.ts.example.com", path: "/d" });
  assert.equal(toDash.cert.subjectaltname, "DNS:dash.ts.example.com");
  assert.equal(JSON.parse(toDash.body).url, "/d");
  assert.equal(dashBackend.requests.length, 1);

  const toApi = await ask({ port: shared, servername: "api.ts.example.com", path: "/a" });
  assert.equal(toApi.cert.subjectaltname, "DNS:api.ts.example.com, DNS:api-eu.ts.example.com");
  assert.equal(apiBackend.requests.at(-1)?.url, "/a");

  const toAlias = await ask({ port: shared, servername: "API-EU.ts.example.com", path: "/alias" });
  assert.equal(toAlias.status, 200);
  assert.equal(apiBackend.requests.at(-1)?.url, "/alias");

  const noSni = await ask({ port: shared, rejectUnauthorized: false, path: "/nosni" });
  assert.equal(noSni.cert.subjectaltname, "DNS:dash.ts.example.com");
  assert.equal(dashBackend.requests.at(-1)?.url, "/nosni");
});

test("an expired certificate is still served (the client refuses it), a name the certificate lacks fails verification", async (t) => {
  const backend = await backendFor(t);
  const expired = await pki.issue({
    names: ["old.ts.example.com"],
    notBefore: new Date("2020-01-01T00:00:00Z"),
    notAfter: new Date("2020-02-01T00:00:00Z"),
  });
  const wrong = await pki.issue({ names: ["other.example.com"] });
  const agent = await agentFor(
    t,
    ingress([
      expose("old", expired, ["old.ts.example.com"], backend.port),
      expose("mismatch", wrong, ["web.ts.example.com"], backend.port),
    ]),
  );
  const [oldPort, mismatchPort] = agent.ports.exposes.map((e) => e.listenPort);

  await assert.rejects(ask({ port: oldPort, servername: "old.ts.example.com" }), { code: "CERT_HAS_EXPIRED" });
  const lenient = await ask({ port: oldPort, servername: "old.ts.example.com", rejectUnauthorized: false });
  assert.equal(lenient.status, 200);
  assert.equal(lenient.cert.valid_to, "Feb  1 00:00:00 2020 GMT");

  await assert.rejects(ask({ port: mismatchPort, servername: "web.ts.example.com" }), {
    code: "ERR_TLS_CERT_ALTNAME_INVALID",
  });
});

test("keep-alive: requests on one client connection reuse one backend connection", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(t, ingress([expose("web", dash, ["dash.ts.example.com"], backend.port)]));
  const port = agent.ports.exposes[0].listenPort;
  const client = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => client.destroy());

  const answers = [];
  for (const path of ["/1", "/2", "/3"])
    answers.push(await ask({ port, servername: "dash.ts.example.com", path, agent: client }));

  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200],
  );
  assert.equal(new Set(answers.map((a) => a.socket)).size, 1, "one client connection");
  assert.equal(backend.connections, 1, "one backend connection");
  assert.equal(new Set(backend.requests.map((r) => r.remotePort)).size, 1);
});

test("X-Forwarded-For/Proto/Host are set (the client's own replaced), Host is kept, hop-by-hop headers are dropped, bodies pass intact", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(t, ingress([expose("web", dash, ["dash.ts.example.com"], backend.port)]));
  const port = agent.ports.exposes[0].listenPort;
  const body = randomBytes(1024 * 1024);

  const answer = await ask({
    port,
    servername: "dash.ts.example.com",
    method: "POST",
    path: "/upload?x=1",
    headers: { "x-forwarded-for": "10.1.2.3", connection: "keep-alive, x-hop", "x-hop": "drop me", "x-app": "keep me" },
    body,
  });

  assert.equal(answer.status, 200);
  assert.equal(answer.headers["x-backend"], "yes");
  const seen = JSON.parse(answer.body) as {
    headers: IncomingHttpHeaders;
    bodyBytes: number;
    bodySha256: string;
    url: string;
  };
  assert.equal(seen.url, "/upload?x=1");
  assert.equal(seen.headers.host, "dash.ts.example.com");
  assert.equal(seen.headers["x-forwarded-for"], "127.0.0.1");
  assert.equal(seen.headers["x-forwarded-proto"], "https");
  assert.equal(seen.headers["x-forwarded-host"], "dash.ts.example.com");
  assert.equal(seen.headers["x-app"], "keep me");
  assert.equal(seen.headers["x-hop"], undefined);
  assert.deepEqual({ bytes: seen.bodyBytes, sha256: seen.bodySha256 }, { bytes: body.length, sha256: sha256(body) });

  // Bytes are counted on the TLS connection: at least the request body went in, the response came out.
  await until(
    async () => sample(await metricsText(agent), "tailnet_agent_connections_active", { name: "web" }) === 0,
    "closed",
  );
  const text = await metricsText(agent);
  assert.ok((sample(text, "tailnet_agent_bytes_total", { name: "web", direction: "in" }) ?? 0) > body.length);
  assert.ok((sample(text, "tailnet_agent_bytes_total", { name: "web", direction: "out" }) ?? 0) > answer.body.length);
  assert.equal(sample(text, "tailnet_agent_dial_duration_seconds_count", { name: "web" }), 1);
});

test("a renewed certificate is picked up from the Secret volume; open connections keep theirs", async (t) => {
  const backend = await backendFor(t);
  const volume = await mkdtemp(join(tmpdir(), "agent-secret-"));
  t.after(() => rm(volume, { recursive: true, force: true }));
  const first = await pki.issue({ names: ["dash.ts.example.com"] });
  const files = await writeSecretVolume(volume, { "tls.crt": first.certPem, "tls.key": first.keyPem });
  const cert: IssuedCertificate = { ...first, certFile: files["tls.crt"], keyFile: files["tls.key"] };
  const agent = await agentFor(t, ingress([expose("web", cert, ["dash.ts.example.com"], backend.port)]));
  const port = agent.ports.exposes[0].listenPort;
  const client = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => client.destroy());

  const before = await ask({ port, servername: "dash.ts.example.com", agent: client });
  const renewed = await pki.issue({ names: ["dash.ts.example.com"] });
  await writeSecretVolume(volume, { "tls.crt": renewed.certPem, "tls.key": renewed.keyPem });
  await agent.reloadCertificates();

  const sameConnection = await ask({ port, servername: "dash.ts.example.com", agent: client });
  assert.equal(sameConnection.socket, before.socket, "the open connection was not dropped");
  assert.equal(sameConnection.cert.serialNumber, before.cert.serialNumber);
  const fresh = await ask({ port, servername: "dash.ts.example.com" });
  assert.notEqual(fresh.cert.serialNumber, before.cert.serialNumber);
  const renewedFingerprint = new X509Certificate(renewed.certPem).fingerprint256;
  assert.equal(fresh.cert.fingerprint256, renewedFingerprint);
  // Clients without SNI get the server's default context, which follows the first expose.
  const noSni = await ask({ port, rejectUnauthorized: false });
  assert.equal(noSni.cert.fingerprint256, renewedFingerprint);
});

test("certificates are re-read on the timer, and a broken update keeps the working certificate", async (t) => {
  const backend = await backendFor(t);
  const volume = await mkdtemp(join(tmpdir(), "agent-secret-"));
  t.after(() => rm(volume, { recursive: true, force: true }));
  const first = await pki.issue({ names: ["dash.ts.example.com"] });
  const files = await writeSecretVolume(volume, { "tls.crt": first.certPem, "tls.key": first.keyPem });
  const agent = await startAgent(
    ingress(
      [
        expose(
          "web",
          { ...first, certFile: files["tls.crt"], keyFile: files["tls.key"] },
          ["dash.ts.example.com"],
          backend.port,
        ),
      ],
      {
        tlsReloadIntervalSeconds: 0.02,
      },
    ),
    { defaultMetrics: false },
  );
  t.after(() => agent.close());
  const port = agent.ports.exposes[0].listenPort;
  const serialOf = async () => (await ask({ port, servername: "dash.ts.example.com" })).cert.serialNumber;
  const firstSerial = await serialOf();

  // A key that does not match the certificate: the agent keeps serving the old pair.
  const other = await pki.issue({ names: ["dash.ts.example.com"] });
  await writeSecretVolume(volume, { "tls.crt": other.certPem, "tls.key": first.keyPem });
  await agent.reloadCertificates();
  assert.equal(await serialOf(), firstSerial);

  await writeSecretVolume(volume, { "tls.crt": other.certPem, "tls.key": other.keyPem });
  await until(async () => (await serialOf()) !== firstSerial, "the timer reloads the renewed pair");
});

test("backend down: 502 to the client, counted, and /status says the backend is unreachable", async (t) => {
  const down = await closedPort();
  const agent = await agentFor(t, ingress([expose("web", dash, ["dash.ts.example.com"], down)]));
  const port = agent.ports.exposes[0].listenPort;

  const answer = await ask({ port, servername: "dash.ts.example.com" });
  assert.equal(answer.status, 502);
  assert.equal(answer.body, "502 Bad Gateway\n");
  assert.equal(sample(await metricsText(agent), "tailnet_agent_dial_errors_total", { name: "web" }), 1);

  const status = await agent.refresh();
  assert.deepEqual(status.exposes, [
    { name: "web", backendReachable: false, error: `dial 127.0.0.1:${down}: ECONNREFUSED` },
  ]);
});

test("an upgrade request is relayed as a raw stream after the backend's 101", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(t, ingress([expose("web", dash, ["dash.ts.example.com"], backend.port)]));
  const port = agent.ports.exposes[0].listenPort;

  const socket = tlsConnect({ host: "127.0.0.1", port, servername: "dash.ts.example.com", ca: pki.caPem });
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
  socket.write("GET /ws HTTP/1.1\r\nhost: dash.ts.example.com\r\nconnection: Upgrade\r\nupgrade: echo\r\n\r\n");
  await until(() => received.includes("\r\n\r\n"), "101 response");
  assert.match(received, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  received = "";
  socket.write("ping over the upgraded stream");
  await until(() => received === "ping over the upgraded stream", "echo");
  assert.equal(backend.requests.at(-1)?.headers["x-forwarded-proto"], "https");
  socket.destroy();
});

test("a client that never finishes its headers is closed after limits.headerTimeoutSeconds", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(
    t,
    ingress([expose("web", dash, ["dash.ts.example.com"], backend.port)], { headerTimeoutSeconds: 0.2 }),
  );
  const port = agent.ports.exposes[0].listenPort;

  const socket = tlsConnect({ host: "127.0.0.1", port, servername: "dash.ts.example.com", ca: pki.caPem });
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  const closed = collect(socket);
  socket.write("GET / HTTP/1.1\r\nhost: dash.ts.example.com\r\nx-slow: ");
  await closed; // resolves only because the agent gives up on the headers
  assert.equal(backend.requests.length, 0);
});

test("pipelined requests with chunked bodies reach the backend each with X-Forwarded-*; a smuggling head is 400 without a dial", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(t, ingress([expose("web", dash, ["dash.ts.example.com"], backend.port)]));
  const port = agent.ports.exposes[0].listenPort;

  const socket = tlsConnect({ host: "127.0.0.1", port, servername: "dash.ts.example.com", ca: pki.caPem });
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  let received = "";
  socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
  const host = "host: dash.ts.example.com\r\n";
  socket.write(
    `POST /a HTTP/1.1\r\n${host}transfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n` +
      `GET /b HTTP/1.1\r\n${host}x-forwarded-for: 10.9.9.9\r\n\r\n`,
  );
  await until(() => (received.match(/HTTP\/1\.1 200/g) ?? []).length === 2, "two answers");
  assert.deepEqual(
    backend.requests.map((r) => [r.url, r.headers["x-forwarded-for"], r.headers["x-forwarded-proto"]]),
    [
      ["/a", "127.0.0.1", "https"],
      ["/b", "127.0.0.1", "https"],
    ],
  );
  assert.equal(backend.connections, 1);
  socket.destroy();

  const smuggler = tlsConnect({ host: "127.0.0.1", port, servername: "dash.ts.example.com", ca: pki.caPem });
  await new Promise<void>((resolve) => smuggler.once("secureConnect", () => resolve()));
  let refused = "";
  smuggler.on("data", (chunk: Buffer) => (refused += chunk.toString("latin1")));
  const ended = new Promise<void>((resolve) => smuggler.once("end", () => resolve()));
  smuggler.write(`POST / HTTP/1.1\r\n${host}content-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`);
  await ended; // the agent closes after its answer
  assert.match(refused, /^HTTP\/1\.1 400 Bad Request\r\n/);
  smuggler.destroy();
  assert.equal(backend.connections, 1, "no backend dial for a refused head");
});

test("a client that never starts the TLS handshake is closed after limits.headerTimeoutSeconds and frees its slot", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(
    t,
    ingress([expose("web", dash, ["dash.ts.example.com"], backend.port)], { headerTimeoutSeconds: 0.2 }),
  );
  const port = agent.ports.exposes[0].listenPort;
  const silent = netConnect({ host: "127.0.0.1", port });
  silent.resume();
  silent.on("error", () => silent.destroy());
  await new Promise<void>((resolve) => silent.once("close", () => resolve())); // only the agent closes it
  const answer = await ask({ port, servername: "dash.ts.example.com" });
  assert.equal(answer.status, 200);
});

/** A TLS client whose first bytes on the wire are `header` — in the same segment as its ClientHello. */
async function tlsBehindProxyHeader(port: number, header: Buffer): Promise<TLSSocket> {
  const raw = netConnect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve) => raw.once("connect", () => resolve()));
  let first = true;
  const wire = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      raw.write(first ? Buffer.concat([header, chunk]) : chunk, cb);
      first = false;
    },
    final(cb) {
      raw.end(cb);
    },
  });
  raw.on("data", (d: Buffer) => wire.push(d));
  raw.on("end", () => wire.push(null));
  raw.on("error", (err) => wire.destroy(err));
  const socket = tlsConnect({ socket: wire, servername: "dash.ts.example.com", ca: pki.caPem });
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", () => resolve());
    socket.once("error", reject);
  });
  return socket;
}

function proxyV2(ip: string, port: number): Buffer {
  const sig = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
  const body = Buffer.alloc(12);
  body.set(ip.split(".").map(Number), 0);
  body.set([100, 100, 100, 100], 4); // destination: the node's address
  body.writeUInt16BE(port, 8);
  body.writeUInt16BE(443, 10);
  return Buffer.concat([sig, Buffer.from([0x21, 0x11, 0x00, 12]), body]);
}

test("proxyProtocol: the tailnet client's address from tailscaled's PROXY header (v2 or v1) is X-Forwarded-For; a connection without one is closed", async (t) => {
  const backend = await backendFor(t);
  const agent = await agentFor(
    t,
    ingress([{ ...expose("web", dash, ["dash.ts.example.com"], backend.port), proxyProtocol: true }], {
      headerTimeoutSeconds: 0.5,
    }),
  );
  const port = agent.ports.exposes[0].listenPort;
  const request = "GET /who HTTP/1.1\r\nhost: dash.ts.example.com\r\nconnection: close\r\n\r\n";
  for (const [i, [header, want]] of [
    [proxyV2("100.64.0.9", 40000), "100.64.0.9"],
    [Buffer.from("PROXY TCP6 fd7a:115c:a1e0::9 fd7a:115c:a1e0::1 40001 443\r\n"), "fd7a:115c:a1e0::9"],
  ].entries()) {
    const socket = await tlsBehindProxyHeader(port, header as Buffer);
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    socket.write(request);
    await until(() => backend.requests.length === i + 1 && received.includes("\r\n\r\n"), "answer");
    assert.match(received, /^HTTP\/1\.1 200/);
    assert.equal(backend.requests.at(-1)?.headers["x-forwarded-for"], want);
    socket.destroy();
  }
  const plain = tlsConnect({ host: "127.0.0.1", port, servername: "dash.ts.example.com", ca: pki.caPem });
  const failed = await new Promise<boolean>((resolve) => {
    plain.once("secureConnect", () => resolve(false));
    plain.once("error", () => resolve(true));
    plain.once("close", () => resolve(true));
  });
  assert.ok(failed, "a TLS client without a PROXY header is refused");
  plain.destroy();
  assert.equal(backend.requests.length, 2);
});
