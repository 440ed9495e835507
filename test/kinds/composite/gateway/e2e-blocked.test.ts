/**
 * TailnetGateway end to end, the unhappy paths: the fresh writer blocked (rogue node, expired or
 * drifted bootstrap key, edited pod template), Headscale faults, a failed approval, a stuck rollout,
 * a pending load balancer, and the reasons that come before the blockers (NoTailnet, NoAPIKey,
 * InvalidSpec). Each keeps every child, answers 200 and writes nothing it must not.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { revisionOf } from "../../../../src/emulator/metacontroller/workloads.js";
import type { FaultSpec } from "../../../fakes/headscale/index.js";
import {
  API,
  applyGateway,
  type Ctx,
  child,
  cond,
  gw,
  keySecrets,
  lastSync,
  ROUTE,
  readyGateway,
  reasons,
  registerGateway,
  resyncOf,
  statusJson,
  statusOf,
  syncAgain,
  T0,
  TAG,
  world,
  writesTo,
  ZONE,
  zoneText,
} from "./world.js";

const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);

/** A ready gateway whose zone already holds a record, so "untouched" is observable. */
async function withRecord(t: Ctx) {
  const w = await readyGateway(t);
  w.mc.apply({
    apiVersion: API,
    kind: "TailnetEgress",
    metadata: { name: "db", namespace: "shop", uid: "uid-shop-db" },
    spec: {
      tailnetRef: { name: "home" },
      targets: [{ name: "postgres", host: `db-1.${ZONE}`, ports: [{ port: 5432 }] }],
    },
  } as never);
  w.mc.apply({
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "postgres",
      namespace: "shop",
      labels: { "tailnet.internal/egress-target": "true" },
      ownerReferences: [{ apiVersion: API, kind: "TailnetEgress", name: "db", uid: "uid-shop-db", controller: true }],
    },
    spec: { clusterIP: "10.96.50.1" },
  } as never);
  await w.mc.settle();
  const zone = JSON.stringify(child(w.mc, "ConfigMap", "gw-gateway-zone")?.data);
  assert.match(zone, /10\.96\.50\.1/);
  return { ...w, zone };
}

/** After a change that the zone would reflect, assert the zone ConfigMap stayed as it was. */
async function zoneUntouched(w: Awaited<ReturnType<typeof withRecord>>) {
  w.mc.apply({
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "postgres",
      namespace: "shop",
      labels: { "tailnet.internal/egress-target": "true" },
      ownerReferences: [{ apiVersion: API, kind: "TailnetEgress", name: "db", uid: "uid-shop-db", controller: true }],
    },
    spec: { clusterIP: "10.96.50.99" },
  } as never);
  await w.mc.settle();
  assert.equal(JSON.stringify(child(w.mc, "ConfigMap", "gw-gateway-zone")?.data), w.zone);
}

const childNames = (w: { mc: Parameters<typeof gw>[0] }) =>
  w.mc
    .childrenOf(gw(w.mc) as never)
    .map((c) => `${c.kind}/${c.metadata.name}`)
    .sort();

describe("TailnetGateway end to end: the fresh writer blocked", () => {
  it("rogue node registered with another key carrying the gateway tag", async (t) => {
    const w = await withRecord(t);
    const keyId = w.fake.state.nextKeyId();
    w.fake.state.preAuthKeys.set(keyId, {
      id: keyId,
      prefix: "stolen",
      key: "hskey-auth-stolen-x",
      userId: null,
      reusable: true,
      ephemeral: false,
      used: false,
      expiration: minutes(600),
      createdAt: T0,
      aclTags: [TAG],
    });
    const rogue = w.fake.registerWithKey(keyId, { name: "rogue", availableRoutes: [ROUTE] });
    await zoneUntouched(w);
    assert.deepEqual(
      { status: cond(w.mc, "Registered")?.status, reason: cond(w.mc, "Registered")?.reason },
      { status: "False", reason: "FreshBlocked" },
    );
    assert.equal(
      cond(w.mc, "Ready")?.message,
      `fresh writer blocked by node identity: node ${rogue.id} "rogue" carries ${TAG} but was registered with pre-auth key ${keyId}, not with this gateway's bootstrap key 1. The derived zone keeps its last state.`,
    );
    assert.equal(cond(w.mc, "Ready")?.reason, "FreshBlocked");
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);
    assert.equal(
      writesTo(w.fake, "POST", /approve_routes$/).length,
      1,
      "only the gateway's own approval, before the rogue",
    );
    const ready = await w.metrics.resourceReady.get();
    assert.deepEqual(
      ready.values.filter((v) => v.labels.name === "gw").map((v) => [v.labels.reason, v.value]),
      [["FreshBlocked", 0]],
    );
    const before = statusJson(w.mc);
    await syncAgain(w.mc);
    assert.equal(statusJson(w.mc), before);
    assert.deepEqual(w.mc.errors, []);
  });

  it("expired bootstrap key that Headscale refuses to replace", async (t) => {
    const w = await withRecord(t);
    await w.fake.fault({ kind: "status", status: 500, method: "POST", path: /^\/api\/v1\/preauthkey$/ });
    w.clock.now = minutes(61);
    const names = childNames(w);
    await zoneUntouched(w);
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshBlocked");
    assert.equal(
      cond(w.mc, "Ready")?.message,
      "fresh writer blocked by bootstrap key: bootstrap key 1 expired at 2026-11-29T11:00:00Z; creating a new one failed: Headscale POST /api/v1/preauthkey: 500 fault injected: 500. The derived zone keeps its last state.",
    );
    assert.deepEqual(childNames(w), names, "no child dropped");
    assert.equal(lastSync(w.mc)?.code, 200);
    await w.fake.clearFaults();
    await w.mc.settle();
    assert.equal(keySecrets(w.mc)[0].metadata.name, "gw-gateway-authkey");
    assert.equal(keySecrets(w.mc)[0].metadata.annotations?.["tailnet.internal/key-id"], "2");
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
  });

  it("bootstrap key expired in Headscale behind the operator's back", async (t) => {
    const w = await withRecord(t);
    const key = w.fake.state.preAuthKeys.get("1");
    assert.ok(key);
    key.expiration = minutes(-1);
    await zoneUntouched(w);
    assert.equal(
      cond(w.mc, "Registered")?.message,
      "fresh writer blocked by bootstrap key: bootstrap key 1 drifted from Headscale's record: expired in Headscale at 2026-11-29T09:59:00Z. The derived zone keeps its last state.",
    );
    assert.equal(writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/).length, 1, "drift is not healed silently");
  });

  it("edited pod template", async (t) => {
    const w = await withRecord(t);
    const d = child(w.mc, "StatefulSet", "gw-gateway-0") as unknown as {
      spec: { template: { spec: { containers: { env: unknown[] }[] } } };
    };
    d.spec.template.spec.containers[0].env.push({ name: "TS_EXTRA_ARGS_2", value: "--accept-routes" });
    await zoneUntouched(w);
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshBlocked");
    assert.match(
      cond(w.mc, "Ready")?.message ?? "",
      /^fresh writer blocked by pod template: the live pod template of StatefulSet infra\/gw-gateway-0 was changed outside the operator \(rendered hash [0-9a-f]{16}, live template hashes to [0-9a-f]{16}\)\. The derived zone keeps its last state\.$/,
    );
    assert.equal(cond(w.mc, "StaleNodes")?.status, "Unknown");
    const before = statusJson(w.mc);
    await syncAgain(w.mc);
    assert.equal(statusJson(w.mc), before);
  });
});

describe("TailnetGateway end to end: Headscale faults", () => {
  const faults: [string, FaultSpec, RegExp][] = [
    ["connection refused", { kind: "refused" }, /ECONNREFUSED|refused/i],
    ["timeout", { kind: "timeout", path: /^\/api\/v1\/(node|preauthkey)$/ }, /timed out|timeout/i],
    ["500", { kind: "status", status: 500, path: /^\/api\/v1\/(node|preauthkey)$/ }, /500/],
    ["401", { kind: "unauthorized", path: /^\/api\/v1\/(node|preauthkey)$/ }, /401/],
  ];
  for (const [name, fault, pattern] of faults) {
    it(`${name}: Unknown, HTTP 200, no child dropped, no write`, async (t) => {
      const w = await withRecord(t);
      const names = childNames(w);
      const writes = w.fake.writes().length;
      await w.fake.fault(fault);
      await zoneUntouched(w);
      assert.equal(lastSync(w.mc)?.code, 200);
      assert.deepEqual(w.mc.errors, []);
      assert.deepEqual(childNames(w), names);
      assert.equal(w.fake.writes().length, writes);
      assert.deepEqual(
        ["Registered", "RoutesInSync", "StaleNodes"].map((c) => [cond(w.mc, c)?.status, cond(w.mc, c)?.reason]),
        [
          ["Unknown", "NotObserved"],
          ["Unknown", "NotObserved"],
          ["Unknown", "NotObserved"],
        ],
      );
      assert.match(cond(w.mc, "Registered")?.message ?? "", pattern);
      assert.equal(resyncOf(w.mc), 30);
      await w.fake.clearFaults();
      await w.mc.settle();
      assert.equal(cond(w.mc, "Ready")?.reason, "FreshRuntimeReady");
    });
  }

  it("approve_routes fails: NotApproved with Headscale's error, retried on the next sync", async (t) => {
    const w = await world(t);
    applyGateway(w.mc);
    await w.mc.settle();
    await w.fake.fault({ kind: "status", status: 500, path: /approve_routes$/, times: 1 });
    const node = registerGateway(w);
    await syncAgain(w.mc);
    assert.equal(
      cond(w.mc, "RoutesInSync")?.message,
      `approving ${ROUTE} on node ${node.id} "cluster-gw" failed: Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 fault injected: 500`,
    );
    assert.equal(cond(w.mc, "Ready")?.reason, "NotApproved");
    await w.mc.settle();
    assert.equal(cond(w.mc, "RoutesInSync")?.reason, "Approved");
  });
});

describe("TailnetGateway end to end: workload and Service", () => {
  it("rollout pending and CoreDNS not serving while the StatefulSet's pod is not ready", async (t) => {
    const w = await world(t);
    w.mc.deploymentsAvailable = false;
    applyGateway(w.mc);
    await w.mc.settle();
    assert.equal(cond(w.mc, "WorkloadCurrent")?.reason, "PodTemplateStale");
    const sts = child(w.mc, "StatefulSet", "gw-gateway-0");
    assert.ok(sts);
    // the emulator's StatefulSet controller runs no pod while workloads are unavailable
    assert.deepEqual(w.mc.list("Pod"), []);
    assert.equal(
      cond(w.mc, "WorkloadCurrent")?.message,
      `rolling 0 of 1 current: StatefulSet infra/gw-gateway-0 rollout in progress: 0 of 1 pod ready at revision ${revisionOf(sts)}`,
    );
    assert.equal(cond(w.mc, "DNSReady")?.reason, "NotServing");
    assert.equal(cond(w.mc, "DNSReady")?.message, "no ready gateway pod: 1 StatefulSet(s), none with a ready pod");
  });

  it("a template change rolls one replica at a time: the next one only once the first is settled", async (t) => {
    const w = await readyGateway(t, { replicas: 2 });
    const template = (i: number) =>
      JSON.stringify(
        (child(w.mc, "StatefulSet", `gw-gateway-${i}`)?.spec as { template?: unknown } | undefined)?.template,
      );
    const before = [template(0), template(1)];
    w.mc.deploymentsAvailable = false;
    applyGateway(w.mc, { replicas: 2, routes: [ROUTE, "10.244.0.0/16"] });
    await w.mc.settle();
    assert.notEqual(template(0), before[0], "replica 0 rolls first");
    assert.equal(template(1), before[1], "replica 1 waits while replica 0 is not settled");
    assert.match(cond(w.mc, "WorkloadCurrent")?.message ?? "", /^rolling 0 of 2 current: /);
    // replica 0's pod comes up at the new revision
    w.mc.deploymentsAvailable = true;
    const sts0 = structuredClone(child(w.mc, "StatefulSet", "gw-gateway-0"));
    if (!sts0) throw new Error("no StatefulSet");
    const generation = sts0.metadata.generation;
    sts0.status = {
      observedGeneration: generation,
      replicas: 1,
      readyReplicas: 1,
      currentRevision: "n",
      updateRevision: "n",
    };
    w.mc.apply(sts0);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.notEqual(template(1), before[1], "then replica 1");
    assert.equal(cond(w.mc, "WorkloadCurrent")?.reason, "PodCurrent");
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady", "no replica re-registered");
  });

  it("CoreDNS container not ready in the observed pod", async (t) => {
    const w = await readyGateway(t);
    // the emulator's pod of replica 0, as the kubelet reports it once CoreDNS fails its readiness probe
    const pod = structuredClone(child(w.mc, "Pod", "gw-gateway-0-0"));
    assert.ok(pod);
    pod.status = {
      ...(pod.status as Record<string, unknown>),
      startTime: "2026-11-29T09:59:00Z",
      containerStatuses: [
        { name: "tailscale", ready: true },
        { name: "coredns", ready: false },
      ],
    };
    w.mc.apply(pod);
    await w.mc.settle();
    assert.deepEqual(
      [cond(w.mc, "DNSReady")?.reason, cond(w.mc, "DNSReady")?.message, cond(w.mc, "Ready")?.reason],
      ["NotServing", "CoreDNS is not ready in pod gw-gateway-0-0", "NotServing"],
    );
  });

  it("LoadBalancer: LBPending until an address is assigned", async (t) => {
    const w = await readyGateway(t, { service: { type: "LoadBalancer" } });
    assert.equal(cond(w.mc, "ServiceReady")?.reason, "LBPending");
    assert.equal(cond(w.mc, "Ready")?.reason, "LBPending");
    const svc = child(w.mc, "Service", "gw-dns") as unknown as { status?: unknown };
    svc.status = { loadBalancer: { ingress: [{ ip: "192.0.2.10" }] } };
    await w.mc.settle();
    assert.deepEqual(
      [cond(w.mc, "ServiceReady")?.reason, cond(w.mc, "ServiceReady")?.message, cond(w.mc, "Ready")?.reason],
      ["LoadBalancerAssigned", "Service infra/gw-dns has load balancer 192.0.2.10", "FreshRuntimeReady"],
    );
  });
});

describe("TailnetGateway end to end: before the blockers", () => {
  it("NoTailnet", async (t) => {
    const w = await world(t, { tailnet: false });
    applyGateway(w.mc);
    await w.mc.settle();
    assert.deepEqual(
      [cond(w.mc, "Ready")?.reason, cond(w.mc, "Ready")?.message, cond(w.mc, "Registered")?.status],
      ["NoTailnet", 'Tailnet "home" not found', "Unknown"],
    );
    assert.deepEqual(w.fake.requests, []);
    assert.deepEqual(w.mc.errors, []);
  });

  it("NoAPIKey", async (t) => {
    const w = await world(t, { credentials: false });
    applyGateway(w.mc);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Ready")?.reason, "NoAPIKey");
    assert.equal(
      cond(w.mc, "Ready")?.message,
      "Secret tailnet-system/tailnet-home-credentials not found yet (the Tailnet publishes it once its API key Secret exists)",
    );
    assert.equal(statusOf(w.mc).tag, TAG);
  });

  it("InvalidSpec: no zone and no base domain; observed children are kept", async (t) => {
    const w = await world(t, { baseDomain: null });
    applyGateway(w.mc, { dns: { zone: ZONE } });
    await w.mc.settle();
    const names = childNames(w);
    applyGateway(w.mc, { dns: {} });
    await w.mc.settle();
    assert.deepEqual(
      [cond(w.mc, "Ready")?.reason, cond(w.mc, "Ready")?.message],
      ["InvalidSpec", 'spec.dns.zone: required because Tailnet "home" has no spec.dns.baseDomain'],
    );
    assert.deepEqual(childNames(w), names);
    assert.deepEqual(w.mc.errors, []);
  });

  it("the zone defaults to the Tailnet's base domain", async (t) => {
    const w = await world(t);
    applyGateway(w.mc, { dns: {} });
    await w.mc.settle();
    assert.match(zoneText(w.mc), /\$ORIGIN ts\.example\.com\./);
    assert.deepEqual(reasons(w.mc).Registered, "Provisioning");
  });
});
