/**
 * The oldest tailscale image docs/OPERATIONS.md claims to support, booted for real: a TailnetProxyClass
 * points the agent pods of a TailnetEgress at `tailscale/tailscale:<tailscaleOldest>` (src/real-versions.json;
 * scripts/real-deps.sh builds that version's containerboot, tailscaled and tailscale next to the pinned
 * one), and the pod runner runs the pod the operator renders — unchanged, the same env, flags, volumes and
 * security context as for the pinned image — against the real Headscale of the pins:
 * - the pod's tailscaled is that version (its own "Program starting" line), registers with the key the
 *   operator minted, and Headscale tags its node with the egress tag;
 * - the bytes flow: a workload dials db-1:5432 through the agent (by MagicDNS name and by tailnet IP),
 *   and Ready=True is never reported while they do not.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parentObject } from "../fixtures/hooks.js";
import { requireBins, versions } from "./bins.js";
import { echoFrom } from "./echo.js";
import type { Host } from "./net.js";
import { API, agentPods, podRunnerFor, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import type { PodRunner } from "./pods.js";
import { DB_PORT, type RealWorld, startRealWorld, TAGS } from "./world.js";

const NS = "legacy";
const EGRESS_TAG = "tag:k8s-legacy-db";
const OLDEST_IMAGE = `tailscale/tailscale:${versions.tailscaleOldest}`;
type Cond = { type: string; status: string; reason: string; message: string };
type HsNode = { id: string | number; name: string; tags?: string[]; online?: boolean };

describe(`the oldest supported tailscale image (${OLDEST_IMAGE}) on the real tailnet`, {
  timeout: 600_000,
  concurrency: false,
}, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let client: Host;
  let db1Ip = "";
  const readyChecks: { flowed: boolean; detail: string }[] = [];

  before(async () => {
    requireBins(["containerbootOldest", "tailscaledOldest", "tailscaleOldest"]);
    world = await startRealWorld({ id: "oldest" });
    const base = tailnetSpec(world);
    op = await startOperator(world, {
      tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] }, allowedEgressTargets: [TAGS.db] },
    });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    client = await world.net.addHost("legacy-client");
    pods.addWorkload({ namespace: NS, name: "client", labels: { app: "client" }, host: client });
    db1Ip = (await world.peers.db1.ips())[0];
  });
  after(async () => {
    await pods?.close();
    await op?.close();
    await world?.close();
  });

  const egress = () => op.mc.get(API, "TailnetEgress", "db", NS);
  const cond = (type: string) =>
    ((egress()?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find((c) => c.type === type);
  const TARGETS = [
    { service: "postgres", port: DB_PORT },
    { service: "db-ip", port: DB_PORT },
  ];
  const allFlow = async () => {
    const got = await Promise.all(
      TARGETS.map(async (t) => {
        try {
          const addr = pods.serviceAddr(NS, t.service, t.port);
          return await echoFrom(client, addr.host, addr.port, `hi-${t.service}`);
        } catch (err) {
          return `error: ${(err as Error).message}`;
        }
      }),
    );
    return { ok: got.every((g, i) => g === `hi-${TARGETS[i].service}`), got };
  };

  it("an operator-rendered agent pod on the oldest image registers, is tagged, and passes traffic", async () => {
    op.mc.apply({
      apiVersion: API,
      kind: "TailnetProxyClass",
      metadata: { name: "oldest" },
      spec: {
        images: { tailscale: OLDEST_IMAGE },
      },
    });
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "db",
        {
          tailnetRef: { name: "home" },
          proxyClassName: "oldest",
          targets: [
            { name: "postgres", host: "db-1", ports: [{ port: DB_PORT }] },
            { name: "db-ip", host: db1Ip, ports: [{ port: DB_PORT }] },
          ],
        },
        { namespace: NS },
      ),
    );
    const deadline = Date.now() + 180_000;
    for (;;) {
      await pods.sync();
      pods.check();
      await op.mc.settle(6).catch(() => undefined);
      if (cond("Ready")?.status === "True") {
        const flow = await allFlow();
        readyChecks.push({ flowed: flow.ok, detail: JSON.stringify(flow.got) });
        break;
      }
      if (Date.now() > deadline) {
        const logs = agentPods(pods, NS, "db").map((p) => p.logs());
        throw new Error(`timed out waiting for Ready=True\n${JSON.stringify(egress()?.status)}\n${logs.join("\n")}`);
      }
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.deepEqual(
      readyChecks.filter((r) => !r.flowed),
      [],
      "Ready=True while a target did not answer through the agent",
    );

    const [pod] = agentPods(pods, NS, "db");
    const tailscale = pod.spec.containers.find((c) => c.name === "tailscale");
    assert.equal(tailscale?.image, OLDEST_IMAGE);
    // the process that runs is that version, not the pinned one the runner would map otherwise
    const version = versions.tailscaleOldest.replace(/\./g, "\\.");
    assert.match(pod.container("tailscale").allLogs(), new RegExp(`Program starting: ${version}\\b`));

    const nodes = await world.headscale.json<HsNode[]>(["nodes", "list"]);
    const mine = nodes.filter((n) => n.tags?.includes(EGRESS_TAG));
    assert.equal(mine.length, 1, JSON.stringify(nodes));
    assert.deepEqual(mine[0].tags, [EGRESS_TAG]);
    assert.equal(mine[0].online, true);
    assert.equal(cond("Registered")?.reason, "Registered");
    assert.equal(cond("TargetsReachable")?.reason, "Reachable");
    const flow = await allFlow();
    assert.ok(flow.ok, flow.got.join(" | "));
  });
});
