/**
 * An HA TailnetIngress rolls a new tailscale image one replica at a time on the real tailnet (issue 32; the
 * rule of src/kinds/shared/staged-rollout.ts): replicas 2 on the oldest supported tailscale (through a
 * TailnetProxyClass), then the class names the pinned one. The pod runner's StatefulSet controller
 * (statefulsets.ts) replaces a pod only after the old one exited, and reports a StatefulSet settled only once its
 * new pod passes /readyz; the operator answers the new template to the second replica only then. Measured at
 * every step of the rollout: at most one replica without a ready pod, and the laptop's bytes reach the backend
 * through a node of the ingress; afterwards both replicas are the nodes they were (same Headscale node ids).
 */
import assert from "node:assert/strict";
import { isIPv4 } from "node:net";
import { after, before, describe, it } from "node:test";
import { type K8sObject, objectsOf } from "../../src/k8s/objects.js";
import { settled } from "../../src/kinds/shared/staged-rollout.js";
import { stampOf } from "../../src/kinds/shared/template-hash.js";
import { parentObject } from "../fixtures/hooks.js";
import { bins, requireBins, versions } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { Host, RealProcess } from "./net.js";
import { API, agentPods, podRunnerFor, type RealOperator, socksEcho, startOperator, tailnetSpec } from "./operator.js";
import type { PodRunner } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "rollout";
const ECHO_PORT = 4000;
const OLD = `tailscale/tailscale:${versions.tailscaleOldest}`;
const NEW = `tailscale/tailscale:${versions.tailscale}`;
const BACKEND = `require("node:net").createServer(s=>{s.on("error",()=>{});s.pipe(s)}).listen(${ECHO_PORT},"0.0.0.0",()=>console.log("echo up"));`;
type Cond = { type: string; status: string; reason: string; message: string };
type Template = { metadata?: unknown; spec: { containers: { name: string; image: string }[] } };

const proxyClass = (image: string) => ({
  apiVersion: API,
  kind: "TailnetProxyClass",
  metadata: { name: "roll" },
  spec: { images: { tailscale: image } },
});

describe("HA TailnetIngress rollout on the real tailnet", { timeout: 900_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let web: Host;
  let backend: RealProcess;

  before(async () => {
    requireBins(["containerbootOldest", "tailscaledOldest", "tailscaleOldest"]);
    world = await startRealWorld({ id: "ingress-roll" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    web = await world.net.addHost("roll-web");
    backend = web.spawn(bins.node, ["-e", BACKEND], { logName: "backend" });
    const deadline = Date.now() + 10_000;
    while (!backend.logs().includes("echo up")) {
      if (Date.now() > deadline) throw new Error(`backend did not start\n${backend.logs()}`);
      await sleep(50);
    }
    pods.addWorkload({ namespace: NS, name: "web", labels: { app: "web" }, host: web });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: NS },
      spec: { selector: { app: "web" }, ports: [{ name: "echo", port: ECHO_PORT }] },
    });
    op.mc.apply(proxyClass(OLD) as never);
  });
  after(async () => {
    await pods?.close();
    await backend?.kill("SIGKILL");
    await op?.close();
    await world?.close();
  });

  const parent = () => op.mc.get(API, "TailnetIngress", "roll", NS);
  const ready = () =>
    ((parent()?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find((c) => c.type === "Ready");
  const nodes = () =>
    (parent()?.status as { nodes?: { replica: number; id: string; addresses: string[] }[] } | undefined)?.nodes ?? [];
  const sts = (i: number) => op.mc.get("apps/v1", "StatefulSet", `roll-agent-${i}`, NS);
  const imageOf = (o: K8sObject | undefined) =>
    ((o?.spec as { template?: Template } | undefined)?.template?.spec.containers ?? []).find(
      (c) => c.name === "tailscale",
    )?.image;
  /** Replicas with no ready pod now. */
  const down = () =>
    [0, 1].filter((i) => !agentPods(pods, NS, "roll").some((p) => p.deployment.endsWith(`-${i}`) && p.ready));
  const describeWorld = () =>
    [
      `roll: ${JSON.stringify(parent()?.status)}`,
      `statefulsets: ${JSON.stringify([0, 1].map((i) => sts(i)?.status))}`,
      `hook errors: ${op.failures()}`,
      ...agentPods(pods, NS, "roll").map((p) => p.logs()),
    ].join("\n");
  const step = async () => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
  };
  const drive = async (what: string, done: () => boolean, each?: () => Promise<void>, ms = 240_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await step();
      await each?.();
      if (done()) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${describeWorld()}`);
      await sleep(300);
    }
  };
  /** The laptop's bytes reach the backend through one of the ingress's nodes (each tried once). */
  const flows = async () => {
    const tried: string[] = [];
    for (const n of nodes()) {
      const ip = n.addresses.find((a) => isIPv4(a));
      if (!ip) continue;
      const got = await socksEcho(world.peers.laptop, ip, ECHO_PORT, "roll");
      if (got === "roll") return { ok: true, detail: `through replica ${n.replica}` };
      tried.push(`${n.replica}: ${got}`);
    }
    return { ok: false, detail: tried.join("; ") || "no node" };
  };

  it("replicas 2: the new image reaches replica 0, then 1; one replica down at most; the nodes stay", async () => {
    op.mc.apply(
      parentObject(
        "TailnetIngress",
        "roll",
        {
          tailnetRef: { name: "home" },
          proxyClassName: "roll",
          allowFrom: ["group:eng"],
          hostname: "roll",
          mode: "tcp",
          replicas: 2,
          exposes: [{ name: "echo", port: ECHO_PORT, backend: { service: "web", port: ECHO_PORT } }],
        },
        { namespace: NS },
      ),
    );
    const serving = () => ready()?.message.startsWith(`serving echo on roll.`) && nodes().length === 2;
    await drive("both replicas serving on the old image", () => !!serving() && down().length === 0);
    const before = nodes().map((n) => `${n.replica}:${n.id}`);
    assert.deepEqual([imageOf(sts(0)), imageOf(sts(1))], [OLD, OLD]);

    const from = op.mc.calls.length;
    const t0 = Date.now();
    let maxDown = 0;
    const outages: string[] = [];
    let steps = 0;
    op.mc.apply(proxyClass(NEW) as never);
    await drive(
      "both replicas on the new image, ready",
      () =>
        [0, 1].every((i) => imageOf(sts(i)) === NEW && settled(sts(i) as K8sObject)) &&
        down().length === 0 &&
        ready()?.message === `serving echo on roll.${BASE_DOMAIN} (2 nodes online)`,
      async () => {
        steps++;
        maxDown = Math.max(maxDown, down().length);
        const r = await flows();
        if (!r.ok) outages.push(`${Date.now() - t0} ms: ${r.detail}`);
      },
    );
    console.log(
      `# rollout of 2 replicas: ${Date.now() - t0} ms, ${steps} steps, at most ${maxDown} replica down, ${outages.length} step(s) without flow`,
    );
    assert.ok(maxDown <= 1, `two replicas were down at once\n${describeWorld()}`);
    assert.deepEqual(outages, [], "the laptop's bytes flowed through a node at every step");
    assert.deepEqual(
      nodes().map((n) => `${n.replica}:${n.id}`),
      before,
      "each replica is the node it was",
    );
    // what the hooks answered, against what they observed: one replica's template at a time, in order
    const changed = op.mc.calls
      .slice(from)
      .filter((c) => c.hook === "sync" && c.kind === "TailnetIngress" && c.code === 200)
      .flatMap((c) => {
        const observed = objectsOf((c.body as { children: never }).children, "apps/v1", "StatefulSet");
        const answered = (c.response as { children: K8sObject[] }).children.filter((o) => o.kind === "StatefulSet");
        const tpl = (o: K8sObject) => stampOf((o.spec as { template?: unknown }).template);
        const moved = answered.filter((a) => {
          const live = observed.find((o) => o.metadata.name === a.metadata.name);
          return live && tpl(live) !== tpl(a);
        });
        const others = moved.some((a) => observed.some((o) => o.metadata.name !== a.metadata.name && !settled(o)));
        assert.ok(moved.length <= 1 && !others, `an answer moved ${moved.map((m) => m.metadata.name)} at once`);
        return moved.map((m) => m.metadata.name);
      });
    assert.deepEqual(changed, ["roll-agent-0", "roll-agent-1"]);
    assert.deepEqual(op.failures(), "");
  });
});
