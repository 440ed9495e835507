// The kube-api expose over HTTPS (its `tls`: a Secret, or the Secret a cert-manager Certificate fills): behind
// tailscaled's PROXY v2 header the tailnet side is TLS with the mounted pair, verified by the client against the
// issuing CA; the peer is still identified by WhoIs and impersonated; a renewed pair (written as the kubelet swaps a
// Secret volume) serves the next handshakes while a held keep-alive connection keeps working; plain HTTP is not
// answered and nothing reaches the API server.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createServer, type PeerCertificate, type TLSSocket, connect as tlsConnect } from "node:tls";
import { type RunningAgent, startAgent } from "../../src/agent/main.js";
import type { AgentConfigInput } from "../../src/contract/agent-config.js";
import { type FakeLocalApi, fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";
import { createTestPki, type TestPki, writeSecretVolume } from "../fakes/agent/pki.js";
import { proxyHeader } from "../fakes/tailscaled-serve.js";
import { connectTo, until } from "./helpers.js";

const SERVE_HOST = "127.0.0.2";
const NAME = "kube.ts.example.com";
const ALICE_IP = "100.64.0.7";

let pki: TestPki;
let dir: string;
let localapi: FakeLocalApi;
let apiserver: { port: number; heads: string[]; close(): Promise<void> };

/** A TLS stand-in for kube-apiserver: records each request head, answers 200 with a small JSON body. */
async function fakeApiServer(key: string, cert: string) {
  const heads: string[] = [];
  const sockets = new Set<TLSSocket>();
  const server = createServer({ key, cert, ALPNProtocols: ["http/1.1"] }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let buffered = "";
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      for (let end = buffered.indexOf("\r\n\r\n"); end >= 0; end = buffered.indexOf("\r\n\r\n")) {
        heads.push(buffered.slice(0, end));
        buffered = buffered.slice(end + 4);
        const body = JSON.stringify({ kind: "Status", n: heads.length });
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    heads,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

before(async () => {
  pki = await createTestPki();
  dir = await mkdtemp(join(tmpdir(), "kube-api-tls-"));
  const serving = await pki.issue({ names: ["kubernetes.default.svc"], ips: ["127.0.0.1"] });
  apiserver = await fakeApiServer(serving.keyPem, serving.certPem);
  await writeFile(join(dir, "ca.crt"), pki.caPem);
  await writeFile(join(dir, "token"), "sa-token\n");
  localapi = await startFakeLocalApi(fakeStatus({ HostName: "kube", TailscaleIPs: ["100.64.0.1"], Online: true }, []));
  localapi.setWhoIs({
    [ALICE_IP]: {
      Node: { ID: 7, Name: "alice-laptop.ts.example.com.", Tags: null, Addresses: [`${ALICE_IP}/32`] },
      UserProfile: { ID: 3, LoginName: "alice@example.com", DisplayName: "Alice" },
      CapMap: {},
    },
  });
});
after(async () => {
  await localapi.close();
  await apiserver.close();
  await rm(dir, { recursive: true, force: true });
  await pki.cleanup();
});

async function kubeTlsAgent(t: { after(fn: () => unknown): void }, volume: string): Promise<RunningAgent> {
  const config: AgentConfigInput = {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: SERVE_HOST,
    tailscale: { localApiSocket: localapi.socketPath },
    exposes: [
      {
        name: "api",
        mode: "kube-api",
        listenPort: 0,
        backend: { host: "127.0.0.1", port: apiserver.port },
        kubeApi: { caFile: join(dir, "ca.crt"), tokenFile: join(dir, "token") },
        tls: { certFile: join(volume, "tls.crt"), keyFile: join(volume, "tls.key") },
        proxyProtocol: true,
        names: [NAME],
      },
    ],
  };
  const agent = await startAgent(config, { timers: false, defaultMetrics: false });
  t.after(() => agent.close());
  return agent;
}

/** A connection as tailscaled's serve makes it (PROXY v2 naming alice), then TLS verified for NAME against the CA. */
async function tailnetTls(port: number): Promise<TLSSocket> {
  const raw = await connectTo(port, SERVE_HOST);
  raw.write(proxyHeader(2, { ip: ALICE_IP, port: 40000 }, { ip: "100.64.0.1", port: 443 }));
  const socket = tlsConnect({ socket: raw, servername: NAME, ca: pki.caPem });
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", resolve);
    socket.once("error", reject);
  });
  return socket;
}

/** One request on a held connection: the response head and body. */
function get(socket: TLSSocket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (/\r\n\r\n\{[^}]*\}$/.test(text)) {
        socket.off("data", onData);
        resolve(text);
      }
    };
    socket.on("data", onData);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${NAME}\r\n\r\n`);
  });
}

test("kube-api with tls: HTTPS for the published name, the peer impersonated; a renewal keeps the held connection", async (t) => {
  const volume = await mkdtemp(join(tmpdir(), "kube-api-secret-"));
  t.after(() => rm(volume, { recursive: true, force: true }));
  const first = await pki.issue({ names: [NAME] });
  await writeSecretVolume(volume, { "tls.crt": first.certPem, "tls.key": first.keyPem });
  const agent = await kubeTlsAgent(t, volume);
  const port = agent.ports.exposes[0].listenPort;

  const held = await tailnetTls(port);
  t.after(() => held.destroy());
  const serial = (s: TLSSocket) => (s.getPeerCertificate() as PeerCertificate).serialNumber;
  const firstSerial = serial(held);
  assert.match(await get(held, "/api/v1/namespaces/dev/pods"), /^HTTP\/1\.1 200 OK/);
  assert.match(apiserver.heads.at(-1) ?? "", /\r\nimpersonate-user: alice@example\.com/);

  // cert-manager renews: the kubelet swaps the Secret volume, the agent re-reads it (its timer; here by hand)
  const renewed = await pki.issue({ names: [NAME] });
  await writeSecretVolume(volume, { "tls.crt": renewed.certPem, "tls.key": renewed.keyPem });
  await agent.reloadCertificates();

  assert.match(await get(held, "/api/v1/namespaces/dev/pods?2"), /^HTTP\/1\.1 200 OK/, "held connection served");
  assert.equal(serial(held), firstSerial);
  const fresh = await tailnetTls(port);
  t.after(() => fresh.destroy());
  assert.notEqual(serial(fresh), firstSerial, "new handshakes get the renewed certificate");
  assert.match(await get(fresh, "/version"), /^HTTP\/1\.1 200 OK/);
});

test("kube-api with tls: plain HTTP behind the PROXY header gets no answer and reaches nothing", async (t) => {
  const volume = await mkdtemp(join(tmpdir(), "kube-api-secret-"));
  t.after(() => rm(volume, { recursive: true, force: true }));
  const pair = await pki.issue({ names: [NAME] });
  await writeSecretVolume(volume, { "tls.crt": pair.certPem, "tls.key": pair.keyPem });
  const agent = await kubeTlsAgent(t, volume);
  const port = agent.ports.exposes[0].listenPort;
  const before = apiserver.heads.length;
  const raw = await connectTo(port, SERVE_HOST);
  raw.write(proxyHeader(2, { ip: ALICE_IP, port: 40001 }, { ip: "100.64.0.1", port: 443 }));
  raw.write(`GET /api HTTP/1.1\r\nHost: ${NAME}\r\n\r\n`);
  let text = "";
  raw.on("data", (c: Buffer) => (text += c.toString("latin1")));
  raw.on("end", () => raw.end()); // half-open client (connectTo): close once the agent has
  await new Promise<void>((resolve) => raw.once("close", () => resolve()));
  assert.doesNotMatch(text, /HTTP\/1\.1/, "no HTTP answer over plaintext");
  assert.equal(apiserver.heads.length, before);
});

test("kube-api with tls, its Secret not there yet: handshakes fail until the pair appears, then succeed", async (t) => {
  const volume = await mkdtemp(join(tmpdir(), "kube-api-secret-"));
  t.after(() => rm(volume, { recursive: true, force: true }));
  const agent = await kubeTlsAgent(t, volume);
  const port = agent.ports.exposes[0].listenPort;
  await assert.rejects(tailnetTls(port));
  const pair = await pki.issue({ names: [NAME] });
  await writeSecretVolume(volume, { "tls.crt": pair.certPem, "tls.key": pair.keyPem });
  await agent.reloadCertificates();
  await until(async () => {
    try {
      (await tailnetTls(port)).destroy();
      return true;
    } catch {
      return false;
    }
  }, "the pair is served once it is mounted");
});
