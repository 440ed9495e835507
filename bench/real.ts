/**
 * The real data path (issue 14 § 5), in the real world of test/real: the operator's own egress and
 * ingress pods run by the pod runner (containerboot + tailscaled v1.102.5 + the agent) against the
 * real Headscale 0.29.3 and the real db-1 peer (TCP echo on 5432), all in test namespaces on one
 * bridge — nothing leaves the machine.
 * - Egress: bytes/s (4 connections echoing 64 KiB writes) and connect latency (connect + 1-byte echo,
 *   sequential) from a client inside the agent pod's own namespace through the agent's listener
 *   (client → agent → tailscaled SOCKS5 → WireGuard → db-1), against the same client through
 *   tailscaled's SOCKS5 directly (client → tailscaled → WireGuard → db-1): the agent's own overhead
 *   as a ratio in one run (goal ≥ 0.95×, issue 36). Rounds alternate the paths; medians are reported. A third
 *   path puts a bare Node relay in the agent's place (accept, SOCKS5 CONNECT, `pipe` both ways, in the same pod):
 *   what any Node hop costs there, the floor the agent's ratio is judged against.
 * - Ingress: HTTPS requests/s end to end, from this process through the laptop's tailscaled SOCKS5
 *   over WireGuard to the ingress agent node, TLS ending on the agent, to a backend in a workload
 *   namespace (8 keep-alive connections).
 * Bounded: BENCH_SECONDS per measurement (default 5, at most 10), BENCH_ROUNDS rounds (default 3).
 * `npx tsx bench/real.ts` runs this section alone (as root, with scripts/real-deps.sh done).
 */
import { connect as tlsConnect } from "node:tls";
import { SocksClient } from "socks";
import { Client } from "undici";
import { TAILSCALE_SOCKS_ADDR } from "../src/contract/ports.js";
import { agentHostname } from "../src/kinds/shared/dns-tenancy.js";
import { b64 } from "../src/kinds/shared/secrets.js";
import { parentObject } from "../test/fixtures/hooks.js";
import { bins, REPO } from "../test/real/bins.js";
import { BASE_DOMAIN } from "../test/real/headscale.js";
import type { Host } from "../test/real/net.js";
import { agentPods, podRunnerFor, startOperator, tailnetSpec } from "../test/real/operator.js";
import { DB_PORT, startRealWorld, TAGS } from "../test/real/world.js";

// tailscaled's SOCKS5 in an egress pod (src/contract/ports.ts): the baseline path of the egress rows.
const [socksHost, socksPort] = TAILSCALE_SOCKS_ADDR.split(":") as [string, string];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface PathFigures {
  bytesPerSecond: number;
  connectP50ms: number;
  connectP99ms: number;
}

export interface RealBench {
  seconds: number;
  rounds: number;
  worldStartMs: number;
  egressReadyMs: number;
  agent: PathFigures;
  socks: PathFigures;
  /** A bare Node relay in the agent's place: Node's floor for one hop in the pod. */
  bare: PathFigures;
  /** agent bytes/s ÷ SOCKS5 bytes/s (goal ≥ 0.95). */
  throughputRatio: number;
  /** bare relay bytes/s ÷ SOCKS5 bytes/s: the same ratio for the floor. */
  bareRatio: number;
  /** SOCKS5 connect p50 ÷ agent connect p50 (≥ 1 means the agent is as fast). */
  connectRatio: number;
  https: { requestsPerSecond: number; connections: number; errors: number };
}

/** The load client, run with node inside the agent pod's namespace; prints one JSON line. */
const CLIENT = `
const net = require("node:net");
const { SocksClient } = require(process.env.SOCKS_MODULE);
const [mode, host, port, seconds, conns, setups] = process.argv.slice(1);
const target = { host, port: Number(port) };
const open = async () => {
  if (mode === "direct") {
    return await new Promise((res, rej) => {
      const s = net.connect(target, () => res(s));
      s.once("error", rej);
    });
  }
  const { socket } = await SocksClient.createConnection({
    proxy: { host: process.env.SOCKS_HOST, port: Number(process.env.SOCKS_PORT), type: 5 }, command: "connect", destination: target, timeout: 8000,
  });
  return socket;
};
const chunk = Buffer.alloc(64 * 1024, 120);
async function pump(until) {
  const s = await open();
  let got = 0;
  s.on("data", (d) => { got += d.length; });
  s.on("error", () => {});
  while (Date.now() < until) {
    if (!s.write(chunk)) await new Promise((r) => s.once("drain", r));
    // keep at most 1 MiB in flight: echo back-pressure, not buffer growth, bounds the rate
    while (Date.now() < until && s.bytesWritten - got > 1024 * 1024) await new Promise((r) => setTimeout(r, 1));
  }
  s.destroy();
  return got;
}
async function setup() {
  const t0 = process.hrtime.bigint();
  const s = await open();
  await new Promise((res, rej) => { s.once("data", res); s.once("error", rej); s.write("x"); });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  s.destroy();
  return ms;
}
(async () => {
  const until = Date.now() + Number(seconds) * 1000;
  const t0 = Date.now();
  const bytes = (await Promise.all(Array.from({ length: Number(conns) }, () => pump(until)))).reduce((a, b) => a + b, 0);
  const elapsed = (Date.now() - t0) / 1000;
  const lat = [];
  for (let i = 0; i < Number(setups); i++) lat.push(await setup());
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  console.log(JSON.stringify({ bytesPerSecond: bytes / elapsed, connectP50ms: q(0.5), connectP99ms: q(0.99) }));
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

/**
 * The floor path: a bare Node relay, run in the agent pod's namespace. Per connection a SOCKS5 CONNECT to tailscaled
 * (no auth, an IPv4 destination; the 10-byte reply), then `pipe` both ways: no parser, no limits, no metrics.
 */
const BARE_RELAY = `
const net = require("node:net");
const [listenHost, listenPort, socksHost, socksPort, dstHost, dstPort] = process.argv.slice(1);
const dst = Buffer.from([5, 1, 0, 1, ...dstHost.split(".").map(Number), Number(dstPort) >> 8, Number(dstPort) & 255]);
net.createServer((c) => {
  c.pause();
  const s = net.connect(Number(socksPort), socksHost, () => s.write(Buffer.from([5, 1, 0])));
  let got = Buffer.alloc(0);
  let stage = 0;
  const handshake = (d) => {
    got = Buffer.concat([got, d]);
    if (stage === 0 && got.length >= 2) { got = got.subarray(2); stage = 1; s.write(dst); }
    if (stage === 1 && got.length >= 10) {
      s.off("data", handshake);
      if (got.length > 10) c.write(got.subarray(10));
      c.pipe(s); s.pipe(c); c.resume();
    }
  };
  s.on("data", handshake);
  const end = () => { c.destroy(); s.destroy(); };
  for (const x of [c, s]) { x.on("error", end); x.on("close", end); }
}).listen(Number(listenPort), listenHost, () => console.log("relay up"));
`;
/** The bare relay's port on the pod's address (the agent's own ports are others). */
const BARE_RELAY_PORT = 15432;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function runClient(host: Host, args: string[], seconds: number): Promise<PathFigures> {
  const r = await host.exec(bins.node, ["-e", CLIENT, ...args], {
    env: { SOCKS_MODULE: `${REPO}/node_modules/socks`, SOCKS_HOST: socksHost, SOCKS_PORT: socksPort },
    timeoutMs: (seconds + 60) * 1000,
  });
  if (r.code !== 0) throw new Error(`load client ${args[0]} failed: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}") as PathFigures;
}

/** HTTPS req/s through a peer's SOCKS5 to host:443 (TLS verified against `ca` for `servername`). */
async function httpsRps(
  socks: { host: string; port: number },
  host: string,
  servername: string,
  ca: string,
  seconds: number,
  connections: number,
): Promise<{ requestsPerSecond: number; errors: number }> {
  let done = 0;
  let errors = 0;
  const until = Date.now() + seconds * 1000;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const client = new Client(`https://${servername}`, {
        pipelining: 1,
        connect: (_opts, cb) => {
          SocksClient.createConnection({
            proxy: { host: socks.host, port: socks.port, type: 5 },
            command: "connect",
            destination: { host, port: 443 },
            timeout: 8000,
          }).then(
            ({ socket }) => {
              const t = tlsConnect({ socket, servername, ca, ALPNProtocols: ["http/1.1"] });
              t.once("secureConnect", () => cb(null, t));
              t.once("error", (e) => cb(e, null));
            },
            (e: Error) => cb(e, null),
          );
        },
      });
      try {
        while (Date.now() < until) {
          try {
            const res = await client.request({ path: "/", method: "GET" });
            await res.body.dump();
            if (res.statusCode === 200) done++;
            else errors++;
          } catch {
            errors++;
            await sleep(50);
          }
        }
      } finally {
        await client.close().catch(() => undefined);
      }
    }),
  );
  return { requestsPerSecond: done / ((Date.now() - t0) / 1000), errors };
}

const BACKEND = `require("node:http").createServer((q,s)=>s.end("ok")).listen(3000,"0.0.0.0",()=>console.log("up"))`;

export async function benchReal(opts: { seconds?: number; rounds?: number } = {}): Promise<RealBench> {
  const seconds = Math.min(10, Math.max(1, opts.seconds ?? 5));
  const rounds = Math.min(5, Math.max(1, opts.rounds ?? 3));
  const world = await startRealWorld({ id: "bench" });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const base = tailnetSpec(world);
    const op = await startOperator(world, {
      tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] }, allowedEgressTargets: [TAGS.db] },
    });
    cleanups.push(() => op.close());
    op.mc.deploymentsAvailable = false;
    // the pod API too: agent replicas keep their state in a per-replica Secret (issue 32)
    const pods = podRunnerFor(world, op);
    cleanups.push(() => pods.close());

    const web = await world.net.addHost("web");
    const backend = web.spawn(bins.node, ["-e", BACKEND], { logName: "backend" });
    cleanups.push(() => backend.kill("SIGKILL"));
    pods.addWorkload({ namespace: "monitoring", name: "web", labels: { app: "web" }, host: web });
    const cert = await world.headscale.pki.issue({ names: [`dash.${BASE_DOMAIN}`] });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "monitoring" },
      spec: { selector: { app: "web" }, ports: [{ port: 3000 }] },
    });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "web-tls", namespace: "monitoring" },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
    });
    op.mc.apply(
      parentObject(
        "TailnetEgress",
        "db",
        { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: DB_PORT }] }] },
        { namespace: "shop" },
      ),
    );
    op.mc.apply(
      parentObject(
        "TailnetIngress",
        "dash",
        {
          tailnetRef: { name: "home" },
          hostname: "dash",
          mode: "http",
          allowFrom: ["group:eng"],
          exposes: [
            { name: "web", port: 443, backend: { service: "web", port: 3000 }, tls: { secretName: "web-tls" } },
          ],
        },
        { namespace: "monitoring" },
      ),
    );
    const t0 = Date.now();
    const ready = (kind: string, name: string, ns: string) => op.condition(kind, name, "Ready", ns)?.status === "True";
    while (!(ready("TailnetEgress", "db", "shop") && ready("TailnetIngress", "dash", "monitoring"))) {
      if (Date.now() - t0 > 180_000)
        throw new Error(`real bench: the egress and ingress were not Ready in 180 s\n${op.failures()}`);
      await pods.sync();
      pods.check();
      await op.mc.settle(6).catch(() => undefined);
      await sleep(300);
    }
    const egressReadyMs = Date.now() - t0;
    const [agentPod] = agentPods(pods, "shop", "db");
    const db1 = (await world.peers.db1.ips())[0];
    // The agent listens on the pod IP only (127.0.0.1 is its refuser, src/agent/refuse.ts), as a workload reaches it.
    const listen = pods.serviceAddr("shop", "postgres", DB_PORT);

    const relay = agentPod.host.spawn(
      bins.node,
      ["-e", BARE_RELAY, listen.host, String(BARE_RELAY_PORT), socksHost, socksPort, db1, String(DB_PORT)],
      { logName: "bare-relay" },
    );
    cleanups.push(() => relay.kill("SIGKILL"));
    for (let t = Date.now(); ; await sleep(100)) {
      await relay.flush();
      if (relay.logs().includes("relay up")) break;
      if (Date.now() - t > 10_000) throw new Error(`real bench: the bare relay did not start\n${relay.logs()}`);
    }

    const agentRuns: PathFigures[] = [];
    const socksRuns: PathFigures[] = [];
    const bareRuns: PathFigures[] = [];
    for (let i = 0; i < rounds; i++) {
      bareRuns.push(
        await runClient(
          agentPod.host,
          ["direct", listen.host, String(BARE_RELAY_PORT), String(seconds), "4", "100"],
          seconds,
        ),
      );
      agentRuns.push(
        await runClient(
          agentPod.host,
          ["direct", listen.host, String(listen.port), String(seconds), "4", "100"],
          seconds,
        ),
      );
      socksRuns.push(
        await runClient(agentPod.host, ["socks", db1, String(DB_PORT), String(seconds), "4", "100"], seconds),
      );
      pods.check();
    }
    const fold = (runs: PathFigures[]): PathFigures => ({
      bytesPerSecond: median(runs.map((r) => r.bytesPerSecond)),
      connectP50ms: median(runs.map((r) => r.connectP50ms)),
      connectP99ms: median(runs.map((r) => r.connectP99ms)),
    });
    const agent = fold(agentRuns);
    const socks = fold(socksRuns);
    const bare = fold(bareRuns);

    const laptop = world.peers.laptop;
    const dashIp = Object.values((await laptop.status()).Peer ?? {})
      .find((p) => p.HostName === agentHostname("dash", "monitoring"))
      ?.TailscaleIPs?.find((ip) => !ip.includes(":"));
    if (!dashIp) throw new Error("real bench: the ingress node is not in the laptop's netmap");
    const connections = 8;
    const https = await httpsRps(
      laptop.socks5,
      dashIp,
      `dash.${BASE_DOMAIN}`,
      world.headscale.caPem,
      seconds,
      connections,
    );
    pods.check();
    return {
      seconds,
      rounds,
      worldStartMs: world.startMs,
      egressReadyMs,
      agent,
      socks,
      bare,
      throughputRatio: agent.bytesPerSecond / socks.bytesPerSecond,
      bareRatio: bare.bytesPerSecond / socks.bytesPerSecond,
      connectRatio: socks.connectP50ms / agent.connectP50ms,
      https: { ...https, connections },
    };
  } finally {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    await world.close();
  }
}

const mbps = (b: number) => `${((b * 8) / 1e6).toFixed(0)} Mbit/s`;

export function realRows(b: RealBench): [string, string][] {
  return [
    [
      "real egress bytes/s: agent / tailscaled SOCKS5",
      `${mbps(b.agent.bytesPerSecond)} / ${mbps(b.socks.bytesPerSecond)} = ${b.throughputRatio.toFixed(2)} (goal ≥ 0.95)`,
    ],
    [
      "real egress bytes/s: bare Node relay / SOCKS5 (the floor of a Node hop in the pod)",
      `${mbps(b.bare.bytesPerSecond)} / ${mbps(b.socks.bytesPerSecond)} = ${b.bareRatio.toFixed(2)}`,
    ],
    [
      "real egress connect p50 (p99) ms: agent / SOCKS5",
      `${b.agent.connectP50ms.toFixed(2)} (${b.agent.connectP99ms.toFixed(2)}) / ${b.socks.connectP50ms.toFixed(2)} (${b.socks.connectP99ms.toFixed(2)})`,
    ],
    [
      `real ingress HTTPS req/s, ${b.https.connections} conns, laptop → WireGuard → agent`,
      `${b.https.requestsPerSecond.toFixed(0)} (${b.https.errors} errors)`,
    ],
    [
      "real world start, egress+ingress Ready",
      `${(b.worldStartMs / 1000).toFixed(1)} s, ${(b.egressReadyMs / 1000).toFixed(1)} s`,
    ],
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const b = await benchReal({
    seconds: Number(process.env.BENCH_SECONDS ?? 5),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  });
  console.log(JSON.stringify(b, null, 2));
  for (const [k, v] of realRows(b)) console.log(`${k}  ${v}`);
}
