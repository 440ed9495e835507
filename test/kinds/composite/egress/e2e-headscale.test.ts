// TailnetEgress end to end, Headscale's side: faults, pre-auth keys, missing Tailnet or credentials,
// invalid specs and finalize — through the Metacontroller emulator, the real hook server, the fake
// Headscale and a real agent on loopback (see world.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { sample } from "../../../agent/helpers.js";
import { bootTailscale } from "../../../fakes/containerboot.js";
import type { FaultSpec } from "../../../fakes/headscale/index.js";
import { loopStore } from "../../../fakes/pod-lifecycle.js";
import { API, deploymentEnv, kindsOf, READY, reasons, T0, TAG, toReady, world } from "./world.js";

describe("TailnetEgress end to end: Headscale", () => {
  it("Headscale faults: the right reason, HTTP 200, no child dropped, no write", async (t) => {
    const w = await world(t);
    await toReady(w);
    const children = w.childrenSnapshot();
    const writes = w.fake.writes().length;
    const faults: { name: string; fault: FaultSpec; want: Record<string, string>; tagMessage?: string }[] = [
      {
        name: "refused",
        fault: { kind: "refused" },
        want: { ...READY, TagKnown: "Unknown", Registered: "Unknown", Ready: "TagUnknown" },
        tagMessage: "the live policy could not be read: Headscale GET /api/v1/policy: connection refused",
      },
      {
        name: "timeout",
        fault: { kind: "timeout" },
        want: { ...READY, TagKnown: "Unknown", Registered: "Unknown", Ready: "TagUnknown" },
        tagMessage: "the live policy could not be read: Headscale GET /api/v1/policy: timed out after 300ms",
      },
      {
        name: "500",
        fault: { kind: "status", status: 500 },
        want: { ...READY, TagKnown: "Unknown", Registered: "Unknown", Ready: "TagUnknown" },
        tagMessage: "the live policy could not be read: Headscale GET /api/v1/policy: 500 fault injected: 500",
      },
      {
        name: "401",
        fault: { kind: "unauthorized" },
        want: { ...READY, TagKnown: "Unknown", Registered: "Unknown", Ready: "TagUnknown" },
        tagMessage: "the live policy could not be read: Headscale GET /api/v1/policy: 401 Unauthorized",
      },
      {
        name: "node list only",
        fault: { kind: "status", status: 503, path: /^\/api\/v1\/node$/ },
        want: { ...READY, Registered: "Unknown", Ready: "Unknown" },
      },
    ];
    for (const f of faults) {
      await w.fake.fault(f.fault);
      await w.settle();
      assert.deepEqual(w.mc.errors, [], f.name);
      assert.deepEqual(reasons(w), f.want, f.name);
      if (f.tagMessage) assert.equal(w.cond("TagKnown")?.message, f.tagMessage, f.name);
      assert.equal(w.childrenSnapshot(), children, `${f.name}: children kept`);
      assert.equal(w.fake.writes().length, writes, `${f.name}: nothing written`);
      await w.fake.clearFaults();
      await w.settle();
      assert.deepEqual(reasons(w), READY, `${f.name} recovered`);
    }
  });

  it("a private Headscale CA reaches the agent pod: ca.crt in its ConfigMap, SSL_CERT_FILE; the pod logs in", async (t) => {
    const ca = "-----BEGIN CERTIFICATE-----\nHEADSCALE PRIVATE CA\n-----END CERTIFICATE-----\n";
    const w = await world(t, { ca });
    await w.settle();
    const cm = w.mc.get("v1", "ConfigMap", "db-agent", "shop");
    assert.equal((cm?.data as Record<string, string> | undefined)?.["ca.crt"], ca);
    assert.deepEqual(
      deploymentEnv(w).find((e) => e.name === "SSL_CERT_FILE"),
      { name: "SSL_CERT_FILE", value: "/etc/tailnet-agent/ca.crt" },
    );
    const deployment = w.mc.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as K8sObject;
    // everything the pod's API client sees: its key and config, its own Role, RoleBinding and state Secret
    const booted = bootTailscale(deployment, loopStore(w.mc).objects(), { serverCa: ca });
    assert.ok(booted.ok, booted.ok ? "" : booted.error);
    // the same pod without the Tailnet's CA would not trust Headscale's certificate
    const plain = await world(t);
    await plain.settle();
    const other = plain.mc.get("apps/v1", "StatefulSet", "db-agent-0", "shop") as K8sObject;
    const refused = bootTailscale(other, loopStore(plain.mc).objects(), { serverCa: ca });
    assert.equal(
      refused.ok ? "booted" : refused.error,
      "tailscale up: fetch control key: tls: failed to verify certificate: x509: certificate signed by unknown authority",
    );
    w.register();
    await w.settle();
    assert.deepEqual(reasons(w), READY);
    assert.deepEqual(w.mc.errors, []);
  });

  it("Headscale's database down: the outage is named, never a rejected key; children kept", async (t) => {
    const w = await world(t);
    await toReady(w);
    const children = w.childrenSnapshot();
    w.fake.setDatabaseDown(true);
    await w.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual(reasons(w), { ...READY, TagKnown: "Unknown", Registered: "Unknown", Ready: "TagUnknown" });
    assert.equal(
      w.cond("TagKnown")?.message,
      'the live policy could not be read: Headscale GET /api/v1/policy: 401 Unauthorized, and GET /health answers 500 {"status":"fail"}: Headscale\'s database is down, so it cannot check any API key',
    );
    assert.equal(w.childrenSnapshot(), children, "children kept");
    w.fake.setDatabaseDown(false);
    await w.settle();
    assert.deepEqual(reasons(w), READY, "recovered");
  });

  it("the key rotates at half-life, never while Headscale is down", async (t) => {
    const w = await world(t);
    await toReady(w);
    const keyId = () => w.keySecret()?.metadata.annotations?.["tailnet.internal/key-id"];
    assert.equal(w.keySecret()?.metadata.name, "db-authkey");
    assert.equal(keyId(), "1");
    w.clock.now = new Date(T0.getTime() + 12 * 3600 * 1000 + 1000);
    await w.fake.fault({ kind: "refused" });
    await w.settle();
    assert.equal(keyId(), "1", "kept while Headscale is down");
    assert.equal(w.fake.count("POST", /^\/api\/v1\/preauthkey$/), 1);
    await w.fake.clearFaults();
    await w.settle();
    assert.equal(w.fake.count("POST", /^\/api\/v1\/preauthkey$/), 2);
    assert.deepEqual(
      w.mc
        .list("Secret")
        .filter((s) => s.metadata.namespace === "shop")
        .map((s) => s.metadata.name)
        .sort(),
      ["db-agent-0-state", "db-authkey"],
    );
    assert.equal(keyId(), "2", "rotated in place (issue 32): the same Secret holds the new key");
    assert.deepEqual(deploymentEnv(w).find((e) => e.name === "TS_AUTHKEY")?.valueFrom, {
      secretKeyRef: { name: "db-authkey", key: "authkey" },
    });
    assert.deepEqual(reasons(w), READY);
    assert.equal(
      sample(await w.metricsText(), "tailnet_auth_key_expiry_timestamp_seconds", {
        kind: "TailnetEgress",
        namespace: "shop",
        name: "db",
      }),
      Math.floor((w.clock.now.getTime() + 24 * 3600 * 1000) / 1000),
    );
    assert.deepEqual(w.mc.errors, []);
  });

  it("agent keys are reusable: scaling out and a restarted pod (state in memory) keep the same key", async (t) => {
    const w = await world(t);
    await toReady(w);
    const reusable = () =>
      w.fake
        .writes()
        .filter((r) => r.path === "/api/v1/preauthkey")
        .map((r) => (r.body as { reusable: boolean }).reusable);
    assert.deepEqual(reusable(), [true]);
    const first = w.keySecret()?.metadata.name;

    w.mc.apply({ ...w.egress(), spec: { ...w.spec, replicas: 2 } });
    await w.settle();
    assert.deepEqual(reusable(), [true], "no new key for a second replica");
    assert.equal(w.keySecret()?.metadata.name, first);
    assert.deepEqual(
      w.mc
        .list("Pod")
        .map((p) => p.metadata.name)
        .sort(),
      ["db-agent-0-0", "db-agent-1-0"],
    );
    w.bindReplica(1);
    await w.settle();
    assert.deepEqual(reasons(w), READY, "both agent pods scraped");

    // the node is gone from Headscale (deleted by an admin, or its state lost): the same reusable key
    // registers it again, so nothing is rotated early
    for (const [id, n] of w.fake.state.nodes) if (n.tags.includes(TAG)) w.fake.state.nodes.delete(id);
    await w.settle();
    assert.equal(w.cond("Registered")?.reason, "NotRegistered");
    assert.equal(w.keySecret()?.metadata.name, first);
    assert.deepEqual(reusable(), [true]);
    w.register();
    await w.settle();
    assert.deepEqual(reasons(w), READY);
    assert.deepEqual(w.mc.errors, []);
  });

  it("no key yet while Headscale is down: reported, every other child returned, nothing written", async (t) => {
    const w = await world(t);
    await w.fake.fault({ kind: "refused" });
    await w.settle();
    assert.deepEqual(w.mc.errors, []);
    // no StatefulSet without a key: containerboot would start an interactive login
    assert.deepEqual(kindsOf(w), [
      "ConfigMap/db-agent",
      "NetworkPolicy/db-agent",
      "Role/db-agent-0",
      "RoleBinding/db-agent-0",
      "Secret/db-agent-0-state",
      "Service/postgres",
      "Service/printer",
      "ServiceAccount/db-agent-0",
    ]);
    assert.equal(
      w.cond("Registered")?.message,
      "Headscale nodes could not be listed: Headscale GET /api/v1/node: connection refused; no pre-auth key yet: not created while Headscale cannot be read (Headscale GET /api/v1/policy: connection refused)",
    );
    assert.equal(w.fake.writes().length, 0);
    await w.fake.clearFaults();
    await w.fake.fault({ kind: "status", status: 500, method: "POST", path: /^\/api\/v1\/preauthkey$/ });
    await w.settle();
    assert.deepEqual(reasons(w).Registered, "NotRegistered");
    assert.equal(
      w.cond("Registered")?.message,
      "no Headscale node carries tag:k8s-shop-db yet; no pre-auth key yet: Headscale POST /api/v1/preauthkey: 500 fault injected: 500",
    );
    await w.fake.clearFaults();
    await w.settle();
    assert.equal(w.keySecret()?.metadata.name, "db-authkey");
    assert.deepEqual(
      deploymentEnv(w).find((e) => e.name === "TS_AUTHKEY")?.valueFrom,
      { secretKeyRef: { name: "db-authkey", key: "authkey" } },
      "the StatefulSet comes with its key",
    );
    assert.deepEqual(w.mc.errors, []);
  });

  it("NoTailnet, NoAPIKey and InvalidSpec", async (t) => {
    const w = await world(t);
    await toReady(w);
    const children = w.childrenSnapshot();
    w.mc.delete("v1", "Secret", "tailnet-home-credentials", "tailnet-system");
    await w.settle();
    assert.equal(reasons(w).Ready, "NoAPIKey");
    assert.equal(
      w.cond("Ready")?.message,
      "Secret tailnet-system/tailnet-home-credentials not found yet (the Tailnet publishes it once its API key Secret exists)",
    );
    assert.equal(w.childrenSnapshot(), children, "NoAPIKey keeps every child");

    w.mc.apply({
      ...w.egress(),
      spec: { ...w.spec, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }, { port: 5432 }] }] },
    });
    await w.settle();
    assert.deepEqual(
      [w.cond("Ready")?.reason, w.cond("Ready")?.message],
      ["InvalidSpec", "spec.targets[0].ports[1].port: duplicate port 5432"],
    );
    assert.equal(w.childrenSnapshot(), children, "InvalidSpec keeps every child");

    const requests = w.fake.requests.length;
    w.mc.apply({ ...w.egress(), spec: { ...w.spec, tailnetRef: { name: "missing" } } });
    await w.settle();
    assert.deepEqual(
      [w.cond("Ready")?.status, w.cond("Ready")?.reason, w.cond("Ready")?.message],
      ["False", "NoTailnet", 'Tailnet "missing" not found'],
    );
    assert.equal(w.cond("TagKnown")?.reason, "NoTailnet");
    assert.equal(w.fake.requests.length, requests, "no Headscale request without a Tailnet");
    assert.deepEqual(w.mc.errors, []);
  });

  it("finalize expires the keys and deletes the agent node, waiting while Headscale is down", async (t) => {
    const w = await world(t);
    await toReady(w);
    const agentNode = [...w.fake.state.nodes.values()].find((n) => n.tags.includes(TAG));
    assert.ok(agentNode);
    await w.fake.fault({ kind: "refused" });
    w.mc.delete(API, "TailnetEgress", "db", "shop");
    await w.settle();
    assert.ok(w.egress().metadata.deletionTimestamp, "still there while Headscale is down");
    assert.deepEqual(
      kindsOf(w),
      ["Secret/db-agent-0-state", "Secret/db-authkey"],
      "the key and state Secrets stay until cleanup is done",
    );
    assert.equal(w.fake.writes().length, 1);
    await w.fake.clearFaults();
    await w.settle();
    assert.equal(w.mc.get(API, "TailnetEgress", "db", "shop"), undefined);
    assert.deepEqual(
      w.fake
        .writes()
        .slice(1)
        .map((r) => [r.method, r.path, r.body]),
      [
        ["POST", "/api/v1/preauthkey/expire", { id: "1" }],
        ["DELETE", `/api/v1/node/${agentNode.id}`, undefined],
      ],
    );
    assert.deepEqual(
      [...w.fake.state.nodes.values()].map((n) => n.name).sort(),
      ["db-1", "router"],
      "only the egress's node is gone",
    );
    const metrics = await w.metricsText();
    assert.equal(
      sample(metrics, "tailnet_egress_target_state", {
        namespace: "shop",
        name: "db",
        target: "postgres",
        state: "Ready",
      }),
      undefined,
    );
    assert.equal(
      sample(metrics, "tailnet_auth_key_expiry_timestamp_seconds", {
        kind: "TailnetEgress",
        namespace: "shop",
        name: "db",
      }),
      undefined,
    );
    assert.deepEqual(w.mc.errors, []);
  });
});
