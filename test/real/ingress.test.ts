/**
 * TailnetIngress in the real world (issue 14 § Ingress tcp and http): the hooks return the agent's
 * children and the pod runner runs them (containerboot + tailscaled v1.102.5 serving the tailnet port
 * to the agent, the operator's agent forwarding to the backend Service) against the real Headscale
 * 0.29.3. The backend is a process in a workload namespace behind a Service; the clients are real
 * tailnet peers reaching the agent node through their own tailscaled (SOCKS5):
 * - tcp: the laptop (alice, group:eng) gets its bytes echoed by the backend, by IP and by its record's name;
 * - http: TLS ends on the agent with the Secret's certificate, the client verifies it against the CA
 *   and the name it asked for (SNI), and the backend's answer comes back;
 * - the outsider (mallory, no group) is refused by the agent node's real packet filter — the grant the
 *   Tailnet renders from allowFrom means what it says;
 * - Ready=True is never reported while the laptop's bytes do not flow (within the netmap's propagation
 *   grace: Headscale updates the laptop asynchronously);
 * - replicas 2: two agent pods, each its own node and Ready through the agent's /readyz, and the laptop's
 *   bytes reach the backend through either node;
 * - an ingress named like the real db-1 is DNSNameReserved and publishes no record; the real Headscale
 *   registers its agent as db-1-monitoring (the status says so) and the laptop's db-1 still answers db-1.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { isIPv4 } from "node:net";
import { after, before, describe, it } from "node:test";
import { agentHostname } from "../../src/kinds/shared/dns-tenancy.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import type { IssuedCertificate } from "../fakes/agent/pki.js";
import { parentObject } from "../fixtures/hooks.js";
import { bins } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import { httpsVia } from "./https.js";
import type { Host, RealProcess } from "./net.js";
import { API, agentPods, podRunnerFor, type RealOperator, socksEcho, startOperator, tailnetSpec } from "./operator.js";
import { type Peer, waitFor } from "./peers.js";
import type { PodRunner } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "monitoring";
const HTTP_PORT = 3000;
const ECHO_PORT = 4000;
const DASH = `dash.${BASE_DOMAIN}`;
type Cond = { type: string; status: string; reason: string; message: string };

/**
 * The backend: HTTP on 3000 ("hello from web <path>"; /xff answers the X-Forwarded-For it got) and a TCP
 * echo on 4000, in its own namespace.
 */
const BACKEND = `const http=require("node:http"),net=require("node:net");
http.createServer((q,s)=>{s.setHeader("content-type","text/plain");s.end(q.url==="/xff"?"xff "+q.headers["x-forwarded-for"]:"hello from web "+q.url)}).listen(${HTTP_PORT},"0.0.0.0",()=>console.log("http up"));
net.createServer(s=>{s.on("error",()=>{});s.pipe(s)}).listen(${ECHO_PORT},"0.0.0.0",()=>console.log("echo up"));`;

describe("TailnetIngress on the real tailnet", { timeout: 900_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let web: Host;
  let backend: RealProcess;
  let cert: IssuedCertificate;
  const readyChecks: { ingress: string; flowed: boolean; detail: string }[] = [];

  before(async () => {
    world = await startRealWorld({ id: "ingress" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    // The outsider's netmap lacks the agent nodes (no grant), so its tailscaled's SOCKS5 hands a dial
    // to their tailnet IPs to the OS (net/tsdial): refused here by an unreachable route for the tailnet
    // range instead of counting as a dial outside the test network.
    const r = await world.peers.outsider.host.exec("/usr/sbin/ip", ["route", "add", "unreachable", "100.64.0.0/10"]);
    assert.equal(r.code, 0, r.stderr);
    web = await world.net.addHost("web");
    backend = web.spawn(bins.node, ["-e", BACKEND], { logName: "backend" });
    const deadline = Date.now() + 10_000;
    while (!(backend.logs().includes("http up") && backend.logs().includes("echo up"))) {
      if (Date.now() > deadline) throw new Error(`backend did not start\n${backend.logs()}`);
      await sleep(50);
    }
    pods.addWorkload({ namespace: NS, name: "web", labels: { app: "web" }, host: web });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: NS },
      spec: {
        selector: { app: "web" },
        ports: [
          { name: "http", port: HTTP_PORT },
          { name: "echo", port: ECHO_PORT },
        ],
      },
    });
    cert = await world.headscale.pki.issue({ names: [DASH] });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "web-tls", namespace: NS },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
    });
  });
  after(async () => {
    // the route added above goes before the network's own containment check (which flags unknown routes)
    await world?.peers.outsider.host.exec("/usr/sbin/ip", ["route", "del", "unreachable", "100.64.0.0/10"]);
    await pods?.close();
    await backend?.kill("SIGKILL");
    await op?.close();
    await world?.close();
  });

  const cond = (name: string, type: string) =>
    (
      (op.mc.get(API, "TailnetIngress", name, NS)?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []
    ).find((c) => c.type === type);
  const reasons = (name: string) => op.reasons("TailnetIngress", name, NS);
  /** The agent node's tailnet IPv4, as the laptop's netmap shows it. */
  const nodeIp = async (hostName: string) => {
    const peers = Object.values((await world.peers.laptop.status()).Peer ?? {});
    // the agent reports <hostname>-<namespace> (agentHostname), never the bare name
    return peers.find((p) => p.HostName === agentHostname(hostName, NS))?.TailscaleIPs?.find((ip) => !ip.includes(":"));
  };
  const tcpFlows = async (peer: Peer, msg: string) => {
    const ip = await nodeIp("web-tcp");
    return ip ? socksEcho(peer, ip, ECHO_PORT, msg) : "error: web-tcp not in the netmap";
  };
  const httpsFrom = async (peer: Peer, path = "/") => {
    const ip = await nodeIp("dash");
    return ip ? httpsVia(peer, ip, 443, DASH, world.headscale.caPem, path) : { error: "dash not in the netmap" };
  };
  const describeWorld = async () =>
    [
      `web-tcp: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "web-tcp", NS)?.status)}`,
      `dash: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "dash", NS)?.status)}`,
      `tailnet: ${JSON.stringify(op.reasons("Tailnet", "home"))}`,
      `hook errors: ${op.failures()}`,
      ...["web-tcp", "dash"].flatMap((d) => agentPods(pods, NS, d).map((p) => p.logs())),
    ].join("\n");

  /**
   * Whether the laptop's bytes flow, allowing GRACE_MS: Headscale hands the new node and its grant to
   * the laptop's netmap asynchronously, and the operator cannot see a client's netmap (seen here: the
   * first dial a second after Ready=True failed in the laptop's SOCKS5, the next one flowed).
   */
  const GRACE_MS = 15_000;
  const flowsSoon = async (check: () => Promise<{ ok: boolean; detail: string }>) => {
    const deadline = Date.now() + GRACE_MS;
    for (;;) {
      const r = await check();
      if (r.ok || Date.now() > deadline) return r;
      await sleep(500);
    }
  };
  const step = async () => {
    await pods.sync();
    pods.check();
    await op.mc.settle(6).catch(() => undefined);
    if (cond("web-tcp", "Ready")?.status === "True") {
      const r = await flowsSoon(async () => {
        const got = await tcpFlows(world.peers.laptop, "probe");
        return { ok: got === "probe", detail: got };
      });
      readyChecks.push({ ingress: "web-tcp", flowed: r.ok, detail: r.detail });
    }
    if (cond("dash", "Ready")?.status === "True") {
      const r = await flowsSoon(async () => {
        const got = await httpsFrom(world.peers.laptop);
        return { ok: "status" in got && got.status === 200, detail: JSON.stringify(got) };
      });
      readyChecks.push({ ingress: "dash", flowed: r.ok, detail: r.detail });
    }
  };
  const drive = async (what: string, done: () => boolean, ms = 180_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await step();
      if (done()) return;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${ms} ms waiting for ${what}\n${await describeWorld()}`);
      await sleep(300);
    }
  };

  it("tcp and http ingresses become Ready on the real tailnet, never before the laptop's bytes flow", async () => {
    const ingress = (name: string, spec: Record<string, unknown>) =>
      op.mc.apply(
        parentObject(
          "TailnetIngress",
          name,
          { tailnetRef: { name: "home" }, allowFrom: ["group:eng"], ...spec },
          { namespace: NS },
        ),
      );
    ingress("web-tcp", {
      hostname: "web-tcp",
      mode: "tcp",
      exposes: [{ name: "echo", port: ECHO_PORT, backend: { service: "web", port: ECHO_PORT } }],
    });
    ingress("dash", {
      hostname: "dash",
      mode: "http",
      exposes: [
        { name: "web", port: 443, backend: { service: "web", port: HTTP_PORT }, tls: { secretName: "web-tls" } },
      ],
    });
    const t0 = Date.now();
    await drive(
      "both ingresses Ready=True",
      () => cond("web-tcp", "Ready")?.status === "True" && cond("dash", "Ready")?.status === "True",
    );
    console.log(`# ingresses Ready after ${Date.now() - t0} ms`);
    assert.deepEqual(
      readyChecks.filter((r) => !r.flowed),
      [],
      "Ready=True while the laptop's bytes did not flow",
    );
    for (const name of ["web-tcp", "dash"]) {
      assert.equal(reasons(name).Registered, "Registered", name);
      assert.equal(reasons(name).PolicyGranted, "Granted", name);
      assert.equal(reasons(name).BackendsReachable, "Reachable", name);
    }
    assert.equal(reasons("dash").TLSReady, "Valid");
    // Headscale's records file still holds no record (the test writes it below, as a kubelet would): once
    // the agent has read its tailscaled as Running (ProbeFailed before), its resolver answers nothing for the
    // name, and the ingress says so while Ready
    await drive("web-tcp DNSServed=NotServed", () => cond("web-tcp", "DNSServed")?.reason === "NotServed");
    assert.equal(cond("web-tcp", "Ready")?.status, "True");
    const notServed = cond("web-tcp", "DNSServed");
    assert.equal(notServed?.status, "False", JSON.stringify(notServed));
    assert.equal(notServed?.reason, "NotServed");
    assert.match(
      notServed?.message ?? "",
      new RegExp(`^Headscale does not hand out web-tcp\\.${BASE_DOMAIN.replaceAll(".", "\\.")} \\(`),
    );
  });

  it("tcp: the laptop's bytes are echoed by the backend (by IP and by the record's name); the outsider is refused", async () => {
    assert.equal(await tcpFlows(world.peers.laptop, "tcp-hello"), "tcp-hello");
    // The agent's node is web-tcp-monitoring (agentHostname); the name users type is the Tailnet's record,
    // served by Headscale from its records file (dns.extra_records_path) and answered by the laptop's
    // MagicDNS resolver (100.100.100.100). tailscaled's own SOCKS5 dialer does not use typed ("A") extra
    // records (tailscale ipn/ipnlocal/node_backend.go updateNodeByNameLocked skips them), so the test asks
    // the resolver, then dials the answer, as an application on a MagicDNS client does.
    const records = op.mc.list("ConfigMap").find((c) => c.metadata.name === "tailnet-home-dns-records");
    const text = String(records?.data?.["records.json"] ?? "");
    assert.match(text, new RegExp(`"web-tcp\\.${BASE_DOMAIN.replaceAll(".", "\\.")}"`));
    await world.headscale.writeExtraRecords(text);
    const agentIp = await nodeIp("web-tcp");
    assert.ok(agentIp, "the agent's node in the laptop's netmap");
    const query = () => world.peers.laptop.tailscale(["dns", "query", `web-tcp.${BASE_DOMAIN}`, "A"]);
    await waitFor(
      `the laptop resolves web-tcp.${BASE_DOMAIN} to ${agentIp}`,
      async () => (await query()).includes(agentIp),
      30_000,
      query,
    );
    assert.equal(await socksEcho(world.peers.laptop, agentIp, ECHO_PORT, "by-name"), "by-name");
    // the agent's node got the record too: its resolver answers it, so the ingress reports the name served
    await drive("web-tcp DNSServed=Served", () => cond("web-tcp", "DNSServed")?.reason === "Served");
    assert.equal(
      cond("web-tcp", "DNSServed")?.message,
      `Headscale hands out web-tcp.${BASE_DOMAIN} (${agentIp}) to the agent's node`,
    );
    // the outsider is up and sees the node, but its packets are dropped by the agent node's filter
    assert.equal((await world.peers.outsider.status()).BackendState, "Running");
    assert.match(await tcpFlows(world.peers.outsider, "let-me-in"), /^error: /);
  });

  it("http: TLS ends on the agent with the Secret's certificate, verified by the client; the outsider is refused", async () => {
    const got = await httpsFrom(world.peers.laptop, "/grafana");
    assert.ok("status" in got, JSON.stringify(got));
    assert.equal(got.status, 200);
    assert.equal(got.body, "hello from web /grafana");
    assert.equal(got.cert.fingerprint256, new X509Certificate(cert.certPem).fingerprint256, "the Secret's certificate");
    assert.ok(got.cert.checkHost(DASH));
    // a client that does not trust the test CA refuses the handshake (the verification is real)
    const ip = await nodeIp("dash");
    assert.ok(ip);
    const untrusted = await httpsVia(
      world.peers.laptop,
      ip,
      443,
      DASH,
      (await world.headscale.pki.issue({ names: ["x.invalid"] })).certPem,
    );
    assert.ok("error" in untrusted, JSON.stringify(untrusted));
    const outsider = await httpsFrom(world.peers.outsider);
    assert.ok("error" in outsider, `the outsider got through: ${JSON.stringify(outsider)}`);
  });

  it("http: the backend sees the laptop's tailnet address in X-Forwarded-For (tailscaled's PROXY v2 header, read by the agent)", async () => {
    const laptop = (await world.peers.laptop.ips()).find((a) => isIPv4(a));
    assert.ok(laptop, "the laptop has a tailnet IPv4");
    const got = await httpsFrom(world.peers.laptop, "/xff");
    assert.ok("status" in got, JSON.stringify(got));
    assert.equal(got.status, 200);
    assert.equal(got.body, `xff ${laptop}`, "not 127.0.0.1 (tailscaled's loopback forward)");
  });

  it("replicas 2: two agent nodes (each pod Ready via /readyz), the laptop's bytes reach the backend through either", async () => {
    op.mc.apply(
      parentObject(
        "TailnetIngress",
        "web-ha",
        {
          tailnetRef: { name: "home" },
          allowFrom: ["group:eng"],
          hostname: "web-ha",
          mode: "tcp",
          replicas: 2,
          exposes: [{ name: "echo", port: ECHO_PORT, backend: { service: "web", port: ECHO_PORT } }],
        },
        { namespace: NS },
      ),
    );
    const t0 = Date.now();
    await drive(
      "web-ha Ready with both nodes online",
      () => cond("web-ha", "Ready")?.message === `serving echo on web-ha.${BASE_DOMAIN} (2 nodes online)`,
    );
    console.log(`# HA ingress (2 replicas) Ready after ${Date.now() - t0} ms`);
    // the kubelet-style probe polls every 5 s: the second pod passes /readyz a moment after its node is online
    await drive(
      "both agent pods Ready (/readyz)",
      () => agentPods(pods, NS, "web-ha").filter((p) => p.ready).length === 2,
      60_000,
    );
    console.log(`# both HA agent pods Ready after ${Date.now() - t0} ms`);
    const nodes =
      (
        op.mc.get(API, "TailnetIngress", "web-ha", NS)?.status as
          | { nodes?: { name: string; online: boolean; addresses: string[] }[] }
          | undefined
      )?.nodes ?? [];
    assert.deepEqual(
      nodes.map((n) => `${n.name}:${n.online}`),
      ["web-ha-monitoring:true", "web-ha-monitoring-r1:true"],
      "two nodes under the agent's name (agentHostname), replica 1 named -r1 by the operator (no Headscale -1)",
    );
    const ips = nodes.map((n) => n.addresses.find((a) => isIPv4(a)) ?? "");
    for (const [i, ip] of ips.entries()) {
      const r = await flowsSoon(async () => {
        const got = await socksEcho(world.peers.laptop, ip, ECHO_PORT, `via-${i}`);
        return { ok: got === `via-${i}`, detail: got };
      });
      assert.ok(r.ok, `through node ${nodes[i].name} (${ip}): ${r.detail}\n${await describeWorld()}`);
    }
  });

  it("named like the real db-1: DNSNameReserved, no record; its agent is db-1-monitoring and the laptop's db-1 stays db-1", async () => {
    op.mc.apply(
      parentObject(
        "TailnetIngress",
        "db-1",
        {
          tailnetRef: { name: "home" },
          allowFrom: ["group:eng"],
          hostname: "db-1",
          mode: "tcp",
          exposes: [{ name: "echo", port: ECHO_PORT, backend: { service: "web", port: ECHO_PORT } }],
        },
        { namespace: NS },
      ),
    );
    // status.nodes names a replica once its state Secret's device_id is observed (issue 32), which can be a sync
    // after Registered turns True
    const bound = () =>
      !!(op.mc.get(API, "TailnetIngress", "db-1", NS)?.status as { nodes?: unknown[] } | undefined)?.nodes?.length;
    await drive(
      "db-1 registered, bound to its node and refused its name",
      () =>
        cond("db-1", "Registered")?.status === "True" && cond("db-1", "Ready")?.reason === "DNSNameReserved" && bound(),
    );
    const message = cond("db-1", "Ready")?.message ?? "";
    assert.ok(message.startsWith(`the name of another machine: db-1.${BASE_DOMAIN} (Headscale node `), message);
    const status = op.mc.get(API, "TailnetIngress", "db-1", NS)?.status as
      | { dnsName?: string; nodes?: { name: string }[] }
      | undefined;
    assert.equal(status?.dnsName, undefined, "nothing published under db-1");
    assert.deepEqual(
      status?.nodes?.map((n) => n.name),
      ["db-1-monitoring"],
      "the agent never asks for the bare name (agentHostname); the status says what it got",
    );
    const records = op.mc.list("ConfigMap").find((c) => c.metadata.name === "tailnet-home-dns-records");
    assert.ok(records, "the Tailnet's records ConfigMap");
    assert.doesNotMatch(String(records.data?.["records.json"]), /"db-1\./);
    const [dbIp] = (await world.peers.db1.ips()).filter((a) => isIPv4(a));
    const answer = await world.peers.laptop.tailscale(["dns", "query", `db-1.${BASE_DOMAIN}`, "A"]);
    assert.ok(answer.includes(dbIp), answer);
    op.mc.delete(API, "TailnetIngress", "db-1", NS);
    await step();
  });

  it("containment: no pod asked for a name outside the test world", () => {
    const outside = pods
      .unansweredQueries()
      .filter((q) => q.name.includes(".") && !/(^|\.)cluster\.local$|\.svc$/.test(q.name))
      .map((q) => `${q.from} ${q.name}`);
    assert.deepEqual([...new Set(outside)], []);
  });
});
