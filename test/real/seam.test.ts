/**
 * What the tailnet side of an agent pod reaches (issue 31 item 1), on the real tailscaled v1.102.5 in
 * userspace mode. Its netstack forwards every inbound tailnet TCP connection that serve does not handle to
 * 127.0.0.1:<port> in the pod (tailscale.com wgengine/netstack/netstack.go acceptTCP: a Tailscale IP
 * destination is dialled as ipv4Loopback), so whatever listens on 127.0.0.1 or 0.0.0.0 in the pod is a
 * tailnet service. The attacker is mallory's outsider with a broad base rule (`mallory@` → `*:*`): the
 * threat model is a device the policy lets reach the agent nodes on every port, not a narrow grant.
 * From it, through its own tailscaled's SOCKS5 (every byte crosses WireGuard), to an http ingress's node
 * and an egress's node:
 * - the ingress's local listener with a PROXY v2 header naming alice's laptop: the backend must not see
 *   alice's address in X-Forwarded-For (the same header is kube-api's identity: WhoIs of its source);
 * - tailscaled's SOCKS5 (1055), the agent's /status (9080), containerboot's metrics (9002), the egress
 *   data listener (10000: a path to db-1 the policy never granted mallory) — none may answer;
 * - what the ingress serves on 443 still answers (that is what the broad rule grants), with mallory's
 *   own address in X-Forwarded-For, and the egress still reaches db-1 from the cluster.
 */
import assert from "node:assert/strict";
import { isIPv4, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { request } from "undici";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { proxyHeader } from "../fakes/tailscaled-serve.js";
import { parentObject } from "../fixtures/hooks.js";
import { bins, requireBins, versions } from "./bins.js";
import { echoFrom, sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import { httpsVia } from "./https.js";
import type { Host, RealProcess } from "./net.js";
import {
  API,
  agentPods,
  OPS,
  podRunnerFor,
  type RealOperator,
  socksConnect,
  socksKnock,
  startOperator,
  tailnetSpec,
} from "./operator.js";
import type { Peer } from "./peers.js";
import type { PodRunner } from "./pods.js";
import { BASE_POLICY, DB_PORT, type RealWorld, startRealWorld, TAGS } from "./world.js";

const NS = "seam";
/** The ingress agent's node: agents register as <hostname>-<namespace> (docs/dns-names.md). */
const INGRESS_NODE = "seam-seam";
const HTTP_PORT = 3000;
const DASH = `seam.${BASE_DOMAIN}`;
/** The world's base policy plus the threat: mallory's devices may reach every port of every node. */
const BROAD_POLICY = BASE_POLICY.replace(
  `"acls": [`,
  `"acls": [ { "action": "accept", "src": ["mallory@"], "dst": ["*:*"] },`,
);
type Cond = { type: string; status: string; reason: string; message: string };

/** HTTP on 3000 answering the X-Forwarded-For it got. */
const BACKEND = `require("node:http").createServer((q,s)=>{s.end("xff "+q.headers["x-forwarded-for"])}).listen(${HTTP_PORT},"0.0.0.0",()=>console.log("http up"));`;

/** A TCP connection to host:port through a peer's SOCKS5, or why it failed. */
async function socksSocket(peer: Peer, host: string, port: number): Promise<Socket | string> {
  try {
    const socket = await socksConnect(peer, host, port);
    return socket;
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

/** A PROXY v2 header naming `forged` as the client, then TLS and GET /: what the backend answered, or why not. */
async function forgedHttps(peer: Peer, host: string, port: number, forged: string, ca: string): Promise<string> {
  const socket = await socksSocket(peer, host, port);
  if (typeof socket === "string") return socket;
  socket.write(proxyHeader(2, { ip: forged, port: 41000 }, { ip: host, port: 443 }));
  return await new Promise<string>((resolve) => {
    const tls = tlsConnect({ socket, servername: DASH, ca, rejectUnauthorized: true });
    let raw = "";
    const timer = setTimeout(() => {
      tls.destroy();
      resolve(raw ? `answered: ${raw}` : "error: no answer within 8 s");
    }, 8000);
    tls.on("secureConnect", () => tls.write(`GET / HTTP/1.1\r\nHost: ${DASH}\r\nConnection: close\r\n\r\n`));
    tls.on("data", (d: Buffer) => {
      raw += d.toString("utf8");
    });
    tls.on("close", () => {
      clearTimeout(timer);
      resolve(raw ? `answered: ${raw.slice(raw.indexOf("\r\n\r\n") + 4)}` : "closed: no bytes");
    });
    tls.on("error", (e) => {
      clearTimeout(timer);
      resolve(`error: ${e.message}`);
    });
  });
}

/** The pinned image, then the oldest supported one (src/real-versions.json), through a TailnetProxyClass. */
const IMAGES = [
  { label: `tailscale ${versions.tailscale}`, proxyClass: undefined },
  { label: `tailscale ${versions.tailscaleOldest}`, proxyClass: `tailscale/tailscale:${versions.tailscaleOldest}` },
];

for (const { label, proxyClass } of IMAGES)
  describe(`the tailnet side of agent pods (issue 31 item 1), ${label}`, {
    timeout: 900_000,
    concurrency: false,
  }, () => {
    let world: RealWorld;
    let op: RealOperator;
    let pods: PodRunner;
    let web: Host;
    let client: Host;
    let backend: RealProcess;

    before(async () => {
      world = await startRealWorld({ id: proxyClass ? "seam-old" : "seam" });
      const base = tailnetSpec(world);
      op = await startOperator(world, {
        tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] }, allowedEgressTargets: [TAGS.db] },
      });
      op.mc.apply({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "tailnet-policy-base", namespace: OPS },
        data: { "policy.hujson": BROAD_POLICY },
      });
      op.mc.deploymentsAvailable = false;
      if (proxyClass) {
        requireBins(["containerbootOldest", "tailscaledOldest", "tailscaleOldest"]);
        op.mc.apply({
          apiVersion: API,
          kind: "TailnetProxyClass",
          metadata: { name: "oldest" },
          spec: { images: { tailscale: proxyClass } },
        });
      }
      pods = podRunnerFor(world, op);
      web = await world.net.addHost("seam-web");
      backend = web.spawn(bins.node, ["-e", BACKEND], { logName: "backend" });
      const deadline = Date.now() + 10_000;
      while (!backend.logs().includes("http up")) {
        if (Date.now() > deadline) throw new Error(`backend did not start\n${backend.logs()}`);
        await sleep(50);
      }
      pods.addWorkload({ namespace: NS, name: "web", labels: { app: "web" }, host: web });
      client = await world.net.addHost("seam-client");
      pods.addWorkload({ namespace: NS, name: "client", labels: { app: "client" }, host: client });
      op.mc.apply({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web", namespace: NS },
        spec: { selector: { app: "web" }, ports: [{ name: "http", port: HTTP_PORT }] },
      });
      const cert = await world.headscale.pki.issue({ names: [DASH] });
      op.mc.apply({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "seam-tls", namespace: NS },
        type: "kubernetes.io/tls",
        data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
      });
      op.mc.apply(
        parentObject(
          "TailnetIngress",
          "seam",
          {
            tailnetRef: { name: "home" },
            ...(proxyClass ? { proxyClassName: "oldest" } : {}),
            allowFrom: ["group:eng"],
            hostname: "seam",
            mode: "http",
            exposes: [
              { name: "web", port: 443, backend: { service: "web", port: HTTP_PORT }, tls: { secretName: "seam-tls" } },
            ],
          },
          { namespace: NS },
        ),
      );
      op.mc.apply(
        parentObject(
          "TailnetEgress",
          "db",
          {
            tailnetRef: { name: "home" },
            ...(proxyClass ? { proxyClassName: "oldest" } : {}),
            targets: [{ name: "postgres", host: "db-1", ports: [{ port: DB_PORT }] }],
          },
          { namespace: NS },
        ),
      );
    });
    after(async () => {
      await pods?.close();
      await backend?.kill("SIGKILL");
      await op?.close();
      await world?.close();
    });

    const cond = (kind: string, name: string, type: string) =>
      ((op.mc.get(API, kind, name, NS)?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find(
        (c) => c.type === type,
      );
    /** A node's tailnet IPv4 as mallory's netmap shows it (the broad rule puts every node there). */
    const nodeIp = async (hostName: string) => {
      const peers = Object.values((await world.peers.outsider.status()).Peer ?? {});
      return peers.find((p) => p.HostName === hostName)?.TailscaleIPs?.find((ip) => isIPv4(ip));
    };
    const describeWorld = () =>
      [
        `ingress: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "seam", NS)?.status)}`,
        `egress: ${JSON.stringify(op.mc.get(API, "TailnetEgress", "db", NS)?.status)}`,
        `tailnet: ${JSON.stringify(op.reasons("Tailnet", "home"))}`,
        `hook errors: ${op.failures()}`,
        ...["seam", "db"].flatMap((d) => agentPods(pods, NS, d).map((p) => p.logs())),
      ].join("\n");
    const drive = async (what: string, done: () => boolean | Promise<boolean>, ms = 240_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        await pods.sync();
        pods.check();
        await op.mc.settle(6).catch(() => undefined);
        if (await done()) return;
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${describeWorld()}`);
        await sleep(300);
      }
    };
    const ips = { ingress: "", egress: "", laptop: "", mallory: "" };
    /** Every probe below needs the addresses the first test found: without them a refusal would prove nothing. */
    const ready = () => assert.ok(ips.ingress && ips.egress && ips.laptop && ips.mallory, JSON.stringify(ips));

    it("both agents become Ready and mallory's netmap holds both nodes (the broad rule)", async () => {
      await drive(
        "ingress and egress Ready, both nodes in mallory's netmap",
        async () =>
          cond("TailnetIngress", "seam", "Ready")?.status === "True" &&
          cond("TailnetEgress", "db", "Ready")?.status === "True" &&
          !!(await nodeIp(INGRESS_NODE)) &&
          !!(await nodeIp("seam-db")),
      );
      ips.ingress = (await nodeIp(INGRESS_NODE)) ?? "";
      ips.egress = (await nodeIp("seam-db")) ?? "";
      ips.laptop = (await world.peers.laptop.ips()).find((a) => isIPv4(a)) ?? "";
      ips.mallory = (await world.peers.outsider.ips()).find((a) => isIPv4(a)) ?? "";
      assert.ok(ips.ingress && ips.egress && ips.laptop && ips.mallory, JSON.stringify(ips));
      for (const d of ["seam", "db"]) {
        const image = agentPods(pods, NS, d)[0]?.spec.containers.find((c) => c.name === "tailscale")?.image;
        assert.equal(image, proxyClass ?? `tailscale/tailscale:${versions.tailscale}`, d);
      }
    });

    it("what the ingress serves still answers: mallory on 443 (granted by the broad rule) is itself in X-Forwarded-For", async () => {
      ready();
      let got: Awaited<ReturnType<typeof httpsVia>> = { error: "not tried" };
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        got = await httpsVia(world.peers.outsider, ips.ingress, 443, DASH, world.headscale.caPem);
        if ("status" in got) break;
        await sleep(500);
      }
      assert.ok("status" in got, JSON.stringify(got));
      assert.equal(got.body, `xff ${ips.mallory}`);
      const laptop = await httpsVia(world.peers.laptop, ips.ingress, 443, DASH, world.headscale.caPem);
      assert.ok("status" in laptop, JSON.stringify(laptop));
      assert.equal(laptop.body, `xff ${ips.laptop}`);
    });

    it("mallory cannot reach the ingress's local listener past serve: a forged PROXY header naming alice gets nothing", async () => {
      ready();
      // 20000: the first ingress listen port (src/contract/ports.ts INGRESS_LISTEN_PORT_BASE)
      const got = await forgedHttps(world.peers.outsider, ips.ingress, 20000, ips.laptop, world.headscale.caPem);
      assert.doesNotMatch(got, /xff/, `mallory posed as alice: ${got}`);
      assert.match(got, /^(error|closed): /);
      // and the agent counted it (its /metrics on the pod IP, as the operator scrapes it)
      const [pod] = agentPods(pods, NS, "seam");
      const res = await request(`http://${pod.ip}:9080/metrics`);
      const text = await res.body.text();
      assert.match(text, /^tailnet_agent_serve_bypass_refused_total\{name="web"\} [1-9]/m);
    });

    it("mallory reaches nothing else in the ingress pod: SOCKS5 1055, the agent's 9080, containerboot's 9002", async () => {
      ready();
      const socksHello = Buffer.from([5, 1, 0]);
      const http = Buffer.from("GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      const got = {
        socks: await socksKnock(world.peers.outsider, ips.ingress, 1055, socksHello),
        agent: await socksKnock(world.peers.outsider, ips.ingress, 9080, http),
        containerboot: await socksKnock(
          world.peers.outsider,
          ips.ingress,
          9002,
          Buffer.from("GET /metrics HTTP/1.1\r\n\r\n"),
        ),
      };
      for (const [what, answer] of Object.entries(got)) assert.doesNotMatch(answer, /^answered/, `${what}: ${answer}`);
    });

    it("mallory reaches nothing in the egress pod: its data listener (db-1 by proxy), SOCKS5, 9080, 9002; the cluster still does", async () => {
      ready();
      const got = {
        listener: await socksKnock(world.peers.outsider, ips.egress, 10000, Buffer.from("via-egress")),
        socks: await socksKnock(world.peers.outsider, ips.egress, 1055, Buffer.from([5, 1, 0])),
        agent: await socksKnock(world.peers.outsider, ips.egress, 9080, Buffer.from("GET /status HTTP/1.1\r\n\r\n")),
        containerboot: await socksKnock(
          world.peers.outsider,
          ips.egress,
          9002,
          Buffer.from("GET /metrics HTTP/1.1\r\n\r\n"),
        ),
      };
      for (const [what, answer] of Object.entries(got)) assert.doesNotMatch(answer, /^answered/, `${what}: ${answer}`);
      // the Service path the egress exists for: a workload in the namespace reaches db-1 through the pod IP
      const addr = pods.serviceAddr(NS, "postgres", DB_PORT);
      assert.equal(await echoFrom(client, addr.host, addr.port, "from-cluster"), "from-cluster");
    });

    it("every TCP and UDP listener in the agent pods is on 127.0.0.2 or the pod IP, none where netstack forwards", async () => {
      ready();
      for (const owner of ["seam", "db"]) {
        const [pod] = agentPods(pods, NS, owner);
        assert.ok(pod, owner);
        // netstack forwards UDP the same way (acceptUDP → forwardUDP to 127.0.0.1:<port>)
        const r = await pod.host.exec("/usr/bin/ss", ["-Hltunp"]);
        assert.equal(r.code, 0, r.stderr);
        const rows = r.stdout
          .split("\n")
          .map((line) => line.trim().split(/\s+/))
          .filter((f) => f.length >= 4)
          .map((f) => ({ addr: f[4], proc: /\(\("([^"]+)"/.exec(f.slice(6).join(" "))?.[1] ?? "?" }));
        assert.ok(rows.length > 0, `${owner}: no listener at all?\n${r.stdout}`);
        const port = (addr: string) => addr.slice(addr.lastIndexOf(":"));
        // 127.0.0.1 listeners must be the agent's refusers: a port it also serves on 127.0.0.2 or the pod IP
        const own = new Set(rows.filter((x) => !x.addr.startsWith("127.0.0.1:")).map((x) => port(x.addr)));
        const stray = rows
          .filter((x) => !x.addr.startsWith("127.0.0.2:") && !x.addr.startsWith(`${pod.ip}:`))
          .filter((x) => !(x.proc === "node" && x.addr.startsWith("127.0.0.1:") && own.has(port(x.addr))))
          // tailscaled's own sockets: its peer API (in netstack mode a kernel listener on all addresses,
          // tailscale.com ipn/ipnlocal/peerapi.go listen: `if IsNetstack() { ipStr = "" }`) and magicsock's
          // WireGuard/disco UDP socket; tailscaled's, and they serve peers
          .filter((x) => !(x.proc === "tailscaled" && /^(0\.0\.0\.0|\[::\]|\*):\d+$/.test(x.addr)))
          .map((x) => `${x.addr} ${x.proc}`);
        assert.deepEqual(stray, [], `${owner}: listeners where netstack forwards\n${r.stdout}`);
      }
    });
  });
