/**
 * A replicated TailnetGateway (spec.replicas 2) in the real world: two gateway pods (containerboot v1.102.5
 * userspace subnet routers + CoreDNS 1.14.7) from the pod runner register with the one reusable bootstrap
 * key against the real Headscale 0.29.3; the operator approves the route on both nodes; Headscale serves
 * it through exactly one primary (hscontrol/state/node_store.go electPrimaryRoutes), and when the primary
 * pod's tailscale dies Headscale fails the route over to the node still online while the gateway stays Ready.
 * Issue 32: each replica is its own StatefulSet `gwha-gateway-<i>` and one node for life (state in its state
 * Secret), so the killed tailscale restarts as the same node, and the route stays on the node that took over.
 * Same containment as test/real/gateway.test.ts: network namespaces on the test bridge only.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parentObject } from "../fixtures/hooks.js";
import { API, listRoutes, podRunnerFor, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import { waitFor } from "./peers.js";
import type { PodRunner, RunningPod } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "infra";
const GW = "gwha";
/** The PodDisruptionBudget over every replica's pod; replica i runs as StatefulSet `gwha-gateway-<i>` (issue 32). */
const PDB = "gwha-gateway";
const STS = (i: number) => `gwha-gateway-${i}`;
const GW_TAG = "tag:k8s-infra-gwha";
const GW_ROUTE = "10.96.0.0/12";

type HsNode = { id: string | number; given_name?: string; tags?: string[]; online?: boolean };
type Status = { nodes?: { replica: number; id: string; name: string; online: boolean; preAuthKeyId: string }[] };

describe("TailnetGateway with spec.replicas 2 on the real tailnet", { timeout: 900_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let killed: { pod: RunningPod; node: string; primary: string } | undefined;

  before(async () => {
    world = await startRealWorld({ id: "gateway-ha" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    op.mc.apply(
      parentObject(
        "TailnetGateway",
        GW,
        { tailnetRef: { name: "home" }, hostname: "cluster-gwha", routes: [GW_ROUTE], replicas: 2 },
        { namespace: NS },
      ),
    );
  });
  after(async () => {
    await pods?.close();
    await op?.close();
    await world?.close();
  });

  const status = () => (op.mc.get(API, "TailnetGateway", GW, NS)?.status ?? {}) as Status;
  const ready = () => op.condition("TailnetGateway", GW, "Ready", NS);
  const gatewayNodes = async () =>
    ((await world.headscale.json<HsNode[] | null>(["nodes", "list"])) ?? []).filter((n) => n.tags?.includes(GW_TAG));
  const gatewayPods = () => [0, 1].flatMap((i) => pods.podsOf(NS, STS(i), "StatefulSet"));
  const describeWorld = async () =>
    [
      `gateway: ${JSON.stringify(op.mc.get(API, "TailnetGateway", GW, NS)?.status)}`,
      `list-routes: ${JSON.stringify([...(await listRoutes(world)).values()])}`,
      `hook errors: ${op.failures()}`,
      `pod failures: ${pods.failures.join("\n")}`,
      ...gatewayPods().map((p) => `${JSON.stringify(p.containers.map((c) => c.state()))}\n${p.logs()}`),
    ].join("\n");
  const step = async () => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
  };
  /** The gateway's route rows in Headscale: [approved on every node, the primary's node names]. */
  const routeRows = async () => {
    const rows = [...(await listRoutes(world)).values()].filter((r) => r.available_routes?.includes(GW_ROUTE));
    return { rows, primaries: rows.filter((r) => r.subnet_routes?.includes(GW_ROUTE)).map((r) => String(r.id)) };
  };

  it("two nodes on one reusable key, the route approved on both, exactly one primary", async () => {
    const t0 = Date.now();
    await waitFor(
      "both gateway nodes registered and online, Ready=True",
      async () => {
        await step();
        const s = status();
        return ready()?.status === "True" && s.nodes?.length === 2 && s.nodes.every((n) => n.online) ? true : undefined;
      },
      240_000,
      describeWorld,
    );
    console.log(`# HA gateway (2 replicas) Ready with both nodes online after ${Date.now() - t0} ms`);
    assert.match(ready()?.message ?? "", /^2 of 2 replicas bound to their nodes \(2 online: /);
    const nodes = await gatewayNodes();
    assert.equal(nodes.length, 2, JSON.stringify(nodes));
    const s = status();
    assert.deepEqual(s.nodes?.map((n) => n.id).sort(), nodes.map((n) => String(n.id)).sort());
    assert.equal(new Set(s.nodes?.map((n) => n.preAuthKeyId)).size, 1, "one reusable key for both pods");
    // one node per replica, replica 1 named `<hostname>-r1` (never Headscale's `-1` collision bump)
    assert.deepEqual(
      s.nodes?.map((n) => [n.replica, n.name]),
      [
        [0, "cluster-gwha"],
        [1, "cluster-gwha-r1"],
      ],
    );
    const { rows, primaries } = await waitFor("one primary for the route", async () => {
      const r = await routeRows();
      return r.rows.length === 2 && r.primaries.length === 1 ? r : undefined;
    });
    for (const r of rows) assert.deepEqual(r.approved_routes, [GW_ROUTE], `approved on ${r.given_name}`);
    assert.equal(primaries.length, 1);
    assert.ok(op.mc.get("policy/v1", "PodDisruptionBudget", PDB, NS), "the PodDisruptionBudget child");
  });

  it("the primary's tailscale dies: Headscale fails the route over to the other node, Ready stays True", async () => {
    const before = await routeRows();
    assert.equal(before.primaries.length, 1);
    // the pod whose node is the primary: status.nodes[] names each replica's node (from the device_id its
    // containerboot wrote into the replica's state Secret), and replica i runs as StatefulSet gwha-gateway-<i>
    const replica = status().nodes?.find((n) => n.id === before.primaries[0])?.replica;
    assert.ok(replica !== undefined, `a replica bound to the primary node ${before.primaries[0]}`);
    const pod: RunningPod | undefined = pods.podsOf(NS, STS(replica), "StatefulSet")[0];
    assert.ok(pod, `the pod of replica ${replica}, bound to the primary node ${before.primaries[0]}`);
    pods.expectRestarts(pod, "tailscale", 1);
    const t0 = Date.now();
    await pod.container("tailscale").kill("SIGKILL");
    // no kubelet pass from here on (the container is not restarted): only Headscale and the hooks run
    const offline = await waitFor(
      "the killed pod's node offline in Headscale",
      async () => (await gatewayNodes()).find((n) => !n.online),
      60_000,
      describeWorld,
    );
    const gone = String(offline.id);
    const moved = await waitFor(
      "the route served by the node still online",
      async () => {
        const r = await routeRows();
        return r.primaries.length === 1 && r.primaries[0] !== gone ? r.primaries[0] : undefined;
      },
      60_000,
      describeWorld,
    );
    assert.equal(gone, before.primaries[0], "the killed pod's node is the one that went offline");
    console.log(`# primary node ${gone} offline after ${Date.now() - t0} ms; the route failed over to node ${moved}`);
    await op.mc.settle(6).catch(() => undefined);
    assert.equal(ready()?.status, "True", "Ready with one node online");
    assert.match(ready()?.message ?? "", /^2 of 2 replicas bound to their nodes \(1 online: /);
    assert.deepEqual(status().nodes?.find((n) => n.id === gone)?.online, false, "status.nodes marks the node offline");
    killed = { pod, node: gone, primary: moved };
  });

  it("the killed tailscale restarts as the same node (issue 32): no third node, the route stays where it moved", async () => {
    assert.ok(killed, "the previous test killed a tailscale");
    const { pod, node, primary } = killed;
    const ids = (await gatewayNodes()).map((n) => String(n.id)).sort();
    const t0 = Date.now();
    await waitFor(
      "the restarted tailscale's node online again",
      async () => {
        await step();
        const back = (await gatewayNodes()).find((n) => String(n.id) === node);
        return pod.container("tailscale").ready && back?.online && ready()?.message.includes("(2 online: ")
          ? true
          : undefined;
      },
      120_000,
      describeWorld,
    );
    console.log(`# killed tailscale back online as node ${node} after ${Date.now() - t0} ms`);
    // the state Secret kept the node: the same two nodes, both approved; Headscale keeps the healthy primary
    assert.deepEqual((await gatewayNodes()).map((n) => String(n.id)).sort(), ids);
    const { rows, primaries } = await routeRows();
    for (const r of rows) assert.deepEqual(r.approved_routes, [GW_ROUTE], `approved on ${r.given_name}`);
    assert.deepEqual(primaries, [primary], "no flap back to the restarted node");
    assert.deepEqual(
      status()
        .nodes?.map((n) => n.id)
        .sort(),
      ids,
      "status.nodes still binds each replica to its node",
    );
  });
});
