// /status?names=: what the agent node's quad-100 resolver answers (LocalAPI dns-query), so the operator can
// tell whether Headscale serves the records file (DNSServed). The parser reads raw DNS answers; the fake
// LocalAPI answers like tailscaled, from the records Headscale handed the node.
import assert from "node:assert/strict";
import { test } from "node:test";
import { invalidNames, MAX_QUERIED_NAMES, parseDnsAnswer, queryName } from "../../src/agent/dns-query.js";
import { NAME_QUERY_TIMEOUT_MS } from "../../src/agent/main.js";
import type { AgentStatus } from "../../src/contract/agent-status.js";
import { dnsAnswer } from "../fakes/agent/dns-message.js";
import { fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";
import { agentFor, httpGet } from "./helpers.js";

const self = { HostName: "grafana-monitoring", TailscaleIPs: ["100.64.0.5"], Online: true };
// the backend is never dialled here: nothing probes without timers
const EXPOSE = { name: "web", listenPort: 0, mode: "tcp" as const, backend: { host: "127.0.0.1", port: 9 } };
const RECORDS = [
  { name: "grafana.ts.example.com", type: "A", value: "100.64.0.5" },
  { name: "grafana.ts.example.com", type: "A", value: "100.64.0.6" },
  { name: "loki.ts.example.com", type: "A", value: "100.64.0.9" },
];

test("parseDnsAnswer: rcode and A addresses, sorted, through compressed names; AAAA too", () => {
  assert.deepEqual(parseDnsAnswer(dnsAnswer("Grafana.ts.example.com.", RECORDS)), {
    rcode: "NOERROR",
    addresses: ["100.64.0.5", "100.64.0.6"],
  });
  assert.deepEqual(parseDnsAnswer(dnsAnswer("nope.ts.example.com", RECORDS)), { rcode: "NXDOMAIN", addresses: [] });
  assert.deepEqual(parseDnsAnswer(dnsAnswer("nope.ts.example.com", [], 2)), { rcode: "SERVFAIL", addresses: [] });
  // an AAAA answer written by hand: fd7a:115c:a1e0::9
  const aaaa = Buffer.concat([
    Buffer.from([0, 1, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0]),
    Buffer.from([1, 120, 0]), // the name "x", uncompressed
    Buffer.from([0, 28, 0, 1, 0, 0, 0, 60, 0, 16]),
    Buffer.from("fd7a115ca1e000000000000000000009", "hex"),
  ]);
  assert.deepEqual(parseDnsAnswer(aaaa), { rcode: "NOERROR", addresses: ["fd7a:115c:a1e0:0:0:0:0:9"] });
  assert.throws(() => parseDnsAnswer(Buffer.alloc(5)), /a DNS answer of 5 bytes/);
  assert.throws(() => parseDnsAnswer(dnsAnswer("grafana.ts.example.com", RECORDS).subarray(0, 50)), /truncated/);
});

test("invalidNames: 1 to 16 DNS names, the reason names the field", () => {
  assert.equal(invalidNames(["grafana.ts.example.com", "a.b.", "x"]), "");
  assert.equal(invalidNames([]), "names: empty");
  assert.equal(
    invalidNames(Array.from({ length: MAX_QUERIED_NAMES + 1 }, (_, i) => `n${i}.example`)),
    "names: 17 names, at most 16",
  );
  assert.equal(invalidNames(["ok.example", "bad_name.example"]), 'names: "bad_name.example" is not a DNS name');
  assert.equal(invalidNames(["a..b"]), 'names: "a..b" is not a DNS name');
  assert.equal(
    invalidNames([`${"a".repeat(63)}.`.repeat(4)]),
    `names: "${`${"a".repeat(63)}.`.repeat(4).slice(0, 64)}" is not a DNS name`,
  );
});

test("queryName asks the LocalAPI for A records; a refused LocalAPI is an error, never a throw", async (t) => {
  const localapi = await startFakeLocalApi(fakeStatus(self, []));
  t.after(() => localapi.close());
  localapi.setRecords(RECORDS);
  assert.deepEqual(await queryName(localapi.socketPath, "loki.ts.example.com", 1000), {
    name: "loki.ts.example.com",
    addresses: ["100.64.0.9"],
    rcode: "NOERROR",
    error: "",
  });
  assert.deepEqual(localapi.requests.at(-1)?.path, "/localapi/v0/dns-query?name=loki.ts.example.com&type=A");
  localapi.setFailure(403);
  assert.deepEqual(await queryName(localapi.socketPath, "loki.ts.example.com", 1000), {
    name: "loki.ts.example.com",
    addresses: [],
    error: "LocalAPI GET /localapi/v0/dns-query?name=loki.ts.example.com&type=A: 403 failed",
  });
});

test("/status?names= adds quad-100's answer per name, in the order asked; plain /status has none", async (t) => {
  const localapi = await startFakeLocalApi(fakeStatus(self, []));
  t.after(() => localapi.close());
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    tailscale: { localApiSocket: localapi.socketPath },
    exposes: [EXPOSE],
  });
  const plain = JSON.parse((await httpGet(agent.metricsPort, "/status")).body) as AgentStatus;
  assert.equal(plain.names, undefined);
  assert.ok(!localapi.requests.some((r) => r.path.startsWith("/localapi/v0/dns-query")), "nothing asked");

  const before = await httpGet(agent.metricsPort, "/status?names=grafana.ts.example.com");
  assert.deepEqual((JSON.parse(before.body) as AgentStatus).names, [
    { name: "grafana.ts.example.com", addresses: [], rcode: "NXDOMAIN", error: "" },
  ]);
  // Headscale reads the records file and hands the records to the node
  localapi.setRecords(RECORDS);
  const after = await httpGet(agent.metricsPort, "/status?names=loki.ts.example.com,grafana.ts.example.com");
  assert.equal(after.status, 200);
  assert.deepEqual((JSON.parse(after.body) as AgentStatus).names, [
    { name: "loki.ts.example.com", addresses: ["100.64.0.9"], rcode: "NOERROR", error: "" },
    { name: "grafana.ts.example.com", addresses: ["100.64.0.5", "100.64.0.6"], rcode: "NOERROR", error: "" },
  ]);

  const bad = await httpGet(agent.metricsPort, "/status?names=x%20y");
  assert.deepEqual([bad.status, bad.body], [400, 'names: "x y" is not a DNS name\n']);
});

test("/status?names= without a LocalAPI socket answers each name with the reason", async (t) => {
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [EXPOSE],
  });
  const answer = JSON.parse((await httpGet(agent.metricsPort, "/status?names=a.example")).body) as AgentStatus;
  assert.deepEqual(answer.names, [{ name: "a.example", addresses: [], error: "no LocalAPI socket configured" }]);
});

test("/status?names= answers within NAME_QUERY_TIMEOUT_MS when tailscaled does not answer; the rest of the status stays", async (t) => {
  const localapi = await startFakeLocalApi(fakeStatus(self, []));
  t.after(() => localapi.close());
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    tailscale: { localApiSocket: localapi.socketPath },
    exposes: [EXPOSE],
  });
  localapi.stallDnsQueries(true);
  const started = Date.now();
  const answer = await httpGet(agent.metricsPort, "/status?names=grafana.ts.example.com");
  const took = Date.now() - started;
  assert.equal(answer.status, 200);
  const status = JSON.parse(answer.body) as AgentStatus;
  assert.deepEqual(status.names, [
    {
      name: "grafana.ts.example.com",
      addresses: [],
      error: "LocalAPI GET /localapi/v0/dns-query?name=grafana.ts.example.com&type=A: timed out after 1s",
    },
  ]);
  assert.deepEqual(
    status.exposes.map((e) => e.name),
    ["web"],
    "the backends are still reported",
  );
  assert.ok(took >= NAME_QUERY_TIMEOUT_MS - 50 && took < 1900, `answered after ${took} ms (the operator waits 2 s)`);
});
