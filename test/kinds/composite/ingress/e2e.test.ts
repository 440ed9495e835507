/**
 * TailnetIngress end to end, one test per situation: the Metacontroller emulator → the real hook
 * server → the fake Headscale and real agents on loopback. Every IngressReason is reached (checked
 * by the last test), every answer is 200, no child is dropped on a failed observation, and the only
 * Headscale write of a sync is the pre-auth key.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { API_VERSION } from "../../../../src/api/schemas.js";
import { IngressReason } from "../../../../src/conditions/tables/ingress.js";
import { CommonReason } from "../../../../src/conditions/tables/shared.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { closedPort, startEchoServer } from "../../../fakes/agent/echo.js";
import { fakeStatus, startFakeLocalApi } from "../../../fakes/agent/localapi.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../../../fakes/agent/pki.js";
import type { FaultSpec } from "../../../fakes/headscale/index.js";
import { ingress, NS, service, TAG, tcpIngress, tlsSecret, WEB } from "./fixtures.js";
import { ingressAgent, policyText, sample, type World, world } from "./world.js";

const seen = new Set<string>();
/** Settles and records every reason now shown by an ingress. */
async function settle(w: World): Promise<void> {
  await w.mc.settle();
  for (const o of w.mc.list("TailnetIngress")) {
    for (const c of (o.status as { conditions?: { reason: string }[] } | undefined)?.conditions ?? [])
      seen.add(c.reason);
  }
  assert.deepEqual(w.mc.errors, [], "every hook answered 200");
}

const childKeys = (w: World, name = "grafana") => {
  const parent = w.ingress(name);
  return parent
    ? w.mc
        .childrenOf(parent)
        .map((c) => `${c.kind}/${c.metadata.name}`)
        .sort()
    : [];
};
/** The addresses Headscale gave the ingress's nodes, as status.nodes[].addresses lists them. */
const registeredAddresses = (w: World) =>
  [...w.hs.state.nodes.values()].filter((n) => n.tags.includes(TAG)).flatMap((n) => [n.ipv4, n.ipv6]);
const reasons = (w: World, name = "grafana") => {
  const status = w.ingress(name)?.status as { conditions?: { type: string; reason: string }[] } | undefined;
  // NodeIdentity is asserted by the identity tests (e2e-identity.test.ts), these rows are about serving
  return Object.fromEntries(
    (status?.conditions ?? []).filter((c) => c.type !== "NodeIdentity").map((c) => [c.type, c.reason]),
  );
};

let pki: TestPki;
let good: IssuedCertificate;
let dashOnly: IssuedCertificate;
let expired: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  good = await pki.issue({ names: ["dash.ts.example.com", "grafana-eu.ts.example.com"] });
  dashOnly = await pki.issue({ names: ["dash.ts.example.com"] });
  const past = Date.now() - 30 * 86400_000;
  expired = await pki.issue({
    names: ["dash.ts.example.com", "grafana-eu.ts.example.com"],
    notBefore: new Date(past),
    notAfter: new Date(past + 86400_000),
  });
});
after(() => pki.cleanup());

describe("TailnetIngress end to end", () => {
  it("NoTailnet: nothing is built and Headscale is not asked", async (t) => {
    const w = await world(t, { tailnet: false });
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    assert.equal(w.condition("Ready").reason, "NoTailnet");
    assert.equal(w.condition("Ready").message, 'Tailnet "home" not found');
    assert.deepEqual(childKeys(w), []);
    assert.equal(w.hs.requests.length, 0);
    w.mc.delete(API_VERSION, "TailnetIngress", "grafana", NS);
    await settle(w);
    assert.equal(w.ingress(), undefined, "released: without a Tailnet there is nothing to clean");
  });

  it("NoAPIKey: the Tailnet exists but has not published its credentials", async (t) => {
    const w = await world(t, { credentials: false });
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    assert.equal(w.condition("Ready").reason, "NoAPIKey");
    assert.equal(w.condition("PolicyGranted").reason, "Granted", "the allowlist is checked from the Tailnet spec");
    assert.equal(w.hs.requests.length, 0);
  });

  it("tcp: NotRegistered → registered, ProbeFailed → a real agent reaches the backend → Ready; stable", async (t) => {
    const w = await world(t);
    const echo = await startEchoServer();
    t.after(() => echo.close());
    const parent = w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    assert.deepEqual(reasons(w), {
      TagKnown: "Known",
      PolicyGranted: "Granted",
      Registered: "NotRegistered",
      BackendsReachable: "ProbeFailed",
      TLSReady: "TLSNotRequired",
      DNSServed: "ProbeFailed",
      Ready: "NotRegistered",
    });
    assert.deepEqual(childKeys(w), [
      "ConfigMap/grafana-agent",
      "NetworkPolicy/grafana-agent",
      "Role/grafana-agent-0",
      "RoleBinding/grafana-agent-0",
      "Secret/grafana-agent-0-state",
      "Secret/grafana-authkey",
      "ServiceAccount/grafana-agent-0",
      "StatefulSet/grafana-agent-0",
    ]);
    const created = w.hs.requests.find((r) => r.method === "POST" && r.path === "/api/v1/preauthkey");
    assert.deepEqual(
      { ...(created?.body as Record<string, unknown>), expiration: "…" },
      // a node outlives its pods (issue 32): not ephemeral; the operator deletes what it registered
      { aclTags: [TAG], reusable: true, ephemeral: false, expiration: "…" },
    );

    w.register();
    await settle(w);
    // the agent registers as <hostname>-<namespace> (agentHostname), never the bare name it publishes
    assert.equal(w.condition("Registered").message, `1 node carries ${TAG}: grafana-monitoring`);
    assert.equal(w.condition("Ready").reason, "ProbeFailed");
    assert.match(w.condition("Ready").message, /^the agent could not be scraped \(grafana-agent-0-0: GET \/status: /);

    const agent = await ingressAgent(t, parent, { backendPort: echo.port });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    assert.equal(w.condition("Ready").status, "True");
    assert.equal(w.condition("Ready").message, "serving postgres on grafana.ts.example.com");
    const { conditions: _c, ...fields } = (w.ingress()?.status ?? {}) as Record<string, unknown>;
    assert.deepEqual(fields, {
      observedGeneration: 1,
      tag: TAG,
      dnsName: "grafana.ts.example.com",
      exposes: [{ name: "postgres", dnsName: "grafana.ts.example.com", dnsAliases: [], reachable: true }],
      nodes: [
        {
          replica: 0,
          id: "1",
          name: "grafana-monitoring",
          addresses: registeredAddresses(w).sort(),
          nodeKey: w.hs.state.nodes.get("1")?.nodeKey,
          machineKey: w.hs.state.nodes.get("1")?.machineKey,
          preAuthKeyId: "1",
          online: true,
        },
      ],
      preAuthKeyIds: ["1"],
    });
    // where tailscaled's serve dials (the operator's serve config), not 127.0.0.1 (issue 31)
    const socket = connect(agent.ports.exposes[0].listenPort, "127.0.0.2");
    t.after(() => socket.destroy());
    const echoed = await new Promise<string>((resolve, reject) => {
      socket.once("data", (b) => resolve(b.toString()));
      socket.once("error", reject);
      socket.write("ping");
    });
    assert.equal(echoed, "ping", "bytes reach the backend through the agent");

    const before = JSON.stringify(w.ingress()?.status);
    assert.equal(await w.mc.settle(), 1);
    assert.equal(JSON.stringify(w.ingress()?.status), before, "a repeat sync gives a byte-identical status");
    const text = await w.metrics();
    const id = { namespace: NS, name: "grafana" };
    assert.equal(sample(text, "tailnet_ingress_expose_reachable", { ...id, expose: "postgres" }), 1);
    assert.equal(sample(text, "tailnetingress_backends_unreachable", id), 0);
    assert.equal(sample(text, "tailnet_resource_ready", { kind: "TailnetIngress", ...id, reason: "Ready" }), 1);
    assert.ok((sample(text, "tailnet_auth_key_expiry_timestamp_seconds", { kind: "TailnetIngress", ...id }) ?? 0) > 0);
    assert.deepEqual(
      w.hs.writes().map((r) => `${r.method} ${r.path}`),
      ["POST /api/v1/preauthkey"],
      "the only Headscale write is the key, made once",
    );
  });

  it("DNSServed: NotServed while Headscale hands out none of the names, Served once it does; Ready throughout", async (t) => {
    const w = await world(t);
    const echo = await startEchoServer();
    t.after(() => echo.close());
    const parent = w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    const node = w.register();
    const self = { HostName: "grafana-monitoring", TailscaleIPs: [node.ipv4], Online: true };
    const localapi = await startFakeLocalApi(fakeStatus(self, []));
    t.after(() => localapi.close());
    const agent = await ingressAgent(t, parent, { backendPort: echo.port, localApiSocket: localapi.socketPath });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    assert.equal(w.condition("Ready").status, "True", "the ingress serves by address meanwhile");
    const dns = () => {
      const { status, reason, message } = w.condition("DNSServed");
      return { status, reason, message };
    };
    // the node's resolver knows no record: Headscale does not read the records file (yet)
    assert.deepEqual(dns(), {
      status: "False",
      reason: "NotServed",
      message:
        "Headscale does not hand out grafana.ts.example.com (NXDOMAIN) to the agent's node; a new name takes a minute or two (the kubelet updates ConfigMap tailnet-home-dns-records, Headscale reloads the file); if it stays, Headscale does not read that file: check dns.extra_records_path in Headscale's config (docs/troubleshooting.md, \"A name does not resolve\")",
    });
    assert.ok(
      localapi.requests.some((r) => r.path === "/localapi/v0/dns-query?name=grafana.ts.example.com&type=A"),
      "the agent asked its node's resolver",
    );
    // Headscale reads the file and hands the record to every node
    localapi.setRecords([{ name: "grafana.ts.example.com", type: "A", value: node.ipv4 }]);
    await settle(w);
    assert.deepEqual(dns(), {
      status: "True",
      reason: "Served",
      message: `Headscale hands out grafana.ts.example.com (${node.ipv4}) to the agent's node`,
    });
    assert.equal(w.condition("Ready").status, "True");
    const before = JSON.stringify(w.ingress()?.status);
    await w.mc.settle();
    assert.equal(JSON.stringify(w.ingress()?.status), before, "a repeat sync gives a byte-identical status");
  });

  it("PolicyPending → TagUnknown until the Tailnet's policy owns the tag", async (t) => {
    const w = await world(t, { tags: ["tag:other"] });
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    assert.equal(w.condition("TagKnown").reason, "PolicyPending");
    assert.equal(w.condition("Ready").reason, "TagUnknown");
    assert.equal(w.condition("Ready").message, w.condition("TagKnown").message);
    w.hs.setPolicy(policyText([TAG]));
    await settle(w);
    assert.equal(w.condition("TagKnown").reason, "Known");
    assert.equal(w.condition("Ready").reason, "NotRegistered");
  });

  const faults: [string, FaultSpec][] = [
    ["connection refused", { kind: "refused" }],
    ["timeout", { kind: "timeout" }],
    ["HTTP 500", { kind: "status", status: 500 }],
    ["HTTP 401", { kind: "unauthorized" }],
  ];
  for (const [name, fault] of faults) {
    it(`Headscale ${name}: Unknown, TagUnknown, 200, no child dropped, no write`, async (t) => {
      const w = await world(t);
      w.mc.apply(tcpIngress("grafana"));
      await settle(w);
      w.register();
      await settle(w);
      const children = childKeys(w);
      const writes = w.hs.writes().length;
      await w.hs.fault(fault);
      await settle(w);
      assert.equal(w.condition("TagKnown").status, "Unknown");
      assert.equal(w.condition("TagKnown").reason, "Unknown");
      assert.equal(w.condition("Registered").status, "Unknown");
      assert.equal(w.condition("Ready").reason, "TagUnknown");
      assert.match(
        w.condition("TagKnown").message,
        /^the live policy could not be read: Headscale GET \/api\/v1\/policy/,
      );
      assert.doesNotMatch(JSON.stringify(w.ingress()?.status), new RegExp(w.hs.apiKey));
      assert.deepEqual(childKeys(w), children, "no child dropped");
      assert.equal(w.hs.writes().length, writes, "no write while Headscale fails");
      await w.hs.clearFaults();
      await settle(w);
      assert.equal(w.condition("TagKnown").reason, "Known");
      assert.equal(w.condition("Registered").reason, "Registered");
    });
  }

  it("LeftOutOfPolicy quotes the Tailnet's status.policy.leftOut entry for this ingress (issue 31 item 4)", async (t) => {
    const entry = {
      kind: "TailnetIngress",
      namespace: "monitoring",
      name: "grafana",
      reason: "RejectedByHeadscale",
      message: "Headscale rejects the policy with it (POST /api/v1/policy/check): test(s) failed: x",
    };
    const w = await world(t, { tailnetStatus: { policy: { leftOut: [entry] } } });
    w.mc.apply(tcpIngress("grafana"));
    await settle(w);
    w.register();
    await settle(w);
    const granted = w.condition("PolicyGranted");
    assert.deepEqual(
      [granted.status, granted.reason, granted.message],
      [
        "False",
        "LeftOutOfPolicy",
        "Tailnet home left this object's contribution out of the policy (RejectedByHeadscale), so that everyone else's is written: Headscale rejects the policy with it (POST /api/v1/policy/check): test(s) failed: x",
      ],
    );
    assert.equal(w.condition("Ready").reason, "LeftOutOfPolicy");
  });

  it("PolicyDenied names the allowFrom entries outside the allowlist", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana", { allowFrom: ["group:eng", "group:ops"] }));
    await settle(w);
    w.register();
    await settle(w);
    assert.equal(w.condition("Ready").reason, "PolicyDenied");
    assert.equal(
      w.condition("Ready").message,
      `allowFrom group:ops is not in Tailnet home's allowedIngressSources, so no grant to ${TAG} is rendered`,
    );
  });

  it("InvalidDNSName and DNSNameConflict come before the ordered blockers; conflicting names are not published", async (t) => {
    const w = await world(t, { tags: [TAG, "tag:k8s-monitoring-old", "tag:k8s-monitoring-bad"] });
    w.mc.apply(ingress("old", { created: "2026-10-01T00:00:00Z", exposes: [{ ...WEB, aliases: [] }] }));
    w.mc.apply(ingress("grafana"));
    w.mc.apply(ingress("bad", { exposes: [{ ...WEB, host: "Dash" }] }));
    await settle(w);
    assert.equal(w.condition("Ready", "bad").reason, "InvalidDNSName");
    assert.match(w.condition("Ready", "bad").message, /^not a DNS label: spec\.exposes\[0\]\.host "Dash" /);
    assert.equal(w.condition("Ready", "grafana").reason, "DNSNameConflict");
    assert.equal(
      w.condition("Ready", "grafana").message,
      "already claimed by an older TailnetIngress: dash.ts.example.com (monitoring/old); these names are not published for this ingress",
    );
    const exposes = (w.ingress("grafana")?.status as { exposes?: unknown[] } | undefined)?.exposes;
    assert.deepEqual(exposes, [{ name: "web", dnsAliases: ["grafana-eu.ts.example.com"] }]);
    assert.equal(w.condition("Ready", "old").reason, "NotRegistered", "the older one keeps its names");
  });

  it("DNSNameReserved: a name a Headscale node holds is refused; the agent node never asks for it", async (t) => {
    const w = await world(t);
    w.hs.addUser({ name: "alice" });
    w.hs.addNode({ name: "db-1", user: "alice" });
    // the hostname and an alias both name alice's laptop
    w.mc.apply(ingress("grafana", { hostname: "db-1", exposes: [{ ...WEB, aliases: ["db-1"] }] }));
    await settle(w);
    assert.equal(w.condition("Ready").reason, "DNSNameReserved");
    assert.match(
      w.condition("Ready").message,
      /^the name of another machine: db-1\.ts\.example\.com \(Headscale node \d+\)/,
    );
    w.register();
    await settle(w);
    const status = w.ingress()?.status as { dnsName?: string; nodes?: { name: string }[]; exposes?: unknown[] };
    assert.equal(status.dnsName, undefined, "db-1 is alice's");
    assert.deepEqual(status.exposes, [{ name: "web", dnsName: "dash.ts.example.com", dnsAliases: [] }]);
    // the agent registers as <hostname>-<namespace>: alice's db-1 keeps its name; the status names the node as it is
    assert.deepEqual(
      status.nodes?.map((n) => n.name),
      ["db-1-monitoring"],
    );
    assert.equal(w.condition("Ready").reason, "DNSNameReserved");
  });

  it("TLS: Missing → Invalid → NameMismatch → Expired → Valid as the Secret changes", async (t) => {
    const w = await world(t);
    w.mc.apply(ingress("grafana"));
    await settle(w);
    w.register();
    const steps: [K8sObject | undefined, string][] = [
      [undefined, "TLSSecretMissing"],
      [tlsSecret("grafana-tls", good, { type: "Opaque" }), "TLSSecretInvalid"],
      [tlsSecret("grafana-tls", { certPem: good.certPem, keyPem: dashOnly.keyPem }), "TLSSecretInvalid"],
      [tlsSecret("grafana-tls", dashOnly), "TLSNameMismatch"],
      [tlsSecret("grafana-tls", expired), "TLSExpired"],
      [tlsSecret("grafana-tls", good), "Valid"],
    ];
    for (const [secret, want] of steps) {
      if (secret) w.mc.apply(secret);
      await settle(w);
      assert.equal(w.condition("TLSReady").reason, want);
      assert.equal(w.condition("Ready").reason, want === "Valid" ? "ProbeFailed" : want);
      assert.doesNotMatch(JSON.stringify(w.ingress()?.status), /BEGIN|PRIVATE KEY/);
    }
    assert.equal(
      w.condition("TLSReady", "grafana").message.split(";")[0],
      "the certificate covers the names of the expose",
    );
  });

  it("Unreachable: the agent runs but the backend refuses; the Service is named", async (t) => {
    const w = await world(t);
    const parent = w.mc.apply(tcpIngress("grafana"));
    w.mc.apply(service("postgres"));
    const agent = await ingressAgent(t, parent, { backendPort: await closedPort() });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    w.register();
    await settle(w);
    assert.equal(w.condition("Ready").reason, "Unreachable");
    assert.match(
      w.condition("Ready").message,
      /^the agent cannot reach the backend of expose postgres \(Service monitoring\/postgres port 5432\): /,
    );
    const text = await w.metrics();
    const id = { namespace: NS, name: "grafana" };
    assert.equal(sample(text, "tailnet_ingress_expose_reachable", { ...id, expose: "postgres" }), 0);
    assert.equal(sample(text, "tailnetingress_backends_unreachable", id), 1);
  });

  it("InvalidSpec: an http expose without a TLS Secret keeps the children as they were", async (t) => {
    const w = await world(t);
    w.mc.apply(ingress("grafana"));
    await settle(w);
    const children = childKeys(w);
    const writes = w.hs.writes().length;
    const live = w.ingress();
    w.mc.apply({ ...(live as K8sObject), spec: { ...(live?.spec as object), exposes: [{ ...WEB, tls: undefined }] } });
    await settle(w);
    assert.equal(w.condition("Ready").reason, "InvalidSpec");
    assert.equal(
      w.condition("Ready").message,
      "spec.exposes[0].tls: required in mode http (secretName, issuerRef, or {} for the Tailnet's spec.certificates.issuerRef)",
    );
    assert.deepEqual(childKeys(w), children);
    assert.equal(w.hs.writes().length, writes);
    assert.equal(w.mc.get(API_VERSION, "TailnetIngress", "grafana", NS)?.metadata.generation, 2);
  });

  it("replicas 2: a StatefulSet per replica, a PodDisruptionBudget, every replica's node in status; NodesOffline once no node is online", async (t) => {
    const w = await world(t);
    const echo = await startEchoServer();
    t.after(() => echo.close());
    const parent = w.mc.apply(tcpIngress("grafana", { replicas: 2 }));
    await settle(w);
    assert.ok(childKeys(w).includes("PodDisruptionBudget/grafana-agent"), "the budget is a child");
    for (const i of [0, 1]) {
      const sts = w.mc.get("apps/v1", "StatefulSet", `grafana-agent-${i}`, NS);
      assert.equal((sts?.spec as { replicas?: number } | undefined)?.replicas, 1, `replica ${i}: one pod`);
    }
    w.register("grafana", NS, 0);
    w.register("grafana", NS, 1);
    const agent = await ingressAgent(t, parent, { backendPort: echo.port });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    const nodes = [...w.hs.state.nodes.values()].filter((n) => n.tags.includes(TAG));
    assert.deepEqual(
      nodes.map((n) => n.givenName),
      ["grafana-monitoring", "grafana-monitoring-r1"],
      "each replica its own node and host name (issue 32: -r<i>, never Headscale's suffix)",
    );
    assert.equal(w.condition("Ready").message, "serving postgres on grafana.ts.example.com (2 nodes online)");
    const listed = (w.ingress()?.status as { nodes?: { name: string; online: boolean }[] } | undefined)?.nodes;
    assert.deepEqual(
      listed?.map((n) => `${n.name}:${n.online}`),
      ["grafana-monitoring:true", "grafana-monitoring-r1:true"],
    );

    nodes[0].online = false;
    await settle(w);
    assert.equal(w.condition("Ready").status, "True", "one node still serves");
    assert.equal(w.condition("Ready").message, "serving postgres on grafana.ts.example.com (1 of 2 nodes online)");

    nodes[1].online = false;
    await settle(w);
    assert.equal(w.condition("Ready").reason, "NodesOffline");
    assert.equal(
      w.condition("Ready").message,
      `all 2 nodes carrying ${TAG} are offline in Headscale (grafana-monitoring, grafana-monitoring-r1); check the agent pods and their connection to the control server`,
    );
    assert.deepEqual(
      w.hs.writes().map((r) => `${r.method} ${r.path}`),
      ["POST /api/v1/preauthkey"],
      "offline nodes that replicas' state Secrets name are never deleted",
    );
    const text = await w.metrics();
    assert.equal(
      sample(text, "tailnet_resource_ready", {
        kind: "TailnetIngress",
        namespace: NS,
        name: "grafana",
        reason: "NodesOffline",
      }),
      0,
    );
  });

  it("a missing TailnetProxyClass holds the ingress (e2e-proxyclass.test.ts has the rest)", async (t) => {
    const w = await world(t);
    w.mc.apply(tcpIngress("grafana", { proxyClassName: "edge" }));
    await settle(w);
    assert.equal(w.condition("Ready").reason, IngressReason.ProxyClassMissing);
    assert.equal(w.mc.get("apps/v1", "StatefulSet", "grafana-agent-0", NS), undefined);
  });

  it("reached every reason of the kind", () => {
    // the tenancy refusals are reached in e2e-tenancy.test.ts; NodeIdentity's problem reasons in
    // e2e-identity.test.ts and the decide rows (identityInputs)
    const tenancy = new Set<string>([
      CommonReason.NamespaceNotAllowed,
      CommonReason.TagNotGranted,
      CommonReason.TagInUse,
      "Migrating",
      "IdentityChanged",
      "Reregistered",
      "StateLost",
      "ForeignNode",
      // cert-manager's reasons: e2e-certificates.test.ts (the emulator with the cert-manager component)
      IngressReason.CertManagerMissing,
      IngressReason.NoIssuer,
      IngressReason.IssuerNotAllowed,
      IngressReason.CertificatePending,
      IngressReason.CertificateFailed,
      IngressReason.TLSExpiring,
      // a backend in another namespace: e2e-grants.test.ts (with and without the gateway-api component)
      IngressReason.BackendNotPermitted,
      IngressReason.GatewayAPIMissing,
    ]);
    const missing = Object.values(IngressReason).filter((r) => !seen.has(r) && !tenancy.has(r));
    assert.deepEqual(missing, []);
  });
});
