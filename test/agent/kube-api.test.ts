// The Kubernetes API proxy expose (mode kube-api) on loopback: a raw TLS stand-in for kube-apiserver that
// records every request head byte for byte, a fake LocalAPI answering WhoIs, and clients that write raw
// bytes so that duplicates, odd casing and obs-fold reach the agent exactly as an attacker would send them.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createServer, type TLSSocket } from "node:tls";
import type { AgentLogger, LogFields } from "../../src/agent/log.js";
import { type RunningAgent, startAgent } from "../../src/agent/main.js";
import type { AgentConfigInput } from "../../src/contract/agent-config.js";
import { type FakeLocalApi, fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";
import { createTestPki, type TestPki } from "../fakes/agent/pki.js";
import { attempt, connectTo, metricsText, sample, until } from "./helpers.js";

/** Where tailscaled's serve dials (src/contract/ports.ts POD_LOCAL_HOST) and where its netstack forwards a peer's own connection. */
const SERVE_HOST = "127.0.0.2";
const NETSTACK_HOST = "127.0.0.1";
const SA_TOKEN = "sa-token-0123456789abcdef";
const CLIENT_TOKEN = "client-secret-token-do-not-forward";

let pki: TestPki;
let dir: string;
let caFile: string;
let tokenFile: string;
let apiserver: FakeApiServer;
let localapi: FakeLocalApi;

interface FakeApiServer {
  port: number;
  /** Every request head the API server received (text up to the blank line), in order. */
  heads: string[];
  close(): Promise<void>;
}

/**
 * Answers every request with a small JSON body; a request carrying `upgrade:` is answered 101 and then
 * echoes raw bytes (an exec/port-forward stream stand-in), unless its path starts with /deny, which gets
 * the 403 kube-apiserver would send.
 */
async function startFakeApiServer(key: string, cert: string): Promise<FakeApiServer> {
  const heads: string[] = [];
  const sockets = new Set<TLSSocket>();
  const server = createServer({ key, cert, ALPNProtocols: ["http/1.1"] }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let buffered = Buffer.alloc(0);
    let raw = false;
    socket.on("data", (chunk: Buffer) => {
      if (raw) {
        socket.write(chunk);
        return;
      }
      buffered = Buffer.concat([buffered, chunk]);
      for (let end = buffered.indexOf("\r\n\r\n"); end >= 0; end = buffered.indexOf("\r\n\r\n")) {
        const head = buffered.toString("latin1", 0, end);
        const length = Number(/\r\ncontent-length: ?([0-9]+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.subarray(end + 4 + length);
        heads.push(head);
        const path = head.split(" ")[1];
        if (/\r\nupgrade:/i.test(head) && !path.startsWith("/deny")) {
          socket.write("HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: SPDY/3.1\r\n\r\n");
          raw = true;
          if (buffered.length > 0) socket.write(buffered);
          return;
        }
        const status = path.startsWith("/deny") ? "403 Forbidden" : "200 OK";
        const body = JSON.stringify({ kind: "Status", path });
        socket.write(
          `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
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
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const alice = {
  Node: { ID: 7, Name: "alice-laptop.ts.example.com.", Tags: null, Addresses: ["100.64.0.7/32"] },
  UserProfile: { ID: 3, LoginName: "alice@example.com", DisplayName: "Alice" },
  CapMap: {
    "tailscale.com/cap/kubernetes": [
      { impersonate: { groups: ["eng", "viewers"] } },
      { impersonate: { groups: ["eng"] } },
    ],
  },
};
const ci = {
  Node: { ID: 9, Name: "ci-runner.ts.example.com.", Tags: ["tag:ci", "tag:build"], Addresses: ["100.64.0.9/32"] },
  UserProfile: { ID: 0, LoginName: "tagged-devices", DisplayName: "Tagged Devices" },
  CapMap: {},
};

before(async () => {
  pki = await createTestPki();
  const serving = await pki.issue({ names: ["kubernetes.default.svc"], ips: ["127.0.0.1"] });
  dir = await mkdtemp(join(tmpdir(), "kube-api-"));
  caFile = join(dir, "ca.crt");
  tokenFile = join(dir, "token");
  await writeFile(caFile, pki.caPem);
  await writeFile(tokenFile, `${SA_TOKEN}\n`);
  apiserver = await startFakeApiServer(serving.keyPem, serving.certPem);
  localapi = await startFakeLocalApi(fakeStatus({ HostName: "kube", TailscaleIPs: ["100.64.0.1"], Online: true }, []));
  localapi.setWhoIs({ "127.0.0.1": alice, "100.64.0.7": alice, "100.64.0.9": ci });
});
after(async () => {
  await localapi.close();
  await apiserver.close();
  await rm(dir, { recursive: true, force: true });
  await pki.cleanup();
});

interface Started {
  agent: RunningAgent;
  port: number;
  logs: { msg: string; fields: LogFields }[];
}

async function kubeAgent(t: { after(fn: () => unknown): void }, proxyProtocol = false): Promise<Started> {
  const logs: { msg: string; fields: LogFields }[] = [];
  const record = (msg: string, fields?: LogFields) => logs.push({ msg, fields: fields ?? {} });
  const log: AgentLogger = { debug: record, info: record, warn: record, error: record };
  // the pod's layout (ingress children.ts): the listener where only serve dials, 127.0.0.1 reset and counted
  const config: AgentConfigInput = {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    refuseHost: NETSTACK_HOST,
    tailscale: { localApiSocket: localapi.socketPath },
    exposes: [
      {
        name: "kube",
        mode: "kube-api",
        listenPort: 0,
        backend: { host: "127.0.0.1", port: apiserver.port },
        kubeApi: { caFile, tokenFile },
        proxyProtocol,
      },
    ],
  };
  const agent = await startAgent(config, { timers: false, defaultMetrics: false, log });
  t.after(() => agent.close());
  return { agent, port: agent.ports.exposes[0].listenPort, logs };
}

/** Writes raw bytes, reads until the agent closes or `done` says the answer is complete. */
async function exchange(port: number, bytes: string, done?: (text: string) => boolean): Promise<string> {
  const socket = await connectTo(port, SERVE_HOST);
  let text = "";
  return new Promise((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (done?.(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.once("end", () => socket.end());
    socket.once("close", () => resolve(text));
    socket.write(bytes);
  });
}

const answered = (text: string) => /\r\n\r\n\{[^}]*\}$/.test(text);

function fieldLines(head: string): string[] {
  return head.split("\r\n").slice(1);
}

function valuesOf(head: string, name: string): string[] {
  return fieldLines(head)
    .filter((line) => line.toLowerCase().startsWith(`${name}:`))
    .map((line) => line.slice(name.length + 1).trim());
}

test("a client's Authorization and every Impersonate-* header, in any case and repeated, never reach the API server", async (t) => {
  const { port } = await kubeAgent(t);
  const before = apiserver.heads.length;
  const request = [
    "GET /api/v1/namespaces/dev/pods HTTP/1.1",
    "Host: kube.ts.example.com",
    `Authorization: Bearer ${CLIENT_TOKEN}`,
    `aUtHoRiZaTiOn: Basic ${Buffer.from("admin:admin").toString("base64")}`,
    "Impersonate-User: system:admin",
    "impersonate-user: system:kube-controller-manager",
    "IMPERSONATE-GROUP: system:masters",
    "Impersonate-Group: system:masters",
    "Impersonate-Uid: 0",
    "Impersonate-Extra-Scopes: everything",
    "impersonate-extra-acme.com%2Fproject: x",
    "X-Remote-User: system:admin",
    "X-Remote-Group: system:masters",
    "Proxy-Authorization: Basic eDp5",
    "Accept: application/json",
    "",
    "",
  ].join("\r\n");
  const answer = await exchange(port, request, answered);
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  assert.equal(apiserver.heads.length, before + 1);
  const head = apiserver.heads[before];
  assert.deepEqual(valuesOf(head, "authorization"), [`Bearer ${SA_TOKEN}`]);
  assert.deepEqual(valuesOf(head, "impersonate-user"), ["alice@example.com"]);
  assert.deepEqual(valuesOf(head, "impersonate-group"), ["eng", "viewers"]);
  const impersonation = fieldLines(head).filter((line) => /^impersonate-/i.test(line));
  assert.deepEqual(impersonation, [
    "impersonate-user: alice@example.com",
    "impersonate-group: eng",
    "impersonate-group: viewers",
  ]);
  assert.doesNotMatch(head, /system:admin|system:masters|x-remote-|proxy-authorization|everything/i);
  assert.doesNotMatch(head, new RegExp(CLIENT_TOKEN));
  assert.deepEqual(valuesOf(head, "accept"), ["application/json"], "other headers pass");
});

test("obs-fold, a space before the colon and a bare LF are refused with 400 before anything is forwarded", async (t) => {
  const { port } = await kubeAgent(t);
  const before = apiserver.heads.length;
  for (const smuggled of [
    "X-Note: a\r\n Impersonate-User: system:admin",
    "Impersonate-User : system:admin",
    "X-Note: a\nImpersonate-User: system:admin",
    "Impersonate-User\t: system:admin",
  ]) {
    const answer = await exchange(port, `GET /api HTTP/1.1\r\nHost: k\r\n${smuggled}\r\n\r\n`);
    assert.match(answer, /^HTTP\/1\.1 400 /, JSON.stringify(smuggled));
  }
  assert.equal(apiserver.heads.length, before, "nothing reached the API server");
});

test("Impersonate-* in a chunked request's trailers is dropped; a Connection option cannot drop the agent's own headers", async (t) => {
  const { port } = await kubeAgent(t);
  const before = apiserver.heads.length;
  const request =
    "POST /api/v1/namespaces/dev/configmaps HTTP/1.1\r\nHost: k\r\nConnection: impersonate-user, authorization\r\n" +
    "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nImpersonate-User: system:admin\r\nAuthorization: Bearer x\r\nX-Trailer: ok\r\n\r\n";
  // the fake API server reads to the blank line only: the trailer section arrives as the next "head"
  const answer = await exchange(port, request, answered);
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  await until(() => apiserver.heads.length >= before + 1, "the request");
  const forwarded = apiserver.heads.slice(before).join("\r\n\r\n");
  assert.deepEqual(valuesOf(apiserver.heads[before], "impersonate-user"), ["alice@example.com"]);
  assert.deepEqual(valuesOf(apiserver.heads[before], "authorization"), [`Bearer ${SA_TOKEN}`]);
  assert.doesNotMatch(forwarded, /system:admin|Bearer x/);
});

test("a tagged node is tailnet:node:<name> in one group per tag; the PROXY header's source is the peer asked about", async (t) => {
  const { port } = await kubeAgent(t, true);
  const before = apiserver.heads.length;
  const proxy = "PROXY TCP4 100.64.0.9 100.64.0.1 41000 443\r\n";
  const answer = await exchange(port, `${proxy}GET /api/v1/namespaces/ci/pods HTTP/1.1\r\nHost: k\r\n\r\n`, answered);
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  const head = apiserver.heads[before];
  assert.deepEqual(valuesOf(head, "impersonate-user"), ["tailnet:node:ci-runner.ts.example.com"]);
  assert.deepEqual(valuesOf(head, "impersonate-group"), ["tailnet:tag:ci", "tailnet:tag:build"]);
  assert.deepEqual(valuesOf(head, "x-forwarded-for"), ["100.64.0.9"]);
  assert.ok(localapi.requests.some((r) => r.path === "/localapi/v0/whois?addr=100.64.0.9"));
});

test("an unknown peer or a failing WhoIs is refused with 403 and a Status body; nothing is forwarded", async (t) => {
  const { port } = await kubeAgent(t, true);
  const before = apiserver.heads.length;
  const unknown = await exchange(
    port,
    "PROXY TCP4 100.64.0.66 100.64.0.1 41000 443\r\nGET /api HTTP/1.1\r\nHost: k\r\n\r\n",
  );
  assert.match(unknown, /^HTTP\/1\.1 403 Forbidden\r\n/);
  const status = JSON.parse(unknown.slice(unknown.indexOf("\r\n\r\n") + 4));
  assert.equal(status.kind, "Status");
  assert.equal(status.code, 403);
  assert.equal(status.reason, "Forbidden");
  assert.match(status.message, /100\.64\.0\.66 is not a known tailnet peer/);

  localapi.setFailure(500);
  t.after(() => localapi.setFailure(undefined));
  const failing = await exchange(
    port,
    "PROXY TCP4 100.64.0.7 100.64.0.1 41000 443\r\nGET /api HTTP/1.1\r\nHost: k\r\n\r\n",
  );
  assert.match(failing, /^HTTP\/1\.1 403 Forbidden\r\n/);
  assert.match(failing, /could not identify 100\.64\.0\.7/);
  // without a PROXY header there is no peer address to ask about: refused as well
  const bare = await exchange(port, "GET /api HTTP/1.1\r\nHost: k\r\n\r\n");
  assert.doesNotMatch(bare, /^HTTP\/1\.1 200/);
  assert.equal(apiserver.heads.length, before);
});

test("an upgrade (exec, port-forward) is forwarded with the impersonation headers and the 101 stream is piped both ways", async (t) => {
  const { port, logs } = await kubeAgent(t);
  const before = apiserver.heads.length;
  const socket = await connectTo(port, SERVE_HOST);
  let text = "";
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
  socket.write(
    "POST /api/v1/namespaces/dev/pods/web/exec?command=sh&stdin=true HTTP/1.1\r\nHost: k\r\n" +
      "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n" +
      "Impersonate-User: system:admin\r\n\r\n",
  );
  await until(() => text.includes("\r\n\r\n"), "the 101");
  assert.match(text, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  socket.write("raw-stream-bytes");
  await until(() => text.endsWith("raw-stream-bytes"), "the echo");
  socket.destroy();
  const head = apiserver.heads[before];
  assert.deepEqual(valuesOf(head, "impersonate-user"), ["alice@example.com"]);
  assert.deepEqual(valuesOf(head, "upgrade"), ["SPDY/3.1"]);
  assert.deepEqual(valuesOf(head, "x-stream-protocol-version"), ["v4.channel.k8s.io"]);
  await until(() => logs.some((l) => l.msg === "kube-api request" && l.fields.status === 101), "the log line");
});

test("every request is logged with the tailnet identity, the Kubernetes identity, verb, path and status, never a token", async (t) => {
  const { port, logs } = await kubeAgent(t);
  const requests = [
    "GET /api/v1/namespaces/dev/pods/web HTTP/1.1",
    "GET /api/v1/namespaces/dev/pods?watch=true HTTP/1.1",
    "GET /deny/api/v1/secrets HTTP/1.1",
  ];
  const pipelined = requests
    .map((line) => `${line}\r\nHost: k\r\nAuthorization: Bearer ${CLIENT_TOKEN}\r\n\r\n`)
    .join("");
  await exchange(port, pipelined, (text) => (text.match(/HTTP\/1\.1 /g) ?? []).length === 3 && answered(text));
  await until(() => logs.filter((l) => l.msg === "kube-api request").length >= 3, "three log lines");
  const lines = logs.filter((l) => l.msg === "kube-api request").map((l) => l.fields);
  assert.deepEqual(
    lines.map((f) => [f.tailnet, f.user, f.groups, f.verb, f.path, f.status]),
    [
      [
        "alice@example.com (alice-laptop.ts.example.com)",
        "alice@example.com",
        "eng,viewers",
        "get",
        "/api/v1/namespaces/dev/pods/web",
        200,
      ],
      [
        "alice@example.com (alice-laptop.ts.example.com)",
        "alice@example.com",
        "eng,viewers",
        "watch",
        "/api/v1/namespaces/dev/pods",
        200,
      ],
      [
        "alice@example.com (alice-laptop.ts.example.com)",
        "alice@example.com",
        "eng,viewers",
        "get",
        "/deny/api/v1/secrets",
        403,
      ],
    ],
  );
  assert.doesNotMatch(JSON.stringify(logs), new RegExp(`${CLIENT_TOKEN}|${SA_TOKEN}`));
});

test("metrics: requests by status code and refusals by reason, per expose", async (t) => {
  const { agent, port } = await kubeAgent(t, true);
  const zero = await metricsText(agent);
  for (const reason of [
    "unknown_peer",
    "whois_failed",
    "identity_refused",
    "no_peer_address",
    "credentials_unreadable",
  ])
    assert.equal(sample(zero, "tailnet_agent_kube_api_refused_total", { name: "kube", reason }), 0, reason);
  await exchange(port, "PROXY TCP4 100.64.0.66 100.64.0.1 41000 443\r\nGET /api HTTP/1.1\r\nHost: k\r\n\r\n");
  await exchange(
    port,
    "PROXY TCP4 100.64.0.7 100.64.0.1 41000 443\r\nGET /api HTTP/1.1\r\nHost: k\r\n\r\nGET /deny HTTP/1.1\r\nHost: k\r\n\r\n",
    (text) => (text.match(/HTTP\/1\.1 /g) ?? []).length === 2 && answered(text),
  );
  await until(
    async () =>
      sample(await metricsText(agent), "tailnet_agent_kube_api_requests_total", { name: "kube", code: "403" }) === 1,
    "the 403",
  );
  const text = await metricsText(agent);
  assert.equal(sample(text, "tailnet_agent_kube_api_requests_total", { name: "kube", code: "200" }), 1);
  assert.equal(sample(text, "tailnet_agent_kube_api_refused_total", { name: "kube", reason: "unknown_peer" }), 1);
});

test("each connection is its own identity: two peers through one listener never share impersonation", async (t) => {
  const { port } = await kubeAgent(t, true);
  const before = apiserver.heads.length;
  const ask = (ip: string) =>
    exchange(port, `PROXY TCP4 ${ip} 100.64.0.1 41000 443\r\nGET /api/v1/pods HTTP/1.1\r\nHost: k\r\n\r\n`, answered);
  await Promise.all([ask("100.64.0.7"), ask("100.64.0.9"), ask("100.64.0.7"), ask("100.64.0.9")]);
  const users = apiserver.heads
    .slice(before)
    .map((head) => `${valuesOf(head, "impersonate-user")}|${valuesOf(head, "x-forwarded-for")}`)
    .sort();
  assert.deepEqual(users, [
    "alice@example.com|100.64.0.7",
    "alice@example.com|100.64.0.7",
    "tailnet:node:ci-runner.ts.example.com|100.64.0.9",
    "tailnet:node:ci-runner.ts.example.com|100.64.0.9",
  ]);
});

test("an API server whose certificate the cluster CA does not sign gets nothing: 502, no request sent", async (t) => {
  const other = await createTestPki();
  t.after(() => other.cleanup());
  const wrongCa = join(dir, "wrong-ca.crt");
  await writeFile(wrongCa, other.caPem);
  const record = () => {};
  const agent = await startAgent(
    {
      role: "ingress",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      tailscale: { localApiSocket: localapi.socketPath },
      exposes: [
        {
          name: "kube",
          mode: "kube-api",
          listenPort: 0,
          backend: { host: "127.0.0.1", port: apiserver.port },
          kubeApi: { caFile: wrongCa, tokenFile },
        },
      ],
    },
    { timers: false, defaultMetrics: false, log: { debug: record, info: record, warn: record, error: record } },
  );
  t.after(() => agent.close());
  const before = apiserver.heads.length;
  const answer = await exchange(agent.ports.exposes[0].listenPort, "GET /api HTTP/1.1\r\nHost: k\r\n\r\n");
  assert.match(answer, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
  assert.equal(apiserver.heads.length, before, "no request head reached the impostor");
});

test("a connection that bypassed serve (netstack's 127.0.0.1 forward) with a forged PROXY header naming alice is reset unread and counted (issue 31)", async (t) => {
  const { agent, port, logs } = await kubeAgent(t, true);
  const heads = apiserver.heads.length;
  const whois = localapi.requests.length;
  const forged =
    "PROXY TCP4 100.64.0.7 100.64.0.1 41000 443\r\nGET /api/v1/namespaces/dev/secrets HTTP/1.1\r\nHost: k\r\n\r\n";
  for (let i = 0; i < 3; i++) {
    const socket = await connectTo(port, NETSTACK_HOST).catch((err: NodeJS.ErrnoException) => err);
    if (socket instanceof Error) {
      assert.equal(socket.code, "ECONNRESET");
      continue;
    }
    socket.write(forged);
    const got = await new Promise<{ bytes: number }>((resolve) => {
      let bytes = 0;
      socket.on("data", (chunk: Buffer) => (bytes += chunk.length));
      socket.once("close", () => resolve({ bytes }));
    });
    assert.equal(got.bytes, 0, "not a byte answered");
  }
  await until(
    async () => sample(await metricsText(agent), "tailnet_agent_serve_bypass_refused_total", { name: "kube" }) === 3,
    "three refusals counted",
  );
  assert.equal(apiserver.heads.length, heads, "nothing reached the API server");
  assert.equal(localapi.requests.length, whois, "WhoIs was never asked: the forged address was never read");
  const warnings = logs.filter((l) => l.msg === "refused a tailnet connection that bypassed tailscaled serve");
  assert.deepEqual(
    warnings,
    [
      {
        msg: "refused a tailnet connection that bypassed tailscaled serve",
        fields: { name: "kube", port, host: NETSTACK_HOST },
      },
    ],
    "one warning per port and minute, however many probes",
  );
  // the same bytes through serve's address are alice's, as before
  const served = await exchange(port, forged, answered);
  assert.match(served, /^HTTP\/1\.1 200 OK/);
  // an attempt is an outcome, never a hang: the reset comes at once
  const quick = await attempt(port, NETSTACK_HOST);
  assert.equal(quick.bytes, 0);
});
