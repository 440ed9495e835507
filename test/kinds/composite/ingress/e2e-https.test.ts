/**
 * TailnetIngress end to end over real TLS on loopback: an agent serving certificates from the test
 * PKI, configured by the operator's own builder; the Ready staircase through the Metacontroller
 * loop; key rotation at half-life; finalize.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import { ingressAgentConfig } from "../../../../src/kinds/composite/ingress/children.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { ingressNames } from "../../../../src/kinds/shared/ingress-names.js";
import { closedPort, startHttpBackend } from "../../../fakes/agent/echo.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../../../fakes/agent/pki.js";
import type { ServeHandler } from "../../../fakes/tailscaled-serve.js";
import { BASE, ingress, NS, service, TAG, tcpIngress, tlsSecret } from "./fixtures.js";
import { httpsGet, ingressAgent, sample, type World, world } from "./world.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({ names: ["dash.ts.example.com", "grafana-eu.ts.example.com"] });
});
after(() => pki.cleanup());

async function settle(w: World) {
  await w.mc.settle();
  assert.deepEqual(w.mc.errors, []);
}
const files = () => ({ certFile: cert.certFile, keyFile: cert.keyFile });

describe("TailnetIngress over real TLS", () => {
  it("reports TLSReady=Valid and BackendsReachable=Reachable, and an HTTPS request through the agent reaches the backend", async (t) => {
    const w = await world(t);
    const backend = await startHttpBackend();
    t.after(() => backend.close());
    w.mc.apply(tlsSecret("grafana-tls", cert));
    w.mc.apply(service("grafana"));
    const parent = w.mc.apply(ingress("grafana"));
    const agent = await ingressAgent(t, parent, { backendPort: backend.port, tls: files() });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    w.register();
    await settle(w);

    assert.equal(w.condition("TLSReady").status, "True");
    assert.equal(w.condition("TLSReady").reason, "Valid");
    assert.equal(w.condition("BackendsReachable").reason, "Reachable");
    assert.equal(w.condition("Ready").status, "True");
    const status = w.ingress()?.status as Record<string, unknown>;
    assert.deepEqual(status.exposes, [
      { name: "web", dnsName: "dash.ts.example.com", dnsAliases: ["grafana-eu.ts.example.com"], reachable: true },
    ]);

    // The ConfigMap is what the agent was started from (before the pod's rewrites), and it is valid.
    const cm = w.mc.get("v1", "ConfigMap", "grafana-agent", NS);
    const data = cm?.data as Record<string, string>;
    const config = JSON.parse(data["config.json"]) as unknown;
    assert.deepEqual(config, ingressAgentConfig(parent, readIngressSpec(parent), ingressNames(parent, BASE).exposes));
    validateAgentConfig(config);
    const serve = JSON.parse(data["serve.json"]) as { TCP: Record<string, ServeHandler> };
    assert.deepEqual(serve, { TCP: { "443": { TCPForward: "127.0.0.2:20000", ProxyProtocol: 2 } } });

    // Through tailscaled's serve forward as the operator configured it: a PROXY v2 header first, whose
    // source (the tailnet client) the backend sees in X-Forwarded-For.
    const port = agent.ports.exposes[0].listenPort;
    const client = { ip: "100.64.0.7", port: 41000 };
    for (const name of ["dash.ts.example.com", "grafana-eu.ts.example.com"]) {
      const via = { serve: serve.TCP["443"], client, nodeIp: "100.64.0.1" };
      const answer = await httpsGet(port, name, pki.caPem, `/through/${name}`, via);
      assert.equal(answer.status, 200);
      assert.equal((JSON.parse(answer.body) as { url: string }).url, `/through/${name}`);
    }
    assert.deepEqual(
      backend.requests.map((r) => [r.url, r.headers["x-forwarded-for"]]),
      [
        ["/through/dash.ts.example.com", "100.64.0.7"],
        ["/through/grafana-eu.ts.example.com", "100.64.0.7"],
      ],
      "both requests reached the backend, from the tailnet client's address",
    );
    await assert.rejects(
      httpsGet(port, "dash.ts.example.com", pki.caPem, "/no-header"),
      "a connection without the PROXY header tailscaled sends is refused",
    );
    assert.equal(backend.requests.length, 2);

    const before = JSON.stringify(w.ingress()?.status);
    assert.equal(await w.mc.settle(), 1);
    assert.equal(JSON.stringify(w.ingress()?.status), before);
  });

  it("staircase: Ready repeats the next blocker — NotRegistered, PolicyDenied, TLSSecretMissing, Unreachable — then Ready", async (t) => {
    const w = await world(t);
    const backend = await startHttpBackend();
    t.after(() => backend.close());
    w.mc.apply(service("grafana"));
    const parent = w.mc.apply(ingress("grafana", { allowFrom: ["group:ops"] }));
    const down = await ingressAgent(t, parent, { backendPort: await closedPort(), tls: files() });
    w.pointPodsAt(down.metricsPort);

    const expectReady = (reason: string, condition: string) => {
      const ready = w.condition("Ready");
      assert.equal(ready.reason, reason);
      assert.equal(ready.status, "False");
      assert.equal(ready.message, w.condition(condition).message, `Ready repeats ${condition}`);
    };
    await settle(w);
    expectReady("NotRegistered", "Registered");
    w.register();
    await settle(w);
    expectReady("PolicyDenied", "PolicyGranted");
    const live = w.ingress();
    w.mc.apply({ ...(live as typeof parent), spec: { ...(live?.spec as object), allowFrom: ["group:eng"] } });
    await settle(w);
    expectReady("TLSSecretMissing", "TLSReady");
    w.mc.apply(tlsSecret("grafana-tls", cert));
    await settle(w);
    expectReady("Unreachable", "BackendsReachable");
    const up = await ingressAgent(t, parent, { backendPort: backend.port, tls: files() });
    w.pointPodsAt(up.metricsPort);
    await settle(w);
    assert.equal(w.condition("Ready").status, "True");
    assert.equal(w.condition("Ready").reason, "Ready");
  });

  it("rotates the pre-auth key at half-life in place: the same Secret, the StatefulSet untouched (issue 32)", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    const keyOf = () => w.mc.list("Secret").find((s) => s.metadata.name === "grafana-authkey");
    const idOf = () => keyOf()?.metadata.annotations?.["tailnet.internal/key-id"];
    const sts = () => {
      const o = w.mc.get("apps/v1", "StatefulSet", "grafana-agent-0", NS);
      return JSON.stringify({ ...o, status: undefined });
    };
    const first = idOf();
    const before = sts();
    w.clock.now = new Date(w.clock.now.getTime() + 13 * 3600_000);
    await settle(w);
    const second = idOf();
    assert.ok(first && second && first !== second, `${first} → ${second}`);
    assert.equal(w.mc.list("Secret").filter((s) => s.metadata.name.startsWith("grafana-authkey")).length, 1);
    assert.equal(sts(), before, "TS_AUTHKEY names the Secret, never the key: no pod rolls");
    assert.equal(w.hs.count("POST", /^\/api\/v1\/preauthkey$/), 2);
  });

  it("finalize deletes the nodes carrying exactly its tag and expires its keys; a Headscale failure retries", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    w.register();
    const shared = w.hs.addNode({ name: "shared", tags: [TAG, "tag:other"] });
    const foreign = w.hs.addNode({ name: "other", tags: ["tag:other"] });
    const mine = [...w.hs.state.nodes.values()].find((n) => n.name === `grafana-${NS}`);
    const ourKeys = [...w.hs.state.preAuthKeys.values()].filter((k) => k.aclTags.join() === TAG);
    assert.ok(mine && ourKeys.length === 1);
    await settle(w);

    await w.hs.fault({ kind: "status", status: 500, path: /^\/api\/v1\/node\/\d+$/ });
    w.mc.delete("tailnet.internal/v1alpha1", "TailnetIngress", "grafana", NS);
    await settle(w);
    assert.ok(w.ingress(), "not finalized while Headscale refuses the delete");
    assert.ok(w.hs.state.nodes.has(mine.id));
    assert.deepEqual(w.mc.list("StatefulSet"), [], "the agent is removed at once");

    await w.hs.clearFaults();
    await settle(w);
    assert.equal(w.ingress(), undefined, "finalized");
    assert.equal(w.hs.state.nodes.has(mine.id), false, "its node is deleted");
    assert.ok(w.hs.state.nodes.has(shared.id), "a node that also carries another tag is kept");
    assert.ok(w.hs.state.nodes.has(foreign.id));
    for (const k of ourKeys) assert.ok(k.expiration.getTime() <= Date.now(), `key ${k.id} expired`);
    const text = await w.metrics();
    assert.equal(
      sample(text, "tailnet_auth_key_expiry_timestamp_seconds", {
        kind: "TailnetIngress",
        namespace: NS,
        name: "grafana",
      }),
      undefined,
    );
    assert.equal(
      sample(text, "tailnet_resource_ready", {
        kind: "TailnetIngress",
        namespace: NS,
        name: "grafana",
        reason: "Ready",
      }),
      undefined,
    );
  });
});
