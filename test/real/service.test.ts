/**
 * Annotated Services in the real world (issue 19 item 1): annotating a Service
 * (`tailnet.internal/expose=true`) makes it reachable from the laptop through the real Headscale
 * 0.29.3 and tailscaled v1.102.5 — the DecoratorController attaches a TailnetIngress, whose agent pod the
 * pod runner runs — and the Service reports Ready only once the laptop's bytes flow. Removing the
 * annotation removes the exposure: the ingress's finalize deletes its node from the real Headscale and
 * the laptop can no longer reach it. A LoadBalancer Service of class tailnet.internal/tailnet (issue 26)
 * is exposed the same way, and the laptop reaches the backend at the very addresses its
 * status.loadBalancer.ingress (EXTERNAL-IP) lists, as the emulated Metacontroller writes them.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { agentHostname } from "../../src/kinds/shared/dns-tenancy.js";
import { bins } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { Host, RealProcess } from "./net.js";
import {
  API,
  agentPods,
  podRunnerFor,
  type RealOperator,
  socksEcho,
  startOperator,
  tailnetSpec,
  withUnreachable,
} from "./operator.js";
import { waitFor } from "./peers.js";
import type { PodRunner } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "monitoring";
const ECHO_PORT = 4000;
const HOST = "web-svc";
const T = "tailnet.internal";
const BACKEND = `require("node:net").createServer(s=>{s.on("error",()=>{});s.pipe(s)}).listen(${ECHO_PORT},"0.0.0.0",()=>console.log("echo up"));`;

describe("annotated Service on the real tailnet", { timeout: 900_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let web: Host;
  let backend: RealProcess;
  const readyChecks: { flowed: boolean; detail: string }[] = [];

  const service = (annotations: Record<string, string>) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web", namespace: NS, uid: "uid-svc-web", annotations },
    spec: { selector: { app: "web" }, ports: [{ name: "echo", port: ECHO_PORT }] },
  });
  const svc = () => op.mc.get("v1", "Service", "web", NS);
  const state = () => svc()?.metadata.labels?.[`${T}/expose-state`];

  before(async () => {
    world = await startRealWorld({ id: "service" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    web = await world.net.addHost("web");
    backend = web.spawn(bins.node, ["-e", BACKEND], { logName: "backend" });
    const deadline = Date.now() + 10_000;
    while (!backend.logs().includes("echo up")) {
      if (Date.now() > deadline) throw new Error(`backend did not start\n${backend.logs()}`);
      await sleep(50);
    }
    pods.addWorkload({ namespace: NS, name: "web", labels: { app: "web" }, host: web });
  });
  after(async () => {
    await pods?.close();
    await backend?.kill("SIGKILL");
    await op?.close();
    await world?.close();
  });

  /** The IPv4 the laptop's MagicDNS resolver answers for `name`, after Headscale serves the Tailnet's records file. */
  const byRecord = async (name: string): Promise<string> => {
    const records = op.mc.list("ConfigMap").find((c) => c.metadata.name === "tailnet-home-dns-records");
    await world.headscale.writeExtraRecords(String(records?.data?.["records.json"] ?? "[]\n"));
    const query = () => world.peers.laptop.tailscale(["dns", "query", name, "A"]);
    const answer = await waitFor(
      `the laptop resolves ${name}`,
      // a tailnet IPv4 in the answer (never the resolver's own 100.100.100.100)
      async () => (await query()).match(/\b100\.\d+\.\d+\.\d+\b/g)?.find((ip) => ip !== "100.100.100.100"),
      30_000,
      query,
    );
    return answer;
  };
  const nodeIp = async () => {
    const peers = Object.values((await world.peers.laptop.status()).Peer ?? {});
    return peers.find((p) => p.HostName === agentHostname(HOST, NS))?.TailscaleIPs?.find((ip) => !ip.includes(":"));
  };
  const flows = async (msg: string) => {
    const ip = await nodeIp();
    return ip ? socksEcho(world.peers.laptop, ip, ECHO_PORT, msg) : `error: ${HOST} not in the laptop's netmap`;
  };
  const describeWorld = () =>
    [
      `service: ${JSON.stringify(svc()?.metadata)}`,
      `ingress: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "web", NS)?.status)}`,
      `events: ${op.events.events.map((e) => `${e.regarding.kind}/${e.regarding.metadata.name} ${e.reason}: ${e.message}`).join(" | ")}`,
      `hook errors: ${op.failures()}`,
      ...agentPods(pods, NS, "web").map((p) => p.logs()),
    ].join("\n");
  const drive = async (what: string, done: () => boolean | Promise<boolean>, ms = 180_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await pods.sync();
      pods.check();
      await op.mc.settle(8).catch(() => undefined);
      if (state() === "Ready") {
        // Headscale hands the new node to the laptop's netmap asynchronously: allow 15 s
        const until = Date.now() + 15_000;
        let got = await flows("probe");
        while (got !== "probe" && Date.now() < until) {
          await sleep(500);
          got = await flows("probe");
        }
        readyChecks.push({ flowed: got === "probe", detail: got });
      }
      if (await done()) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${describeWorld()}`);
      await sleep(300);
    }
  };

  it("kubectl annotate svc web tailnet.internal/expose=true: reachable from the laptop, Ready on the Service", async () => {
    op.mc.apply(service({ [`${T}/expose`]: "true", [`${T}/hostname`]: HOST, [`${T}/allow-from`]: "group:eng" }));
    const t0 = Date.now();
    await drive("the Service's expose-state Ready", () => state() === "Ready");
    console.log(`# annotated Service Ready after ${Date.now() - t0} ms`);
    assert.deepEqual(
      readyChecks.filter((r) => !r.flowed),
      [],
      "Ready on the Service while the laptop's bytes did not flow",
    );
    assert.equal(await flows("hello-by-annotation"), "hello-by-annotation");
    // by name: the agent's node is web-svc-monitoring (agentHostname); web-svc.<baseDomain> is the Tailnet's
    // record, answered by the laptop's MagicDNS resolver once Headscale serves the records file
    // (tailscaled's SOCKS5 dialer ignores typed extra records: tailscale ipn/ipnlocal/node_backend.go)
    const agentIp = await byRecord(`${HOST}.${BASE_DOMAIN}`);
    assert.equal(await socksEcho(world.peers.laptop, agentIp, ECHO_PORT, "by-name"), "by-name", "by its record's name");
    assert.equal(svc()?.metadata.annotations?.[`${T}/dns-name`], `${HOST}.${BASE_DOMAIN}`);
    assert.deepEqual(op.reasons("TailnetIngress", "web", NS).Ready, "Ready");
  });

  it("a LoadBalancer Service of class tailnet.internal/tailnet: its EXTERNAL-IP addresses are the node's, the laptop's bytes reach the backend there", async () => {
    const LB_HOST = "lb-svc";
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "shop",
        namespace: NS,
        uid: "uid-svc-shop",
        annotations: { [`${T}/hostname`]: LB_HOST, [`${T}/allow-from`]: "group:eng" },
      },
      spec: {
        type: "LoadBalancer",
        loadBalancerClass: `${T}/tailnet`,
        selector: { app: "web" },
        ports: [{ name: "echo", port: ECHO_PORT }],
      },
    });
    const shop = () => op.mc.get("v1", "Service", "shop", NS);
    const ingress = () =>
      (shop()?.status as { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } | undefined)
        ?.loadBalancer?.ingress ?? [];
    const t0 = Date.now();
    const deadline = t0 + 180_000;
    while (!(shop()?.metadata.labels?.[`${T}/expose-state`] === "Ready" && ingress().length > 0)) {
      if (Date.now() > deadline) {
        throw new Error(
          `the LoadBalancer Service was not Ready with addresses\n${JSON.stringify(shop())}\n${describeWorld()}`,
        );
      }
      await pods.sync();
      pods.check();
      await op.mc.settle(8).catch(() => undefined);
      await sleep(300);
    }
    console.log(`# LoadBalancer Service Ready with status.loadBalancer after ${Date.now() - t0} ms`);
    const ips = ingress().flatMap((e) => (e.ip ? [e.ip] : []));
    const peer = Object.values((await world.peers.laptop.status()).Peer ?? {}).find(
      (p) => p.HostName === agentHostname(LB_HOST, NS),
    );
    assert.ok(peer, "the laptop sees the LoadBalancer's node");
    assert.deepEqual(
      ips,
      [...(peer.TailscaleIPs ?? [])].sort(
        (a, b) => Number(a.includes(":")) - Number(b.includes(":")) || a.localeCompare(b),
      ),
      "EXTERNAL-IP lists the node's tailnet addresses, IPv4 first",
    );
    assert.deepEqual(ingress().at(-1), { hostname: `${LB_HOST}.${BASE_DOMAIN}` });
    const v4 = ips.find((ip) => !ip.includes(":"));
    assert.ok(v4);
    // Headscale hands the new node to the laptop's netmap asynchronously: allow 15 s
    const until = Date.now() + 15_000;
    let got = await socksEcho(world.peers.laptop, v4, ECHO_PORT, "to-external-ip");
    while (got !== "to-external-ip" && Date.now() < until) {
      await sleep(500);
      got = await socksEcho(world.peers.laptop, v4, ECHO_PORT, "to-external-ip");
    }
    assert.equal(got, "to-external-ip", "bytes to the EXTERNAL-IP reach the backend");
    const name = ingress().at(-1)?.hostname ?? "";
    assert.equal(await byRecord(name), v4, "its name answers the EXTERNAL-IP");
    assert.equal(await socksEcho(world.peers.laptop, v4, ECHO_PORT, "to-lb-name"), "to-lb-name", "and by its name");
  });

  it("kubectl annotate svc web tailnet.internal/expose-: the node leaves the real Headscale, the laptop cannot reach it", async () => {
    const nodes = async () =>
      ((await world.headscale.json<{ tags?: string[] }[] | null>(["nodes", "list"])) ?? []).filter((n) =>
        n.tags?.includes("tag:k8s-monitoring-web"),
      );
    const ip = await nodeIp();
    assert.ok(ip, "the laptop sees the node");
    assert.equal((await nodes()).length, 1, "the agent node is registered");
    op.mc.apply(service({ [`${T}/hostname`]: HOST, [`${T}/allow-from`]: "group:eng" }));
    await drive(
      "the exposure removed",
      async () => !op.mc.get(API, "TailnetIngress", "web", NS) && (await nodes()).length === 0,
    );
    assert.equal(state(), undefined, "the state label is gone");
    assert.ok(svc(), "the Service stays");
    // a dial to an address the laptop's netmap no longer has falls back to the OS: refused uncounted
    const deadline = Date.now() + 20_000;
    const dial = () =>
      withUnreachable(world.peers.laptop, ["100.64.0.0/10"], () =>
        socksEcho(world.peers.laptop, ip, ECHO_PORT, "still-there?"),
      );
    let got = await dial();
    while (got === "still-there?" && Date.now() < deadline) {
      await sleep(500);
      got = await dial();
    }
    assert.match(got, /^error: /, "the laptop no longer reaches the Service");
  });
});
