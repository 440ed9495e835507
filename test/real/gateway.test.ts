/**
 * TailnetGateway in the real world (issue 14 § Gateway, § Restarts): the hook server returns the
 * gateway's children through the Metacontroller loop and the pod runner (pods.ts) runs its pod —
 * containerboot v1.102.5 as a userspace subnet router and CoreDNS 1.14.7 serving the derived zone —
 * against the real Headscale 0.29.3.
 *
 * How the test network stands in for a cluster:
 * - the gateway advertises the Service network 10.96.0.0/12 (the emulator hands out ClusterIPs
 *   from it), exactly as on a cluster whose Service CIDR is that;
 * - there is no kube-proxy, so the test plays its part for the one Service the tailnet reaches: the
 *   DNS Service's ClusterIP is put on the gateway pod's loopback and a small forwarder there maps
 *   ClusterIP:53 (UDP and TCP) to the pod's CoreDNS port (targetPort 1053) — what kube-proxy's
 *   DNAT does on the node for every packet the pod sends to the ClusterIP. The gateway's userspace
 *   netstack dials the ClusterIP from the pod's network namespace, as it would on the node;
 * - "the cluster DNS" CoreDNS forwards cluster names to is the runner's DNS stub (the pods'
 *   /etc/resolv.conf nameserver): it answers Service names with their pod's IP;
 * - the TailnetEgress the derived zone reads is data only here (its hook stubbed, no agent pod: the
 *   egress path is test/real/egress.test.ts); its target Service carries the egress-target label and
 *   a ClusterIP, as the egress kind's Service child does.
 * The laptop (alice, group:eng, --accept-routes) asks the DNS Service's ClusterIP over UDP through
 * its tailscaled's SOCKS5 UDP ASSOCIATE, i.e. over WireGuard to the gateway's advertised route.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { EGRESS_TARGET_LABEL } from "../../src/k8s/labels.js";
import { parentObject } from "../fixtures/hooks.js";
import { bins } from "./bins.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { RealProcess } from "./net.js";
import {
  API,
  listRoutes,
  podRunnerFor,
  type RealOperator,
  socksDns,
  socksKnock,
  startOperator,
  tailnetSpec,
  withUnreachable,
} from "./operator.js";
import { waitFor } from "./peers.js";
import type { PodRunner, RunningPod } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const run = promisify(execFile);
const NS = "infra";
const GW = "gw";
/** Replica 0's StatefulSet (issue 32: one StatefulSet of one pod per replica). */
const STS = "gw-gateway-0";
const GW_TAG = "tag:k8s-infra-gw";
const GW_ROUTE = "10.96.0.0/12";
/** ClusterIP of the egress target Service the derived zone points db-1 at. */
const DB_SERVICE_IP = "10.96.0.200";
const TENANT_SERVICE_IP = "10.96.0.201";
const DB_NAME = `db-1.${BASE_DOMAIN}`;

type HsNode = { id: string | number; given_name?: string; tags?: string[]; online?: boolean; ip_addresses?: string[] };

/** kube-proxy's part for one Service: ClusterIP:port (UDP + TCP) → backend:targetPort, in the pod's netns. */
const FORWARDER = `const dgram=require("node:dgram"),net=require("node:net");
const [vip,port,to,toPort]=process.argv.slice(1);const P=Number(port),T=Number(toPort);
const u=dgram.createSocket("udp4");u.on("message",(m,r)=>{const c=dgram.createSocket("udp4");
const t=setTimeout(()=>c.close(),5000);c.on("message",a=>{u.send(a,r.port,r.address);clearTimeout(t);c.close()});c.send(m,T,to)});
u.bind(P,vip,()=>{net.createServer(s=>{const b=net.connect(T,to);s.pipe(b).pipe(s);s.on("error",()=>b.destroy());
b.on("error",()=>s.destroy())}).listen(P,vip,()=>console.log("forwarding "+vip+":"+P+" to "+to+":"+T))});`;

describe("TailnetGateway on the real tailnet", { timeout: 900_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let forwarder: RealProcess | undefined;

  before(async () => {
    world = await startRealWorld({ id: "gateway" });
    const base = tailnetSpec(world);
    op = await startOperator(world, {
      tailnet: {
        policy: { ...base.policy, tagOwners: ["group:eng"] },
        dns: { ...base.dns, splitDNS: { domains: ["svc.cluster.local"] } },
      },
      stubKinds: ["egress"],
    });
    // Deployments are Available only when the runner's real pods are ready.
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
    // the egress's own Service: Metacontroller makes it with the egress as its controller (shared/zone-owners.ts)
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
    // Issue 31 item 3, the attack: a tenant's older egress naming db-1 too, and a Service of its own making
    // (labelled as an egress target, no controller) that would send every namespace's db-1 to its pod.
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "steal",
        { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: DB_NAME, ports: [{ port: 5432 }] }] },
        { namespace: "tenant", uid: "uid-tenant-steal", creationTimestamp: "2026-10-01T00:00:00Z" },
      ),
    );
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "pg", namespace: "tenant", labels: { [EGRESS_TARGET_LABEL]: "true" } },
      spec: { clusterIP: TENANT_SERVICE_IP, selector: { app: "tenant" }, ports: [{ port: 5432 }] },
    });
    op.mc.apply(
      parentObject(
        "TailnetGateway",
        GW,
        { tailnetRef: { name: "home" }, hostname: "cluster-gw", routes: [GW_ROUTE] },
        { namespace: NS },
      ),
    );
  });
  after(async () => {
    await forwarder?.kill("SIGKILL");
    await pods?.close();
    await op?.close();
    await world?.close();
  });

  const status = () => op.mc.get(API, "TailnetGateway", GW, NS)?.status as Record<string, unknown> | undefined;
  const reasons = () => op.reasons("TailnetGateway", GW, NS);
  const dnsServiceIp = () =>
    (op.mc.get("v1", "Service", `${GW}-dns`, NS)?.spec as { clusterIP?: string } | undefined)?.clusterIP;
  const gatewayPod = (): RunningPod => {
    const p = pods.podsOf(NS, STS, "StatefulSet")[0];
    assert.ok(p, "the gateway pod runs");
    return p;
  };
  /** The device_id containerboot wrote into replica 0's state Secret (issue 32): the Headscale node id. */
  const stateDeviceId = () => {
    const v = op.mc.get("v1", "Secret", `${STS}-state`, NS)?.data?.device_id;
    return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
  };
  const gatewayNodes = async () =>
    ((await world.headscale.json<HsNode[] | null>(["nodes", "list"])) ?? []).filter((n) => n.tags?.includes(GW_TAG));
  const describeWorld = async () =>
    [
      `gateway: ${JSON.stringify(status())}`,
      `tailnet: ${JSON.stringify(op.reasons("Tailnet", "home"))} ${op.condition("Tailnet", "home", "PolicyApplied")?.message}`,
      `list-routes: ${JSON.stringify([...(await listRoutes(world)).values()])}`,
      `hook errors: ${op.failures()}`,
      `pod failures: ${pods.failures.join("\n")}`,
      ...pods
        .podsOf(NS, STS, "StatefulSet")
        .map((p) => `${JSON.stringify(p.containers.map((c) => c.state()))}\n${p.logs()}`),
    ].join("\n");

  /** One round of the cluster: the kubelet pass, then Metacontroller until quiet. */
  const step = async () => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
    // The cluster DNS forwards the zone to the gateway (ClusterDNSForward=Configured) once the Service has its IP.
    const ip = dnsServiceIp();
    if (ip && !op.mc.get("v1", "ConfigMap", "coredns", "kube-system")) {
      op.mc.apply({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "coredns", namespace: "kube-system" },
        data: { Corefile: `.:53 {\n    forward . /etc/resolv.conf\n}\n${BASE_DOMAIN}:53 {\n    forward . ${ip}\n}\n` },
      });
    }
  };
  const untilReady = (what: string, ms = 180_000) =>
    waitFor(
      what,
      async () => {
        await step();
        return op.condition("TailnetGateway", GW, "Ready", NS)?.status === "True";
      },
      ms,
      describeWorld,
    );

  it("the gateway pod comes up on the real binaries and the operator approves its routes on the real server", async () => {
    const t0 = Date.now();
    await untilReady("TailnetGateway gw Ready=True");
    console.log(`# gateway Ready after ${Date.now() - t0} ms`);
    assert.deepEqual(reasons(), {
      Registered: "FreshRuntimeReady",
      RoutesInSync: "Approved",
      ExitNode: "NotRequested",
      // serving, with the tenant's hand-made Service left out of the zone (see the DNS test)
      DNSReady: "ZoneNamesRefused",
      StaleNodes: "None",
      ClusterDNSForward: "Configured",
      WorkloadCurrent: "PodCurrent",
      ServiceReady: "ClusterIPAssigned",
      // issue 32: replica 0 is bound to the node its state Secret names
      NodeIdentity: "Stable",
      Ready: "FreshRuntimeReady",
    });
    const nodes = await gatewayNodes();
    assert.equal(nodes.length, 1, JSON.stringify(nodes));
    assert.deepEqual(nodes[0].tags, [GW_TAG], "the bootstrap key's tag, nothing requested by the client");
    assert.equal((status()?.node as { id?: string } | undefined)?.id, String(nodes[0].id));
    // issue 32: containerboot keeps the node's state in replica 0's Secret; its device_id is the node id
    assert.deepEqual(
      (status()?.nodes as { replica: number; id: string }[] | undefined)?.map((n) => [n.replica, n.id]),
      [[0, String(nodes[0].id)]],
    );
    assert.equal(stateDeviceId(), String(nodes[0].id));
    const row = await waitFor("the gateway serving its route", async () => {
      const r = (await listRoutes(world)).get("cluster-gw");
      return r?.subnet_routes?.includes(GW_ROUTE) ? r : undefined;
    });
    assert.deepEqual(row.approved_routes, [GW_ROUTE]);
    assert.deepEqual(row.available_routes, [GW_ROUTE]);
    assert.equal(status()?.dnsServiceIP, dnsServiceIp());
    const ts = gatewayPod().container("tailscale");
    assert.equal(ts.restartCount, 0, ts.logs());
  });

  it("the laptop resolves db-1.<zone> and cluster names through the DNS Service address over the advertised route", async () => {
    const pod = gatewayPod();
    const vip = dnsServiceIp();
    assert.ok(vip, "the DNS Service has a ClusterIP");
    await run("/usr/sbin/ip", ["-n", pod.host.netns, "addr", "add", `${vip}/32`, "dev", "lo"]);
    forwarder = pod.host.spawn(bins.node, ["-e", FORWARDER, vip, "53", pod.ip, "1053"], { logName: "kube-proxy" });
    await waitFor(
      "the ClusterIP forwarder",
      async () => forwarder?.logs().includes("forwarding"),
      10_000,
      () => (forwarder ? forwarder.logs() : ""),
    );

    // Until the laptop's netmap carries the route, its SOCKS5 dial falls back to its own namespace:
    // failed there at once (and uncounted), then retried.
    const laptop = world.peers.laptop;
    await withUnreachable(laptop, [GW_ROUTE], async () => {
      const zone = await waitFor(
        `${DB_NAME} through ${vip} from the laptop`,
        async () => {
          const r = await socksDns(laptop, vip, DB_NAME);
          return typeof r === "string" ? undefined : r;
        },
        60_000,
        async () => `${JSON.stringify(await socksDns(laptop, vip, DB_NAME))}\n${await describeWorld()}`,
      );
      assert.deepEqual(zone, { rcode: 0, a: [DB_SERVICE_IP] }, "the derived zone's record: the egress Service");
      // the older tenant egress's hand-made Service is not in the real CoreDNS's answer, and the gateway says why
      assert.ok(!zone.a.includes(TENANT_SERVICE_IP));
      assert.equal(
        op.condition("TailnetGateway", GW, "DNSReady", NS)?.message.split("; not in the zone: ")[1],
        `${DB_NAME} (tenant/steal target pg): Service tenant/pg is not the one the operator made for this egress (no controller ownerReference to it)`,
      );

      // A cluster name: CoreDNS forwards svc.cluster.local to the cluster DNS (the pods' resolver).
      const clusterName = `${GW}-dns.${NS}.svc.cluster.local`;
      // (The stand-in cluster DNS answers a Service with its ready pod's IP, as probed by the last
      // kubelet pass: the pass runs right before each question.)
      const cluster = await waitFor(`${clusterName} through ${vip}`, async () => {
        await step();
        const r = await socksDns(laptop, vip, clusterName);
        return typeof r !== "string" && r.rcode === 0 ? r : undefined;
      });
      assert.deepEqual(cluster, { rcode: 0, a: [pod.ip] }, "the cluster DNS's answer, forwarded by the gateway");
      // A name in the zone that does not exist: an authoritative NXDOMAIN from the zone file.
      assert.deepEqual(await socksDns(laptop, vip, `nope.${BASE_DOMAIN}`), { rcode: 3, a: [] });
    });
    // The outsider (no grant) gets nothing through the gateway.
    await world.peers.outsider.tailscale(["set", "--accept-routes"]);
    const refused = await withUnreachable(world.peers.outsider, [GW_ROUTE], () =>
      socksDns(world.peers.outsider, vip, DB_NAME, 3000),
    );
    assert.match(String(refused), /^error: /);
  });

  it("the laptop (group:eng: *:* in the base policy) reaches nothing of the pod on the gateway node's own address (issue 31)", async () => {
    // tailscaled's netstack forwards what serve does not handle to 127.0.0.1:<port> in the pod; every
    // listener binds the pod IP, so CoreDNS, its ready/health/metrics and tailscale's metrics stay off the node
    const [node] = await gatewayNodes();
    const ip = node?.ip_addresses?.find((a) => !a.includes(":"));
    assert.ok(ip, JSON.stringify(node));
    const http = Buffer.from("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // a DNS query over TCP (2-byte length, then the message): id 1, RD, one question for db-1.<zone> A
    const q = Buffer.concat([
      Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
      ...DB_NAME.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
      Buffer.from([0, 0, 1, 0, 1]),
    ]);
    const dns = Buffer.concat([Buffer.from([q.length >> 8, q.length & 255]), q]);
    const got: Record<string, string> = {};
    for (const [what, port, payload] of [
      ["coredns", 1053, dns],
      ["coredns-ready", 8181, http],
      ["coredns-health", 8081, http],
      ["coredns-metrics", 9153, http],
      ["tailscale-metrics", 8080, http],
    ] as const) {
      got[what] = await socksKnock(world.peers.laptop, ip, port, payload);
    }
    for (const [what, answer] of Object.entries(got)) assert.doesNotMatch(answer, /^answered/, `${what}: ${answer}`);
    // the same CoreDNS still answers on the pod IP, where the DNS Service sends it (the test above)
    assert.equal(gatewayPod().ready, true);
  });

  it("killing the gateway's tailscale container: it comes back without crash-looping and without a second node", async () => {
    const pod = gatewayPod();
    const ts = pod.container("tailscale");
    const before = await gatewayNodes();
    assert.equal(before.length, 1);
    const restarts = ts.restartCount;
    pods.expectRestarts(pod, "tailscale", 1);
    await ts.kill("SIGKILL");
    const t0 = Date.now();
    await waitFor(
      "the tailscale container back and the gateway Ready again",
      async () => {
        await step();
        return ts.running && ts.ready && op.condition("TailnetGateway", GW, "Ready", NS)?.status === "True"
          ? true
          : undefined;
      },
      120_000,
      describeWorld,
    );
    console.log(`# gateway tailscale container back after ${Date.now() - t0} ms`);
    // A few more rounds: a container that could not reuse its state would log in again, as a second node.
    for (let i = 0; i < 4; i++) await step();
    pods.check();
    assert.equal(ts.restartCount, restarts + 1, `one restart, no crash loop\n${ts.logs()}`);
    assert.equal(gatewayPods().length, 1);
    assert.equal(pods.podsOf(NS, STS, "StatefulSet")[0], pod, "the same pod: only the container restarted");
    const after = await gatewayNodes();
    assert.deepEqual(
      after.map((n) => String(n.id)),
      before.map((n) => String(n.id)),
      `the same node, no second one: ${JSON.stringify(after)}`,
    );
    assert.deepEqual(after[0].ip_addresses, before[0].ip_addresses, "the same tailnet addresses");
    assert.equal(stateDeviceId(), String(before[0].id), "the state Secret still names the node");
    assert.equal(reasons().Registered, "FreshRuntimeReady");
    assert.equal(reasons().StaleNodes, "None");
    const vip = dnsServiceIp() ?? "";
    const again = await withUnreachable(world.peers.laptop, [GW_ROUTE], () =>
      waitFor("DNS through the restarted gateway", async () => {
        const r = await socksDns(world.peers.laptop, vip, DB_NAME);
        return typeof r === "string" ? undefined : r;
      }),
    );
    assert.deepEqual(again.a, [DB_SERVICE_IP]);
  });

  const gatewayPods = () => pods.podsOf(NS, STS, "StatefulSet");
});
