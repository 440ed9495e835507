/**
 * Issue 32 "done when", the gateway half, in the real world: a TailnetGateway keeps its Headscale node and its
 * approved route across three bootstrap-key rotations and a pod deletion, with no route failover. The real hook
 * server renders replica 0's children (ServiceAccount, Role, RoleBinding, state Secret `gw-gateway-0-state`,
 * StatefulSet `gw-gateway-0`) and the stable key Secret `gw-gateway-authkey`; the pod runner runs the real
 * containerboot + tailscaled (state in that Secret through the pod API) and CoreDNS, against the real Headscale.
 * - `bootstrapKeyTTL: 60s`: the key is rotated in place at half-life (every ~30 s), so three rotations happen
 *   within the test; each older key is expired in Headscale, which logs no node out (Headscale checks a key at
 *   registration only, hscontrol/state/state.go HandleNodeFromPreAuthKey);
 * - the operator process is stopped for three steps and started anew between the first and the second rotation;
 * - the pod is deleted between the second and the third rotation, when the key it registered with is already
 *   expired: its successor reads the state Secret and comes back as the same node, never logging in again;
 * - at every step (a kubelet pass and the loop until quiet) the status is read: Registered stays
 *   True/FreshRuntimeReady (the fresh writer never blocks), status.nodes[] names the same node, and Headscale's
 *   route row for 10.96.0.0/12 has no primary on any other node;
 * - the StatefulSet's generation does not move (nothing in the template names a key) and the derived zone is
 *   still served by the new pod's CoreDNS.
 * The derived zone's egress is data only (its hook stubbed), as in gateway.test.ts. Packets stay inside the test
 * namespaces (containmentProblems()).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EGRESS_TARGET_LABEL } from "../../src/k8s/labels.js";
import { parentObject } from "../fixtures/hooks.js";
import { udpDns } from "./dns-direct.js";
import { BASE_DOMAIN } from "./headscale.js";
import { API, listRoutes, podRunnerFor, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import type { PodRunner, RunningPod } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "infra";
const GW = "gw";
const STS = "gw-gateway-0";
const POD = "gw-gateway-0-0";
const KEY_SECRET = "gw-gateway-authkey";
const KEY_ID = "tailnet.internal/key-id";
const GW_TAG = "tag:k8s-infra-gw";
const GW_ROUTE = "10.96.0.0/12";
const DB_SERVICE_IP = "10.96.0.200";
const DB_NAME = `db-1.${BASE_DOMAIN}`;

type HsNode = { id: string | number; given_name?: string; tags?: string[]; ip_addresses?: string[] };
type HsKey = { id: string | number; expiration?: { seconds?: number } | string };
type NodeItem = { replica: number; id: string; name?: string; addresses?: string[]; nodeKey?: string };
type Cond = { type: string; status: string; reason: string; message: string };

const expiresMs = (k: HsKey | undefined) => {
  const e = k?.expiration;
  if (e === undefined) return 0;
  return typeof e === "string" ? Date.parse(e) : (e.seconds ?? 0) * 1000;
};

/** What one step saw. */
interface Seen {
  at: number;
  registered: string;
  ready: string;
  blocked: string[];
  nodeIds: string[];
  taggedNodes: string[];
  primaries: string[];
  approved: string[];
  generation: number | undefined;
  keyId: string | undefined;
}

describe("issue 32: a gateway keeps its node and its route across key rotations and a pod deletion (real world)", {
  timeout: 900_000,
  concurrency: false,
}, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  const trail: Seen[] = [];

  before(async () => {
    world = await startRealWorld({ id: "gateway-identity" });
    const base = tailnetSpec(world);
    op = await startOperator(world, {
      tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } },
      stubKinds: ["egress"],
    });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "db",
        { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: DB_NAME, ports: [{ port: 5432 }] }] },
        { namespace: "shop", uid: "uid-shop-db" },
      ),
    );
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "postgres",
        namespace: "shop",
        labels: { [EGRESS_TARGET_LABEL]: "true" },
        ownerReferences: [{ apiVersion: API, kind: "TailnetEgress", name: "db", uid: "uid-shop-db", controller: true }],
      },
      spec: { clusterIP: DB_SERVICE_IP, selector: { app: "db-agent" }, ports: [{ port: 5432 }] },
    });
    op.mc.apply(
      parentObject(
        "TailnetGateway",
        GW,
        // half-life 30 s: three rotations within the test
        { tailnetRef: { name: "home" }, hostname: "cluster-gw", routes: [GW_ROUTE], bootstrapKeyTTL: "60s" },
        { namespace: NS },
      ),
    );
  });
  after(async () => {
    await pods?.close();
    await op?.close();
    await world?.close();
  });

  const gateway = () => op.mc.get(API, "TailnetGateway", GW, NS);
  const conditions = () => ((gateway()?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []) as Cond[];
  const cond = (type: string) => conditions().find((c) => c.type === type);
  const statusNodes = () => ((gateway()?.status as { nodes?: NodeItem[] } | undefined)?.nodes ?? []) as NodeItem[];
  const keyId = () => op.mc.get("v1", "Secret", KEY_SECRET, NS)?.metadata.annotations?.[KEY_ID];
  const generation = () => op.mc.get("apps/v1", "StatefulSet", STS, NS)?.metadata.generation;
  const deviceId = () => {
    const v = op.mc.get("v1", "Secret", `${STS}-state`, NS)?.data?.device_id;
    return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
  };
  const pod = (): RunningPod | undefined => pods.podsOf(NS, STS, "StatefulSet")[0];
  const tagged = async () =>
    ((await world.headscale.json<HsNode[] | null>(["nodes", "list"])) ?? []).filter((n) => n.tags?.includes(GW_TAG));
  const describeWorld = () =>
    [
      `status: ${JSON.stringify(gateway()?.status)}`,
      `hook errors: ${op.failures()}`,
      `pod failures: ${pods.failures.join("\n")}`,
      `trail (last 5): ${JSON.stringify(trail.slice(-5))}`,
      ...pods.pods.filter((p) => p.namespace === NS).map((p) => p.logs()),
    ].join("\n");

  /** One round of the cluster (kubelet pass, loop until quiet), then what the status and Headscale say. */
  const step = async (): Promise<Seen> => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
    const rows = [...(await listRoutes(world)).values()].filter((r) => r.available_routes?.includes(GW_ROUTE));
    const seen: Seen = {
      at: Date.now(),
      registered: `${cond("Registered")?.status}/${cond("Registered")?.reason}`,
      ready: `${cond("Ready")?.status}/${cond("Ready")?.reason}`,
      blocked: conditions()
        .filter((c) => /fresh writer blocked/.test(c.message))
        .map((c) => `${c.type}: ${c.message}`),
      nodeIds: statusNodes().map((n) => `${n.replica}:${n.id}`),
      taggedNodes: (await tagged()).map((n) => String(n.id)),
      primaries: rows.filter((r) => r.subnet_routes?.includes(GW_ROUTE)).map((r) => String(r.id)),
      approved: rows.flatMap((r) => (r.approved_routes ?? []).map((a) => `${r.id}:${a}`)),
      generation: generation(),
      keyId: keyId(),
    };
    trail.push(seen);
    return seen;
  };
  const drive = async (what: string, done: (s: Seen) => boolean | Promise<boolean>, ms = 120_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      if (await done(await step())) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${describeWorld()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  let nodeId = "";
  let addresses: string[] = [];
  let firstStep = 0;

  it("comes up: one node, the route approved and primary on it, the zone served by the pod's CoreDNS", async () => {
    const t0 = Date.now();
    await drive(
      "gateway Ready with its route primary",
      (s) => s.ready === "True/FreshRuntimeReady" && s.primaries.length === 1 && !!s.keyId,
      240_000,
    );
    console.log(`# gateway Ready, route primary after ${Date.now() - t0} ms`);
    const nodes = await tagged();
    assert.equal(nodes.length, 1, JSON.stringify(nodes));
    nodeId = String(nodes[0].id);
    addresses = nodes[0].ip_addresses ?? [];
    assert.deepEqual(
      statusNodes().map((n) => ({ replica: n.replica, id: n.id, name: n.name })),
      [{ replica: 0, id: nodeId, name: "cluster-gw" }],
    );
    assert.equal(deviceId(), nodeId, "containerboot's device_id in the state Secret is the Headscale node id");
    const last = trail.at(-1) as Seen;
    assert.deepEqual(last.primaries, [nodeId]);
    assert.deepEqual(last.approved, [`${nodeId}:${GW_ROUTE}`]);
    assert.equal(cond("NodeIdentity")?.reason, "Stable");
    const p = pod();
    assert.ok(p);
    assert.deepEqual(await udpDns(p.ip, 1053, DB_NAME), { rcode: 0, a: [DB_SERVICE_IP] });
    firstStep = trail.length - 1;
  });

  it("three key rotations and a pod deletion: same node, same approved route, no failover, never blocked", async () => {
    assert.ok(nodeId, "the gateway came up");
    // each operator process has its own event recorder: the run's events are the first one's from here on, then
    // every later one's
    const eventsFrom = op.events.events.length;
    const recorders = [op.events];
    const gen = generation();
    assert.ok(gen !== undefined);
    const keys = [keyId() as string];
    const rotationMs: number[] = [];
    let waitFrom = Date.now();
    const rotate = async () => {
      const from = keys.at(-1);
      await drive(`key rotation ${keys.length}`, (s) => !!s.keyId && s.keyId !== from, 90_000);
      keys.push(keyId() as string);
      rotationMs.push(Date.now() - waitFrom);
      waitFrom = Date.now();
    };
    await rotate();
    // a neighbour: an operator restart between two rotations (its new views know nothing but the status)
    await op.stop();
    for (let i = 0; i < 3; i++) await step();
    await op.start();
    recorders.push(op.events);
    await rotate();
    // the key the pod registered with is expired in Headscale before the pod goes
    const expired = async (id: string) => {
      const all = (await world.headscale.json<HsKey[] | null>(["preauthkeys", "list"])) ?? [];
      return expiresMs(all.find((k) => String(k.id) === id)) <= Date.now();
    };
    await drive(`the first key ${keys[0]} expired in Headscale`, () => expired(keys[0]), 60_000);

    const old = pod();
    assert.ok(old);
    const oldUid = old.uid;
    const tDelete = Date.now();
    await pods.deletePod(NS, POD);
    await drive("the new pod ready and the gateway Ready", (s) => {
      const p = pod();
      return !!p && p.uid !== oldUid && p.ready && s.ready === "True/FreshRuntimeReady" && s.primaries.length === 1;
    });
    const backMs = Date.now() - tDelete;
    await rotate();
    await drive(`the second key ${keys[1]} expired in Headscale`, () => expired(keys[1]), 60_000);

    const run = trail.slice(firstStep);
    console.log(
      `# rotations after ${rotationMs.join(", ")} ms (TTL 60 s, half-life 30 s); pod back with the route primary ${backMs} ms after its deletion; ${run.length} steps over ${run.at(-1)!.at - run[0].at} ms`,
    );
    console.log(`# Ready over the run: ${[...new Set(run.map((s) => s.ready))].join(", ")}`);
    console.log(
      `# steps with no primary for ${GW_ROUTE}: ${run.filter((s) => s.primaries.length === 0).length} of ${run.length}`,
    );

    const recorded = recorders
      .flatMap((r, i) => (i === 0 ? r.events.slice(eventsFrom) : r.events))
      .filter((e) => e.regarding.kind === "TailnetGateway" && e.regarding.metadata.name === GW);
    const events = recorded.map((e) => `${e.type}/${e.reason}: ${e.message}`);
    console.log(`# gateway events over the run: ${JSON.stringify(events)}`);
    assert.equal(new Set(keys).size, 4, `three rotations: ${keys.join(" → ")}`);
    // The deleted pod's successor is not serving for a moment (DNSReady, WorkloadCurrent and Ready say so, each an
    // Event of its condition's change); what must never show is a warning about the node's identity.
    const IDENTITY = ["FreshBlocked", "IdentityChanged", "Reregistered", "StateLost", "ForeignNode"];
    assert.deepEqual(
      recorded
        .filter((e) => e.type === "Warning")
        .filter((e) => e.condition === "Registered" || e.condition === "NodeIdentity" || IDENTITY.includes(e.reason))
        .map((e) => `${e.condition} ${e.reason}: ${e.message}`),
      [],
      "no warning: no identity change, no re-registration, no blocked writer",
    );
    // at every step: the fresh writer never blocked, the same node, never another primary, never a second node
    assert.deepEqual([...new Set(run.map((s) => s.registered))], ["True/FreshRuntimeReady"]);
    assert.deepEqual(
      run.flatMap((s) => s.blocked),
      [],
    );
    assert.deepEqual([...new Set(run.map((s) => s.nodeIds.join(",")))], [`0:${nodeId}`]);
    assert.deepEqual([...new Set(run.map((s) => s.taggedNodes.join(",")))], [nodeId]);
    assert.deepEqual([...new Set(run.flatMap((s) => s.primaries))], [nodeId], "no primary on another node");
    assert.deepEqual([...new Set(run.map((s) => s.approved.join(",")))], [`${nodeId}:${GW_ROUTE}`]);
    assert.deepEqual([...new Set(run.map((s) => s.generation))], [gen], "rotations roll nothing");

    const now = pod();
    assert.ok(now && now.uid !== oldUid, "a new pod");
    const [node] = await tagged();
    assert.deepEqual(
      { id: String(node.id), name: node.given_name, addresses: node.ip_addresses },
      { id: nodeId, name: "cluster-gw", addresses },
    );
    assert.equal(deviceId(), nodeId);
    assert.equal(cond("NodeIdentity")?.reason, "Stable");
    assert.equal(now.container("tailscale").restartCount, 0, now.container("tailscale").logs());
    assert.deepEqual(await udpDns(now.ip, 1053, DB_NAME), { rcode: 0, a: [DB_SERVICE_IP] }, "the zone still served");
    const lives = pods.history.filter((p) => p.namespace === NS && p.name === POD);
    assert.equal(lives.length, 2, "one replacement pod");
    assert.deepEqual(await world.net.containmentProblems(), []);
  });
});
