/**
 * Issue 32 in the real world: a TailnetEgress replica is one Headscale node for its whole life. The real hook
 * server and the Metacontroller loop render per replica i a ServiceAccount, Role, RoleBinding, state Secret
 * `db-agent-<i>-state` and StatefulSet `db-agent-<i>`; the pod runner runs the real containerboot + tailscaled
 * (keeping their state in that Secret through the pod API) and the operator's agent, against the real Headscale.
 * - a TCP stream held open through the egress agent (workload → the target Service → db-1's echo) keeps echoing
 *   through an auth-key rotation in place (Tailnet authKeyTTL 2m: the `db-authkey` Secret's key id changes and the
 *   old key is expired in Headscale) and an operator restart: no new StatefulSet generation, the same pod process,
 *   the same node id;
 * - a killed tailscaled (after the first key expired) and a deleted agent pod (also while the operator is stopped)
 *   come back as the same node id, MagicDNS name and addresses;
 * - scale 1→2→1: replica 1 registers as `shop-db-r1`; on scale-down its node is deleted and its children go;
 * - the runner never ran two pods of one ordinal at once (pods.history).
 * Packets stay inside the test namespaces (containmentProblems()).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parentObject } from "../fixtures/hooks.js";
import { bins } from "./bins.js";
import type { Host, RealProcess } from "./net.js";
import { API, podRunnerFor, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import type { PodRunner, RunningPod } from "./pods.js";
import { DB_PORT, type RealWorld, startRealWorld, TAGS } from "./world.js";

const NS = "shop";
const TAG = "tag:k8s-shop-db";
const KEY_ID = "tailnet.internal/key-id";
type HsNode = { id: string | number; given_name?: string; name?: string; tags?: string[]; ip_addresses?: string[] };
type HsKey = { id: string | number; expiration?: { seconds?: number } | string };
type NodeItem = { replica: number; id: string; name?: string; addresses?: string[] };
type Cond = { type: string; status: string; reason: string; message: string };

const expiresMs = (k: HsKey | undefined) => {
  const e = k?.expiration;
  if (e === undefined) return 0;
  return typeof e === "string" ? Date.parse(e) : (e.seconds ?? 0) * 1000;
};

/** A client that writes `tick-<n>` every 2 s on one connection and prints each echoed line with its time. */
const STREAM = `const net=require("node:net");const [h,p]=process.argv.slice(1);let n=0,buf="";
const s=net.connect({host:h,port:Number(p)});
s.on("connect",()=>{console.log("connected");setInterval(()=>s.write("tick-"+(++n)+"\\n"),2000)});
s.on("data",d=>{buf+=d;let i;while((i=buf.indexOf("\\n"))>=0){console.log("echo "+buf.slice(0,i)+" "+Date.now());buf=buf.slice(i+1)}});
s.on("error",e=>console.log("error "+(e.code||e.message)));s.on("close",()=>{console.log("closed");process.exit(3)});`;

/** The last echoed tick and when it came back, from the stream client's log. */
function lastEcho(p: RealProcess): { tick: number; at: number } {
  const m = [...p.logs().matchAll(/^echo tick-(\d+) (\d+)$/gm)].at(-1);
  return m ? { tick: Number(m[1]), at: Number(m[2]) } : { tick: 0, at: 0 };
}

describe("issue 32: an egress replica keeps its tailnet node (real Headscale, containerboot, hook server)", {
  timeout: 900_000,
  concurrency: false,
}, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let client: Host;
  let stream: RealProcess | undefined;

  before(async () => {
    world = await startRealWorld({ id: "identity" });
    const base = tailnetSpec(world);
    op = await startOperator(world, {
      tailnet: {
        policy: { ...base.policy, tagOwners: ["group:eng"] },
        allowedEgressTargets: [TAGS.db],
        // rotated at half-life: within the test
        authKeyTTL: "2m",
      },
    });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    client = await world.net.addHost("shop-client");
    pods.addWorkload({ namespace: NS, name: "client", labels: { app: "client" }, host: client });
  });
  after(async () => {
    await stream?.kill("SIGKILL");
    await pods?.close();
    await op?.close();
    await world?.close();
  });

  const egress = () => op.mc.get(API, "TailnetEgress", "db", NS);
  const cond = (type: string) =>
    ((egress()?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find((c) => c.type === type);
  const statusNodes = () => ((egress()?.status as { nodes?: NodeItem[] } | undefined)?.nodes ?? []) as NodeItem[];
  const tagged = async () =>
    ((await world.headscale.json<HsNode[] | null>(["nodes", "list"])) ?? []).filter((n) => n.tags?.includes(TAG));
  const keyId = () => op.mc.get("v1", "Secret", "db-authkey", NS)?.metadata.annotations?.[KEY_ID];
  const stateKey = (i: number, key: string) => {
    const v = op.mc.get("v1", "Secret", `db-agent-${i}-state`, NS)?.data?.[key];
    return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
  };
  const replicaPod = (i: number) => pods.podsOf(NS, `db-agent-${i}`, "StatefulSet")[0];
  const sts = (i: number) => op.mc.get("apps/v1", "StatefulSet", `db-agent-${i}`, NS);
  const describeWorld = () =>
    [
      `status: ${JSON.stringify(egress()?.status)}`,
      `hook errors: ${op.failures()}`,
      ...pods.pods.filter((p) => p.namespace === NS).map((p) => p.logs()),
      stream ? `stream: ${stream.logs()}` : "",
    ].join("\n");

  const step = async () => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
  };
  const drive = async (what: string, done: () => boolean | Promise<boolean>, ms = 180_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await step();
      if (await done()) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${describeWorld()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  const setReplicas = (replicas: number) => {
    const e = egress();
    assert.ok(e);
    op.mc.apply({ ...e, spec: { ...(e.spec as object), replicas } });
  };

  it("a held TCP stream survives an auth-key rotation and an operator restart: same pod, same node", async () => {
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "db",
        { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: DB_PORT }] }] },
        { namespace: NS },
      ),
    );
    const t0 = Date.now();
    await drive("egress db Ready", () => cond("Ready")?.status === "True" && !!keyId());
    console.log(`# egress db Ready after ${Date.now() - t0} ms`);
    const addr = pods.serviceAddr(NS, "postgres", DB_PORT);
    stream = client.spawn(bins.node, ["-e", STREAM, addr.host, String(addr.port)], { logName: "stream" });
    await drive("the stream echoing", () => lastEcho(stream as RealProcess).tick >= 1, 30_000);

    const pod = replicaPod(0);
    const ts = pod.container("tailscale");
    const pid = ts.pid;
    const restarts = ts.restartCount;
    const generation = sts(0)?.metadata.generation;
    const [node] = await tagged();
    assert.ok(node && pid && generation !== undefined);
    assert.deepEqual(
      statusNodes().map((n) => ({ replica: n.replica, id: n.id })),
      [{ replica: 0, id: String(node.id) }],
    );

    // rotation in place: the Secret keeps its name, its key id changes, the old key is expired in Headscale
    const firstKey = keyId() as string;
    const rotateFrom = Date.now();
    await drive("the db-authkey Secret holding a new key", () => keyId() !== firstKey, 150_000);
    const rotatedAt = Date.now();
    const oldKeyExpired = async () => {
      const keys = (await world.headscale.json<HsKey[] | null>(["preauthkeys", "list"])) ?? [];
      return expiresMs(keys.find((k) => String(k.id) === firstKey)) <= Date.now();
    };
    await drive("the old key expired in Headscale", oldKeyExpired, 60_000);
    console.log(
      `# key rotated ${rotatedAt - rotateFrom} ms into the wait (TTL 2m, half-life 60 s); old key expired ${Date.now() - rotatedAt} ms after the rotation`,
    );

    // operator restart: the loop's calls fail while it is down and change nothing; a new process takes over
    // the runner keeps writing the StatefulSet's status; what the operator owns is its spec and generation
    const owned = () => JSON.stringify({ spec: sts(0)?.spec, generation: sts(0)?.metadata.generation });
    const childrenBefore = owned();
    await op.stop();
    await assert.rejects(op.mc.settle(1), /ECONNREFUSED: the operator is stopped/);
    const tickAtStop = lastEcho(stream).tick;
    for (let i = 0; i < 4; i++) {
      await pods.sync();
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.equal(owned(), childrenBefore);
    await op.start();
    const restartedAt = Date.now();
    await drive("Ready after the restart and a few echoes", () => {
      const e = lastEcho(stream as RealProcess);
      return cond("Ready")?.status === "True" && e.tick >= tickAtStop + 3 && e.at > restartedAt;
    });

    const echo = lastEcho(stream);
    assert.ok(Date.now() - echo.at < 6000, `the stream still echoes: ${stream.logs()}`);
    assert.doesNotMatch(stream.logs(), /^(closed|error .*)$/m);
    assert.equal(sts(0)?.metadata.generation, generation, "the StatefulSet was not rolled");
    assert.equal(replicaPod(0), pod, "the same pod");
    assert.equal(ts.pid, pid, "the same tailscale process");
    assert.equal(ts.restartCount, restarts);
    assert.deepEqual(
      (await tagged()).map((n) => String(n.id)),
      [String(node.id)],
    );
    assert.equal(statusNodes()[0]?.id, String(node.id));
  });

  it("killing tailscaled after the rotation (the first key expired): the container comes back as the same node", async () => {
    await stream?.kill("SIGKILL");
    stream = undefined;
    const [before] = await tagged();
    const pod = replicaPod(0);
    const ts = pod.container("tailscale");
    const daemon = ts.processes().find((p) => p.comm === "tailscaled");
    assert.ok(before && daemon, `tailscaled runs: ${JSON.stringify(ts.processes())}`);
    const restarts = ts.restartCount;
    pods.expectRestarts(pod, "tailscale", 1);
    const killedAt = Date.now();
    process.kill(daemon.pid, "SIGKILL");
    await drive(
      "the tailscale container restarted and the egress Ready",
      () => ts.restartCount > restarts && ts.running && pod.ready && cond("Ready")?.status === "True",
    );
    console.log(`# killed tailscaled: container back, egress Ready after ${Date.now() - killedAt} ms`);
    assert.equal(replicaPod(0), pod, "only the container restarted");
    assert.deepEqual(
      (await tagged()).map((n) => ({ id: String(n.id), name: n.given_name, ips: n.ip_addresses })),
      [{ id: String(before.id), name: "shop-db", ips: before.ip_addresses }],
    );
    assert.equal(cond("NodeIdentity")?.reason, "Stable");
  });

  it("with the operator stopped, a deleted agent pod comes back as the same node; the new operator finds it Stable", async () => {
    const [before] = await tagged();
    const old = replicaPod(0);
    assert.ok(before && old);
    await op.stop();
    await pods.deletePod(NS, "db-agent-0-0");
    const deletedAt = Date.now();
    // the StatefulSet controller (the runner) needs no operator: the same ordinal, the same state Secret
    for (;;) {
      await pods.sync();
      pods.check();
      const p = replicaPod(0);
      if (p && p !== old && p.ready) break;
      assert.ok(Date.now() - deletedAt < 120_000, `replica 0 not back without the operator\n${describeWorld()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`# deleted agent pod Ready again without the operator after ${Date.now() - deletedAt} ms`);
    assert.deepEqual(
      (await tagged()).map((n) => ({ id: String(n.id), name: n.given_name, ips: n.ip_addresses })),
      [{ id: String(before.id), name: "shop-db", ips: before.ip_addresses }],
    );
    await op.start();
    await drive("egress Ready under the new operator", () => cond("Ready")?.status === "True");
    assert.equal(cond("NodeIdentity")?.reason, "Stable");
    assert.deepEqual(
      statusNodes().map((n) => ({ replica: n.replica, id: n.id })),
      [{ replica: 0, id: String(before.id) }],
    );
  });

  it("deleting the agent pod brings back the same node id, MagicDNS name and addresses; one node", async () => {
    const [before] = await tagged();
    const old = replicaPod(0);
    assert.ok(before && old);
    const apiLogBefore = op.kubeApi.log.length;
    const deletedAt = Date.now();
    await pods.deletePod(NS, "db-agent-0-0");
    await drive("a new pod of replica 0 Ready and the egress Ready", () => {
      const p = replicaPod(0);
      return !!p && p !== old && p.ready && cond("Ready")?.status === "True";
    });
    console.log(`# deleted agent pod back to Ready (egress Ready) after ${Date.now() - deletedAt} ms`);
    const now = await tagged();
    assert.deepEqual(
      now.map((n) => ({ id: String(n.id), name: n.given_name, ips: n.ip_addresses })),
      [{ id: String(before.id), name: "shop-db", ips: before.ip_addresses }],
    );
    const pod = replicaPod(0);
    assert.notEqual(pod?.uid, old.uid, "a new pod (uid) under the same name");
    // the new pod's tailscaled loaded the replica's state through the pod API (ipn/store/kubestore loadState): no
    // POD_UID is rendered, so containerboot writes no pod_uid to tell pods apart (cmd/containerboot/kube.go)
    assert.deepEqual(
      [
        ...new Set(
          op.kubeApi.log
            .slice(apiLogBefore)
            .filter(
              (e) => e.method === "GET" && e.path.split("?")[0] === `/api/v1/namespaces/${NS}/secrets/db-agent-0-state`,
            )
            .map((e) => `${e.user} ${e.code}`),
        ),
      ],
      [`system:serviceaccount:${NS}:db-agent-0 200`],
    );
    assert.equal(stateKey(0, "device_id"), String(before.id));
    assert.deepEqual(
      statusNodes().map((n) => ({ replica: n.replica, id: n.id, name: n.name })),
      [{ replica: 0, id: String(before.id), name: "shop-db" }],
    );
  });

  it("scale 1→2→1: replica 1 registers as shop-db-r1, then its node is deleted and its children go", async () => {
    const [first] = await tagged();
    setReplicas(2);
    const t0 = Date.now();
    await drive("two replicas bound to nodes", () => statusNodes().length === 2 && !!replicaPod(1)?.ready);
    console.log(`# replica 1 bound after ${Date.now() - t0} ms`);
    const two = await tagged();
    const r1 = statusNodes().find((n) => n.replica === 1);
    assert.ok(r1);
    assert.deepEqual(
      two
        .map((n) => ({ id: String(n.id), name: n.given_name }))
        .sort((a, b) => a.name?.localeCompare(b.name ?? "") ?? 0),
      [
        { id: String(first.id), name: "shop-db" },
        { id: r1.id, name: "shop-db-r1" },
      ],
    );
    assert.ok(op.mc.get("v1", "Secret", "db-agent-1-state", NS)?.data?.device_id, "replica 1's state Secret holds it");

    setReplicas(1);
    const t1 = Date.now();
    const kinds: [string, string, string][] = [
      ["apps/v1", "StatefulSet", "db-agent-1"],
      ["v1", "ServiceAccount", "db-agent-1"],
      ["rbac.authorization.k8s.io/v1", "Role", "db-agent-1"],
      ["rbac.authorization.k8s.io/v1", "RoleBinding", "db-agent-1"],
      ["v1", "Secret", "db-agent-1-state"],
    ];
    const left = () => kinds.filter(([v, k, n]) => op.mc.get(v, k, n, NS)).map(([, k, n]) => `${k}/${n}`);
    await drive("replica 1's node and children gone", async () => {
      return left().length === 0 && (await tagged()).length === 1 && statusNodes().length === 1;
    });
    console.log(`# scale-down: replica 1's node and children gone after ${Date.now() - t1} ms`);
    assert.deepEqual(
      (await tagged()).map((n) => ({ id: String(n.id), name: n.given_name })),
      [{ id: String(first.id), name: "shop-db" }],
    );
    assert.equal(replicaPod(1), undefined);
    assert.ok(sts(0), "replica 0 stays");
    assert.deepEqual(await world.net.containmentProblems(), []);
  });

  it("at most one pod per ordinal over the whole run: each agent pod was created after its predecessor exited", () => {
    const byName = new Map<string, RunningPod[]>();
    for (const p of pods.history.filter((h) => h.namespace === NS && h.controllerKind === "StatefulSet"))
      byName.set(p.name, [...(byName.get(p.name) ?? []), p]);
    assert.ok((byName.get("db-agent-0-0")?.length ?? 0) >= 3, "db-agent-0-0 was replaced twice");
    const exited = (p: RunningPod) =>
      p.containers.some((c) => c.alive)
        ? undefined
        : Math.max(...p.containers.map((c) => new Date(c.lastTerminated?.finishedAt ?? 0).getTime()));
    for (const [name, lives] of byName)
      for (let i = 1; i < lives.length; i++) {
        const before = exited(lives[i - 1]);
        assert.ok(
          before !== undefined && before <= lives[i].createdAt.getTime(),
          `${name}: pod ${i} before ${i - 1} exited`,
        );
      }
  });
});
