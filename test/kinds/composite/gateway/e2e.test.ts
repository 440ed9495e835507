/**
 * TailnetGateway end to end, lifecycle: bootstrap and registration, the derived zone, the cluster
 * DNS forward, key rotation in place (nothing rolls), a re-registration with its predecessor (Delete and Keep),
 * a node key change, suspend with the same node on resume, and finalize — through the Metacontroller emulator, the real hook server and the fake Headscale.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { secretValue } from "../../../../src/kinds/shared/secrets.js";
import { bootTailscale } from "../../../fakes/containerboot.js";
import { loopStore, restartContainer } from "../../../fakes/pod-lifecycle.js";
import { execTool } from "../../../helpers/tools.js";
import {
  API,
  applyGateway,
  child,
  cond,
  gw,
  KEY_SECRET,
  keySecrets,
  lastSync,
  ROUTE,
  readyGateway,
  reasons,
  registerGateway,
  registerReplica,
  replicaName,
  replicas,
  resyncOf,
  serviceIP,
  stateName,
  statusJson,
  statusOf,
  syncAgain,
  T0,
  TAG,
  wipeState,
  world,
  writesTo,
  ZONE,
  zoneText,
} from "./world.js";

const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);

function checkZone(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "gwzone-"));
  try {
    writeFileSync(join(dir, "zone.db"), text);
    return execTool("named-checkzone", [ZONE, join(dir, "zone.db")], { encoding: "utf8" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("TailnetGateway end to end", () => {
  it("bootstraps: a reusable tagged key in one stable Secret, Provisioning until replica 0 registers", async (t) => {
    const w = await world(t);
    applyGateway(w.mc);
    const rounds = await w.mc.settle();
    assert.ok(rounds <= 4, `settled in ${rounds} rounds`);
    assert.deepEqual(w.mc.errors, []);
    const creates = writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/);
    assert.equal(creates.length, 1);
    assert.deepEqual(creates[0].body, {
      reusable: true,
      ephemeral: false,
      expiration: "2026-11-29T11:00:00Z",
      aclTags: [TAG],
    });
    const [secret] = keySecrets(w.mc);
    assert.equal(secret.metadata.name, KEY_SECRET);
    const sts = child(w.mc, "StatefulSet", replicaName(0)) as unknown as {
      spec: { template: { spec: { containers: { env: { name: string; value?: string; valueFrom?: unknown }[] }[] } } };
    };
    const env = sts.spec.template.spec.containers[0].env;
    assert.deepEqual(env.find((e) => e.name === "TS_AUTHKEY")?.valueFrom, {
      secretKeyRef: { name: KEY_SECRET, key: "authkey" },
    });
    assert.equal(env.find((e) => e.name === "TS_KUBE_SECRET")?.value, stateName(0));
    assert.deepEqual(cond(w.mc, "Registered"), {
      ...cond(w.mc, "Registered"),
      status: "False",
      reason: "Provisioning",
      message: "waiting for cluster-gw to register with bootstrap key 1",
    });
    assert.equal(cond(w.mc, "Ready")?.reason, "Provisioning");
    assert.equal(resyncOf(w.mc), 30);
    // the zone exists from the start (empty), the Secret never shows up in status or logs
    assert.match(checkZone(zoneText(w.mc)), /OK/);
    const key = secretValue(secret, "authkey") ?? "";
    assert.ok(key.startsWith("hskey-auth-"));
    assert.ok(!statusJson(w.mc).includes(key));
    assert.ok(!w.logs.join("").includes(key));
  });

  it("registered: FreshRuntimeReady, the route approved (read-modify-write), status.node, repeat sync identical", async (t) => {
    const w = await readyGateway(t);
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual(reasons(w.mc), {
      Registered: "FreshRuntimeReady",
      RoutesInSync: "Approved",
      DNSReady: "Serving",
      StaleNodes: "None",
      ClusterDNSForward: "Configured",
      WorkloadCurrent: "PodCurrent",
      ServiceReady: "ClusterIPAssigned",
      NodeIdentity: "Stable",
      Ready: "FreshRuntimeReady",
    });
    const status = gw(w.mc)?.status as Record<string, unknown>;
    assert.deepEqual(status.node, { id: w.node.id, name: "cluster-gw", nodeKey: w.node.nodeKey, preAuthKeyId: "1" });
    assert.equal(status.tag, TAG);
    assert.equal(status.dnsServiceIP, w.ip);
    assert.deepEqual(
      writesTo(w.fake, "POST", /approve_routes$/).map((r) => r.body),
      [{ routes: [ROUTE] }],
    );
    assert.deepEqual(w.fake.state.nodes.get(w.node.id)?.approvedRoutes, [ROUTE]);
    const before = statusJson(w.mc);
    const writes = w.fake.writes().length;
    await syncAgain(w.mc);
    assert.equal(statusJson(w.mc), before);
    assert.equal(w.fake.writes().length, writes);
    assert.equal(lastSync(w.mc)?.code, 200);
    // resource metrics are published for a gateway that is not suspended
    const ready = await w.metrics.resourceReady.get();
    assert.deepEqual(
      ready.values.filter((v) => v.labels.name === "gw").map((v) => [v.labels.reason, v.value]),
      [["FreshRuntimeReady", 1]],
    );
  });

  it("DryRun: the operator approves nothing", async (t) => {
    const w = await readyGateway(t, {}, { mode: "DryRun" });
    assert.equal(cond(w.mc, "RoutesInSync")?.reason, "NotApproved");
    assert.equal(
      cond(w.mc, "RoutesInSync")?.message,
      `Tailnet home is in DryRun: the operator approves no routes; not approved on node ${w.node.id} "cluster-gw": ${ROUTE}`,
    );
    assert.equal(cond(w.mc, "Ready")?.reason, "NotApproved");
    assert.deepEqual(writesTo(w.fake, "POST", /approve_routes$/), []);
  });

  it("derived zone: MagicDNS egress targets → their egress Service ClusterIP; named-checkzone accepts it", async (t) => {
    const w = await readyGateway(t);
    w.mc.apply({
      apiVersion: API,
      kind: "TailnetEgress",
      metadata: { name: "db", namespace: "shop", uid: "uid-shop-db" },
      spec: {
        tailnetRef: { name: "home" },
        targets: [
          { name: "postgres", host: `db-1.${ZONE}`, ports: [{ port: 5432, protocol: "TCP" }] },
          { name: "mysql", host: "db-2", ports: [{ port: 3306, protocol: "TCP" }] },
        ],
      },
    } as never);
    for (const [name, ip] of [
      ["postgres", "10.96.50.1"],
      ["mysql", "10.96.50.2"],
    ]) {
      w.mc.apply({
        apiVersion: "v1",
        kind: "Service",
        metadata: {
          name,
          namespace: "shop",
          labels: { "tailnet.internal/egress-target": "true" },
          // the egress's own Service (shared/zone-owners.ts): controlled by it
          ownerReferences: [
            { apiVersion: API, kind: "TailnetEgress", name: "db", uid: "uid-shop-db", controller: true },
          ],
        },
        spec: { clusterIP: ip, ports: [{ port: 5432 }] },
      } as never);
    }
    await w.mc.settle();
    const text = zoneText(w.mc);
    assert.match(text, /\ndb-1 {2}IN {2}A {2}10\.96\.50\.1 {2}; shop\/db target postgres\n$/);
    assert.doesNotMatch(text, /10\.96\.50\.2/);
    assert.match(checkZone(text), /OK/);
    const before = statusJson(w.mc);
    await syncAgain(w.mc);
    assert.equal(statusJson(w.mc), before);
    assert.deepEqual(w.mc.errors, []);
  });

  it("ClusterDNSForward: NotConfigured gives the block; External is ExternallyManaged", async (t) => {
    const w = await world(t);
    applyGateway(w.mc);
    await w.mc.settle();
    const ip = serviceIP(w.mc);
    assert.equal(
      cond(w.mc, "ClusterDNSForward")?.message,
      `ConfigMap kube-system/coredns not found; the cluster DNS needs this server block:\n${ZONE}:53 {\n    errors\n    cache 30\n    forward . ${ip}\n}`,
    );
    applyGateway(w.mc, { dns: { zone: ZONE, clusterDNSForward: "External" } });
    await w.mc.settle();
    assert.equal(cond(w.mc, "ClusterDNSForward")?.status, "True");
    assert.equal(cond(w.mc, "ClusterDNSForward")?.reason, "ExternallyManaged");
  });

  it("key rotation at half-life rolls nothing: the same Secret rewritten in place, the same node, no approval again", async (t) => {
    const w = await readyGateway(t);
    const sts = JSON.stringify(child(w.mc, "StatefulSet", replicaName(0))?.spec);
    w.clock.now = minutes(31);
    await w.mc.settle();
    const [secret] = keySecrets(w.mc);
    assert.equal(secret.metadata.name, KEY_SECRET);
    assert.equal(secret.metadata.annotations?.["tailnet.internal/key-id"], "2");
    assert.equal(
      JSON.stringify(child(w.mc, "StatefulSet", replicaName(0))?.spec),
      sts,
      "the pod template is unchanged",
    );
    assert.deepEqual([...w.fake.state.nodes.keys()], [w.node.id]);
    assert.equal(statusOf(w.mc).node?.id, w.node.id);
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);
    assert.equal(writesTo(w.fake, "POST", /approve_routes$/).length, 1);
    // publish first, expire after: key 1 is expired once the Secret proved it holds key 2; the node keeps key 1
    assert.deepEqual(
      writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey\/expire$/).map((r) => r.body),
      [{ id: "1" }],
    );
    assert.equal(statusOf(w.mc).node?.preAuthKeyId, "1");
    assert.deepEqual(statusOf(w.mc).preAuthKeyIds, ["1", "2"]);
    assert.equal(cond(w.mc, "Ready")?.reason, "FreshRuntimeReady");
    assert.deepEqual(w.mc.errors, []);
  });

  it("a replica that lost its state re-registers; its predecessor is deleted once offline, a foreign node never", async (t) => {
    const w = await readyGateway(t);
    const foreign = w.fake.addNode({ name: "laptop", tags: ["tag:other"] });
    foreign.online = false;
    wipeState(w, 0);
    const fresh = registerReplica(w, 0);
    await syncAgain(w.mc);
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Reregistered");
    assert.equal(
      cond(w.mc, "NodeIdentity")?.message,
      `replica 0: registered node ${fresh.id} while its previous node ${w.node.id} still exists`,
    );
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    await w.mc.settle();
    // the record names the predecessor until it is deleted (offline for 60 s)
    assert.equal(statusOf(w.mc).nodes?.[0].predecessorId, w.node.id);
    assert.ok(w.fake.state.nodes.has(w.node.id));
    w.clock.now = minutes(2);
    await syncAgain(w.mc);
    await w.mc.settle();
    assert.deepEqual(
      writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//).map((r) => r.path),
      [`/api/v1/node/${w.node.id}`],
    );
    assert.ok(w.fake.state.nodes.has(foreign.id));
    assert.equal(statusOf(w.mc).node?.id, fresh.id);
    assert.equal(cond(w.mc, "NodeIdentity")?.reason, "Stable");
    assert.equal(cond(w.mc, "Ready")?.reason, "FreshRuntimeReady");
    assert.deepEqual(w.mc.errors, []);
  });

  it("a restart of the tailscale container or a new pod with the replica's state re-joins as the same node, no key used", async (t) => {
    const w = await readyGateway(t);
    const before = statusJson(w.mc);
    const keysBefore = keySecrets(w.mc).map((s) => s.metadata.annotations?.["tailnet.internal/key-id"]);
    const keyUses = () => [...w.fake.state.preAuthKeys.values()].map((k) => k.used);
    const usedBefore = keyUses();
    // a crash, an OOM kill (same pod), then a rescheduled pod: containerboot finds tailscaled's state in the kube store
    const pod = w.pods.get(0);
    assert.ok(pod);
    const restarted = restartContainer(w.fake, loopStore(w.mc), pod);
    assert.deepEqual([restarted.node.id, restarted.usedAuthKey], [w.node.id, false]);
    assert.ok(w.mc.deletePod("gw-gateway-0-0", "infra"));
    const again = registerReplica(w, 0);
    assert.deepEqual([again.id, w.pods.get(0)?.usedAuthKey], [w.node.id, false]);
    assert.deepEqual(keyUses(), usedBefore);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Ready")?.reason, "FreshRuntimeReady");
    assert.equal(statusJson(w.mc), before, "same node, same status");
    assert.deepEqual(
      keySecrets(w.mc).map((s) => s.metadata.annotations?.["tailnet.internal/key-id"]),
      keysBefore,
      "no new key needed",
    );
    assert.equal(w.fake.state.nodes.size, 1);
  });

  it("a private Headscale CA reaches the gateway pod: gw-gateway-ca, mounted, SSL_CERT_FILE; the pod logs in", async (t) => {
    const ca = "-----BEGIN CERTIFICATE-----\nHEADSCALE PRIVATE CA\n-----END CERTIFICATE-----\n";
    const w = await world(t, { ca });
    applyGateway(w.mc);
    await w.mc.settle();
    assert.deepEqual(child(w.mc, "ConfigMap", "gw-gateway-ca")?.data, { "ca.crt": ca });
    const sts = child(w.mc, "StatefulSet", replicaName(0)) as never;
    const booted = bootTailscale(sts, loopStore(w.mc).objects(), { serverCa: ca });
    assert.ok(booted.ok, booted.ok ? "" : booted.error);
    assert.match(booted.boot.caPem, /HEADSCALE PRIVATE CA/);
    registerGateway(w);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    assert.deepEqual(w.mc.errors, []);
  });

  it("staleNodes Keep: a re-registered replica's predecessor is reported, never deleted", async (t) => {
    const w = await readyGateway(t, { staleNodes: "Keep" });
    wipeState(w, 0);
    registerReplica(w, 0);
    w.clock.now = minutes(2);
    await w.mc.settle();
    assert.deepEqual(
      { status: cond(w.mc, "StaleNodes")?.status, message: cond(w.mc, "StaleNodes")?.message },
      { status: "True", message: `staleNodes is Keep; stale nodes left in place: node ${w.node.id} "cluster-gw"` },
    );
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);
    assert.ok(w.fake.state.nodes.has(w.node.id));
  });

  it("node key change: IdentityChanged, no key minted; deleting the replica's state registers a new node", async (t) => {
    const w = await readyGateway(t);
    const creates = writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/).length;
    const node = w.fake.state.nodes.get(w.node.id);
    assert.ok(node);
    const oldKey = node.nodeKey;
    node.nodeKey = `nodekey:${"c".repeat(64)}`;
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "IdentityChanged");
    assert.equal(
      cond(w.mc, "Ready")?.message,
      `replica 0: node ${w.node.id} "cluster-gw" changed its node key from ${oldKey} to ${node.nodeKey} while its state persisted; to keep this node with its new key, set the annotation tailnet.internal/accept-node-key: ${node.nodeKey}; to register a new node instead, delete Secret ${stateName(0)}`,
    );
    assert.equal(writesTo(w.fake, "POST", /^\/api\/v1\/preauthkey$/).length, creates, "no re-bootstrap key");
    assert.equal(statusOf(w.mc).node?.nodeKey, oldKey);
    assert.deepEqual(writesTo(w.fake, "DELETE", /^\/api\/v1\/node\//), []);
    const again = statusJson(w.mc);
    await syncAgain(w.mc);
    assert.equal(statusJson(w.mc), again);
    // the administrator deletes the replica's state: it logs in again with the reusable key
    wipeState(w, 0);
    const fresh = registerReplica(w, 0);
    w.clock.now = minutes(2);
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    assert.equal(statusOf(w.mc).node?.id, fresh.id);
    assert.ok(!w.fake.state.nodes.has(w.node.id), "the old identity was deleted as the predecessor");
  });

  it("node key change accepted with the annotation", async (t) => {
    const w = await readyGateway(t);
    const node = w.fake.state.nodes.get(w.node.id);
    assert.ok(node);
    node.nodeKey = `nodekey:${"d".repeat(64)}`;
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "IdentityChanged");
    applyGateway(w.mc, {}, { annotations: { "tailnet.internal/accept-node-key": node.nodeKey } });
    await w.mc.settle();
    assert.equal(cond(w.mc, "Registered")?.reason, "FreshRuntimeReady");
    assert.equal(statusOf(w.mc).node?.nodeKey, node.nodeKey);
  });

  it("suspend: replicas 0, state and node kept, Ready=False/Suspended, withdrawn; resume is the same node", async (t) => {
    const w = await readyGateway(t);
    const series = async () =>
      [...(await w.metrics.resourceReady.get()).values, ...(await w.metrics.resourceCondition.get()).values].filter(
        (v) => v.labels.kind === "TailnetGateway",
      );
    assert.ok((await series()).length > 0);
    applyGateway(w.mc, { suspend: true });
    await w.mc.settle();
    assert.equal(replicas(w.mc), 0);
    assert.deepEqual(
      {
        status: cond(w.mc, "Ready")?.status,
        reason: cond(w.mc, "Ready")?.reason,
        message: cond(w.mc, "Ready")?.message,
      },
      {
        status: "False",
        reason: "Suspended",
        message: "spec.suspend is true: the gateway is scaled to zero (each replica keeps its state and node)",
      },
    );
    assert.deepEqual(await series(), []);
    // no key is minted for the resume: the replica's state brings back the same node
    assert.equal(keySecrets(w.mc)[0].metadata.annotations?.["tailnet.internal/key-id"], "1");
    assert.ok(child(w.mc, "Secret", stateName(0))?.data, "the state Secret keeps tailscaled's data");
    assert.ok(w.fake.state.nodes.has(w.node.id));
    const before = statusJson(w.mc);
    await syncAgain(w.mc);
    assert.equal(statusJson(w.mc), before);
    applyGateway(w.mc, { suspend: false });
    await w.mc.settle();
    assert.equal(replicas(w.mc), 1);
    assert.equal(statusOf(w.mc).node?.id, w.node.id);
    assert.ok((await series()).length > 0);
    assert.deepEqual(w.mc.errors, []);
  });

  it("the bootstrap key's expiry is exported for the gateway", async (t) => {
    const w = await world(t);
    applyGateway(w.mc);
    await w.mc.settle();
    const expiry = await w.metrics.authKeyExpiry.get();
    assert.deepEqual(
      expiry.values
        .filter((v) => v.labels.kind === "TailnetGateway")
        .map((v) => [v.labels.namespace, v.labels.name, v.value]),
      [["infra", "gw", Date.parse("2026-11-29T11:00:00Z") / 1000]],
    );
    assert.equal(gw(w.mc)?.metadata.name, "gw");
  });
});
