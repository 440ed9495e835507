/**
 * TailnetEgress in the real world (issue 14 § Egress, § Restarts): the real hook server and the
 * Metacontroller loop return the agent's children, and the pod runner (pods.ts) runs the agent pod
 * the replica's StatefulSet describes — containerboot + tailscaled + tailscale v1.102.5 and the operator's own
 * agent — in its own namespace on the test bridge, against the real Headscale 0.29.3. A workload
 * process in a namespace of its own dials the target Services (pod IP : target port, no kube-proxy):
 * - db-1:5432 by MagicDNS name and by its tailnet IP, 192.168.10.5 through the real subnet router;
 * - Ready=True is never reported while the bytes do not flow (checked at every step of the loop);
 * - a target outside allowedEgressTargets gets no grant and the real packet filter refuses it (the
 *   same target answers the laptop, whom the base policy lets in);
 * - killing the agent's tailscaled: the tailscale container comes back (the pod with it), the agent
 *   registers again, the bytes flow again, and Headscale holds one online node of the tag;
 * - a rollout rolls the replica's StatefulSet pod, which comes back as the same node (issue 32: state Secret);
 * - containment: no pod asked the resolver for a name outside the test world.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parentObject } from "../fixtures/hooks.js";
import { echoFrom, startEcho } from "./echo.js";
import type { Host, RealProcess } from "./net.js";
import { API, OPS, podRunnerFor, type RealOperator, socksEcho, startOperator, tailnetSpec } from "./operator.js";
import { waitFor } from "./peers.js";
import type { PodRunner } from "./pods.js";
import { DB_PORT, type RealWorld, SITE_ECHO_PORT, SITE_HOST, SITE_PREFIX, startRealWorld, TAGS } from "./world.js";

const NS = "shop";
const EGRESS_TAG = "tag:k8s-shop-db";
type Cond = { type: string; status: string; reason: string; message: string };
type HsNode = { id: string | number; name: string; given_name?: string; tags?: string[]; online?: boolean };

describe("TailnetEgress on the real tailnet", { timeout: 900_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let client: Host;
  let outsiderEcho: RealProcess | undefined;
  let db1Ip = "";
  /** Every Ready=True the loop reported, with whether the bytes flowed at that moment. */
  const readyChecks: { at: string; flowed: boolean; detail: string }[] = [];

  before(async () => {
    world = await startRealWorld({ id: "egress" });
    const base = tailnetSpec(world);
    op = await startOperator(world, {
      tailnet: {
        policy: { ...base.policy, tagOwners: ["group:eng"] },
        allowedEgressTargets: [TAGS.db, SITE_PREFIX],
      },
    });
    // Deployments are Available only when the runner's real pods are ready.
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    client = await world.net.addHost("shop-client");
    pods.addWorkload({ namespace: NS, name: "client", labels: { app: "client" }, host: client });
    // The refused target listens too: only the packet filter can keep the agent out.
    outsiderEcho = await startEcho(world.peers.outsider.host, DB_PORT);
    db1Ip = (await world.peers.db1.ips())[0];
    op.mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        {
          tailnetRef: { name: "home" },
          prefixes: [SITE_PREFIX],
          advertiserTags: [TAGS.router],
          allowFrom: ["group:eng"],
        },
        { namespace: "net" },
      ),
    );
  });
  after(async () => {
    await pods?.close();
    await outsiderEcho?.kill("SIGKILL");
    await op?.close();
    await world?.close();
  });

  const conditions = (name: string): Cond[] =>
    (op.mc.get(API, "TailnetEgress", name, NS)?.status as { conditions?: Cond[] } | undefined)?.conditions ?? [];
  const cond = (name: string, type: string) => conditions(name).find((c) => c.type === type);
  const describeWorld = (name: string) => async () =>
    [
      `status: ${JSON.stringify(op.mc.get(API, "TailnetEgress", name, NS)?.status)}`,
      `tailnet: ${JSON.stringify(op.reasons("Tailnet", "home"))} ${op.condition("Tailnet", "home", "PolicyApplied")?.message}`,
      `hook errors: ${op.failures()}`,
      ...pods.podsOf(NS, `${name}-agent-0`, "StatefulSet").map((p) => p.logs()),
    ].join("\n");

  /** Through the target Service as a workload pod would: the agent pod's IP and the Service's target port. */
  const viaService = async (service: string, port: number, msg: string) => {
    try {
      const addr = pods.serviceAddr(NS, service, port);
      return await echoFrom(client, addr.host, addr.port, msg);
    } catch (err) {
      return `error: ${(err as Error).message}`;
    }
  };
  const TARGETS = [
    { service: "postgres", port: DB_PORT },
    { service: "db-ip", port: DB_PORT },
    { service: "lan", port: SITE_ECHO_PORT },
  ];
  const allFlow = async () => {
    const got = await Promise.all(TARGETS.map((t) => viaService(t.service, t.port, `hi-${t.service}`)));
    return { ok: got.every((g, i) => g === `hi-${TARGETS[i].service}`), got };
  };

  /** One round of the cluster: the kubelet pass, then Metacontroller until quiet; Ready=True checked against the bytes. */
  const step = async (egress: string) => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
    if (cond(egress, "Ready")?.status === "True") {
      const flow = await allFlow();
      readyChecks.push({ at: new Date().toISOString(), flowed: flow.ok, detail: JSON.stringify(flow.got) });
    }
  };

  /** Steps the cluster until `done` holds; a pod failure or hook error ends it at once (no waiting out the clock). */
  const drive = async (what: string, egress: string, done: () => boolean | Promise<boolean>, ms = 180_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await step(egress);
      if (await done()) return;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${ms} ms waiting for ${what}\n${await describeWorld(egress)()}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  };

  it("db-1 by MagicDNS name and by IP, 192.168.10.5 through the router: Ready only when the bytes flow", async () => {
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "db",
        {
          tailnetRef: { name: "home" },
          targets: [
            { name: "postgres", host: "db-1", ports: [{ port: DB_PORT }] },
            { name: "db-ip", host: db1Ip, ports: [{ port: DB_PORT }] },
            { name: "lan", host: SITE_HOST, ports: [{ port: SITE_ECHO_PORT }] },
          ],
        },
        { namespace: NS },
      ),
    );
    const t0 = Date.now();
    await drive("TailnetEgress db Ready=True", "db", () => cond("db", "Ready")?.status === "True");
    console.log(`# egress db Ready after ${Date.now() - t0} ms`);
    assert.ok(readyChecks.length > 0);
    assert.deepEqual(
      readyChecks.filter((r) => !r.flowed),
      [],
      "Ready=True while a target did not answer through the agent",
    );
    const flow = await allFlow();
    assert.ok(flow.ok, flow.got.join(" | "));
    assert.deepEqual(Object.fromEntries(conditions("db").map((c) => [c.type, c.reason])), {
      TagKnown: "Known",
      Registered: "Registered",
      RoutesGranted: "RoutesGranted",
      TargetsReachable: "Reachable",
      ServiceConflict: "NoConflict",
      NodeIdentity: "Stable",
      Ready: "Ready",
    });
    // the agent node is the one the key tagged, and it carries nothing else
    const nodes = await world.headscale.json<HsNode[]>(["nodes", "list"]);
    const mine = nodes.filter((n) => n.tags?.includes(EGRESS_TAG));
    assert.equal(mine.length, 1, JSON.stringify(nodes));
    assert.deepEqual(mine[0].tags, [EGRESS_TAG]);
  });

  it("a target outside allowedEgressTargets is refused by the real packet filter", async () => {
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "stray",
        { tailnetRef: { name: "home" }, targets: [{ name: "mallory", host: "outsider", ports: [{ port: DB_PORT }] }] },
        { namespace: NS },
      ),
    );
    await drive("the stray egress's agent up and its target judged", "stray", () => {
      const pod = pods.podsOf(NS, "stray-agent-0", "StatefulSet")[0];
      const targets = (op.mc.get(API, "TailnetEgress", "stray", NS)?.status as { targets?: { reason?: string }[] })
        ?.targets;
      // judged: a reason other than ProbeFailed (the agent's first probe round may not have run yet)
      const reason = targets?.[0]?.reason;
      return !!pod?.ready && cond("stray", "Registered")?.status === "True" && !!reason && reason !== "ProbeFailed";
    });
    const status = op.mc.get(API, "TailnetEgress", "stray", NS)?.status as {
      targets: { name: string; reason: string }[];
    };
    assert.equal(status.targets[0].reason, "NoGrant", JSON.stringify(status));
    assert.notEqual(cond("stray", "Ready")?.status, "True");
    // the bytes do not flow through the agent — and the outsider does listen: the laptop gets through
    assert.match(await viaService("mallory", DB_PORT, "let-me-in"), /^error: |^$/);
    assert.equal(await socksEcho(world.peers.laptop, "outsider", DB_PORT, "eng-ok"), "eng-ok");
    // the refused egress did not disturb the allowed one
    assert.ok((await allFlow()).ok);
    op.mc.delete(API, "TailnetEgress", "stray", NS);
    await step("db");
    await step("db");
  });

  it("killing the agent's tailscaled: the container comes back, registers again, one node, bytes flow", async () => {
    const [pod] = pods.podsOf(NS, "db-agent-0", "StatefulSet");
    assert.ok(pod, "the db agent pod runs");
    const ts = pod.container("tailscale");
    const daemon = ts.processes().find((p) => p.comm === "tailscaled");
    assert.ok(daemon, `tailscaled runs in the tailscale container: ${JSON.stringify(ts.processes())}`);
    const restartsBefore = ts.restartCount;
    pods.expectRestarts(pod, "tailscale", 1);
    const checksBefore = readyChecks.length;
    const killedAt = Date.now();
    process.kill(daemon.pid, "SIGKILL");
    await drive(
      "the tailscale container restarted and the egress Ready again",
      "db",
      () => ts.restartCount > restartsBefore && ts.running && cond("db", "Ready")?.status === "True",
    );
    const flow = await waitFor("bytes through the restarted agent", async () => {
      const f = await allFlow();
      return f.ok ? f : undefined;
    });
    assert.ok(flow.ok);
    assert.equal(pods.podsOf(NS, "db-agent-0", "StatefulSet")[0], pod, "the same pod: only the container restarted");
    const nodes = await world.headscale.json<HsNode[]>(["nodes", "list"]);
    const mine = nodes.filter((n) => n.tags?.includes(EGRESS_TAG));
    assert.equal(mine.filter((n) => n.online).length, 1, `one online node of ${EGRESS_TAG}: ${JSON.stringify(mine)}`);
    assert.equal(mine.length, 1, `no superseded node lingers: ${JSON.stringify(mine)}`);
    assert.equal(mine[0].given_name ?? mine[0].name, "shop-db", "the node keeps its name (no shop-db-1)");
    // While the container restarts, status may lag by the agent's probe interval (15 s) plus a sync:
    // the restarted tailscale container has no readiness probe, so the pod is Ready again before
    // tailscaled is back, and the agent's /status is from its last probe round. Never longer.
    const stale = readyChecks.slice(checksBefore).filter((r) => !r.flowed);
    assert.deepEqual(
      stale.filter((r) => Date.parse(r.at) - killedAt > 20_000),
      [],
      "Ready=True without bytes flowing longer than a probe interval after the kill",
    );
  });

  it("a rollout (changed spec) replaces the pod: the same node of the tag afterwards, bytes flow through the new pod", async () => {
    const [oldPod] = pods.podsOf(NS, "db-agent-0", "StatefulSet");
    const before = (await world.headscale.json<HsNode[]>(["nodes", "list"])).filter((n) =>
      n.tags?.includes(EGRESS_TAG),
    );
    assert.equal(before.length, 1, JSON.stringify(before));
    const nodeBefore = String(before[0].id);
    const egress = op.mc.get(API, "TailnetEgress", "db", NS);
    assert.ok(egress && oldPod);
    const spec = structuredClone(egress.spec) as { targets: unknown[] };
    spec.targets.push({ name: "db-fqdn", host: "db-1.ts.test", ports: [{ port: DB_PORT }] });
    op.mc.apply({ ...egress, spec });
    await drive(
      "the new pod serving and the old one gone",
      "db",
      () => {
        const now = pods.podsOf(NS, "db-agent-0", "StatefulSet");
        return now.length === 1 && now[0] !== oldPod && now[0].ready && cond("db", "Ready")?.status === "True";
      },
      180_000,
    );
    const flow = await waitFor("bytes through the new pod", async () => {
      const f = await allFlow();
      return f.ok ? f : undefined;
    });
    assert.ok(flow.ok);
    // issue 32: the replica keeps its state Secret, so the new pod logs in as the same node (no new node, no -1)
    const nodes = (await world.headscale.json<HsNode[]>(["nodes", "list"])).filter((n) => n.tags?.includes(EGRESS_TAG));
    assert.deepEqual(
      nodes.map((n) => ({ id: String(n.id), name: n.given_name ?? n.name, online: n.online })),
      [{ id: nodeBefore, name: "shop-db", online: true }],
    );
  });

  it("a TailnetProxyClass rolls the agent pod: the new pod carries it, registers and the bytes flow", async () => {
    const [oldPod] = pods.podsOf(NS, "db-agent-0", "StatefulSet");
    const egress = op.mc.get(API, "TailnetEgress", "db", NS);
    assert.ok(egress && oldPod);
    op.mc.apply({
      apiVersion: API,
      kind: "TailnetProxyClass",
      metadata: { name: "edge" },
      spec: {
        resources: { requests: { cpu: "50m", memory: "64Mi" }, limits: { memory: "512Mi" } },
        podLabels: { team: "net" },
      },
    });
    op.mc.apply({ ...egress, spec: { ...(egress.spec as object), proxyClassName: "edge" } });
    await drive(
      "the pod with the class serving and the old one gone",
      "db",
      () => {
        const now = pods.podsOf(NS, "db-agent-0", "StatefulSet");
        return now.length === 1 && now[0] !== oldPod && now[0].ready && cond("db", "Ready")?.status === "True";
      },
      180_000,
    );
    const [pod] = pods.podsOf(NS, "db-agent-0", "StatefulSet");
    assert.equal(pod.labels.team, "net");
    const agent = pod.spec.containers.find((c) => c.name === "agent");
    // the heap cap follows the class's memory limit: the real agent process runs with it
    assert.deepEqual(
      agent?.env?.find((e) => e.name === "NODE_OPTIONS"),
      { name: "NODE_OPTIONS", value: "--max-old-space-size=256" },
    );
    const flow = await waitFor("bytes through the pod with the class", async () => {
      const f = await allFlow();
      return f.ok ? f : undefined;
    });
    assert.ok(flow.ok);
  });

  it("containment: no pod asked for a name outside the test world", async () => {
    const outside = pods
      .unansweredQueries()
      // single labels and cluster names are the search path at work; a dotted name elsewhere is the world outside
      .filter((q) => q.name.includes(".") && !/(^|\.)cluster\.local$|\.svc$/.test(q.name))
      .map((q) => `${q.from} ${q.name}`);
    assert.deepEqual([...new Set(outside)], []);
    assert.ok(op.mc.get("v1", "Secret", "headscale-ca", OPS));
  });
});
