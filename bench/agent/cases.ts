/**
 * The agent's data plane against the usual tools, on loopback, in one run and against the same upstreams:
 * - TCP throughput (16 connections pushing 64 KiB writes into a sink) and connection-setup latency (connect +
 *   1-byte echo over sequential short connections) through the agent (egress role, direct dial), HAProxy
 *   (`mode tcp`, `nbthread 1`: the agent is one Node thread), socat (`fork`) and a bare Node forwarder (accept,
 *   connect, pipe: Node's own floor, harness.ts startNodeFloor), plus direct for reference;
 * - HTTPS requests/s (autocannon, 16 keep-alive connections) through the agent (ingress role, `mode http`,
 *   test-CA certificate) and HAProxy terminating the same certificate, in front of the same keep-alive backend,
 *   plus a bare Node HTTPS server answering itself (Node's TLS stack without the proxy hop);
 * - the RSS of an agent with 64 targets, settled and around a burst of 1,024 connections.
 * Every system runs as its own child process — the agent as an esbuild bundle of its entry (compiled, as in
 * the image; src through tsx when esbuild is missing) — and the upstreams in one more, so this process only
 * generates load. Systems are measured in rotating rounds and reported as medians, so a neighbour's CPU burst
 * on a shared machine hits all of them alike. A missing haproxy or socat is reported and its baseline skipped.
 * bench/agent/harness.ts runs the processes and the load. `npx tsx bench/agent.ts` runs this section alone;
 * bench/run.ts includes it. BENCH_AGENT_BEFORE=<git revision> also runs the agent as it was at that revision
 * in the same rounds (before/after rows, as ratios to HAProxy);
 * BENCH_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" profiles the measured agents (stopped with SIGTERM).
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestPki } from "../../test/fakes/agent/pki.js";
import {
  bundleAgent,
  bundleAgentAt,
  type Child,
  cpuMs,
  findTool,
  httpsLoad,
  type Latency,
  median,
  own,
  percentile,
  pushThrough,
  roundTrips,
  sleep,
  spawnAgent,
  spawnTcpEgress,
  startHaproxy,
  startNodeFloor,
  startSocat,
  startUpstreams,
  type Upstreams,
  vmRssMiB,
  WEB_NAME,
} from "./harness.js";

export interface TcpFigures {
  /** Median over rounds. */
  bytesPerSecond: number;
  /** Over all rounds' samples. */
  setup: Latency;
  /** CPU the proxy spent per GiB pushed, and per short connection: what contention on a shared box cannot skew. */
  cpuMsPerGiB: number;
  cpuMicrosPerConnection: number;
}

export interface HttpsFigures {
  /** Median over rounds. */
  rps: number;
  /** Median over rounds of each round's p99. */
  p99ms: number;
  errors: number;
  /** CPU the server spent per request. */
  cpuMicrosPerRequest: number;
}

export interface RssFigures {
  runtime: "bundle" | "tsx";
  targets: number;
  /** After start, once every target was probed reachable. */
  settledMiB: number;
  burstConnections: number;
  /** Highest VmRSS sampled during the burst. */
  peakMiB: number;
  /** Two seconds after the burst closed. */
  afterMiB: number;
  /** For scale: an idle `node` process. */
  idleNodeMiB: number;
}

async function idleNodeRss(): Promise<number> {
  const child = own(spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" }), "node");
  await sleep(1500);
  const rss = vmRssMiB(child.pid);
  await child.stop();
  return rss;
}

/** An egress agent with 64 targets (all on the echo upstream), settled, then 16 echoing connections per target. */
async function rssWith64Targets(up: Upstreams, bundle: string | undefined): Promise<RssFigures> {
  const targets = Array.from({ length: 64 }, (_, i) => ({
    name: `t${i}`,
    host: "127.0.0.1",
    ports: [{ port: up.echo, listenPort: 0 }],
  }));
  const agent = await spawnAgent({ role: "egress", metricsPort: 0, listenHost: "127.0.0.1", targets }, bundle);
  try {
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`http://127.0.0.1:${agent.metricsPort}/status`);
      const status = (await res.json()) as { targets: { reachable: boolean }[] };
      if (status.targets.every((t) => t.reachable)) break;
      await sleep(50);
    }
    await sleep(1000);
    const settledMiB = vmRssMiB(agent.pid);
    let peakMiB = settledMiB;
    const sampler = setInterval(() => (peakMiB = Math.max(peakMiB, vmRssMiB(agent.pid))), 20);
    const payload = Buffer.alloc(4096, 0x62);
    const perTarget = 16;
    const echoOnce = (port: number) =>
      new Promise<void>((resolve, reject) => {
        const socket = netConnect({ host: "127.0.0.1", port });
        let got = 0;
        socket.once("connect", () => socket.write(payload));
        socket.on("data", (chunk: Buffer) => {
          got += chunk.length;
          if (got >= payload.length) socket.end();
        });
        socket.once("error", reject);
        socket.once("close", () => (got >= payload.length ? resolve() : reject(new Error("burst echo lost"))));
      });
    await Promise.all(
      [...agent.ports.values()].flatMap((port) => Array.from({ length: perTarget }, () => echoOnce(port))),
    );
    clearInterval(sampler);
    peakMiB = Math.max(peakMiB, vmRssMiB(agent.pid));
    await sleep(2000);
    return {
      runtime: bundle ? "bundle" : "tsx",
      targets: targets.length,
      settledMiB,
      burstConnections: agent.ports.size * perTarget,
      peakMiB,
      afterMiB: vmRssMiB(agent.pid),
      idleNodeMiB: await idleNodeRss(),
    };
  } finally {
    await agent.stop();
  }
}

export interface Ratios {
  /** agent ÷ baseline bytes/s: above 1 the agent moves more. */
  throughput: number;
  /** agent ÷ baseline setup latency: above 1 the agent is slower. */
  setupP50: number;
  setupP99: number;
  /** agent ÷ baseline CPU per GiB and per connection: above 1 the agent works harder. */
  cpuPerGiB: number;
  cpuPerConnection: number;
}

export interface AgentBench {
  seconds: number;
  rounds: number;
  setupConnections: number;
  /** How the agent ran: an esbuild bundle (as compiled in the image) or src through tsx. */
  runtime: "bundle" | "tsx";
  /** Baselines that could not run, and why. */
  skipped: string[];
  /** direct has no proxy: its CPU figures are the upstreams' own. */
  tcp: { direct: TcpFigures; agent: TcpFigures; haproxy?: TcpFigures; socat?: TcpFigures; floor: TcpFigures };
  vsHaproxy?: Ratios;
  vsSocat?: Ratios;
  /** agent ÷ the bare Node forwarder: what the agent adds to Node's own cost. */
  vsFloor: Ratios;
  /** the bare Node forwarder ÷ HAProxy: Node's floor against the goals. */
  floorVsHaproxy?: Ratios;
  /** node: a bare Node HTTPS server answering itself (Node's TLS stack, no proxy hop). */
  https: { agent: HttpsFigures; haproxy?: HttpsFigures; node: HttpsFigures };
  /** agent ÷ haproxy requests/s and CPU per request. */
  httpsVsHaproxy?: { rps: number; cpuPerRequest: number };
  rss: RssFigures;
  /** BENCH_AGENT_BEFORE: the agent at that revision, measured in the same rounds. */
  before?: {
    revision: string;
    tcp: TcpFigures;
    https: HttpsFigures;
    vsHaproxy?: Ratios;
    httpsVsHaproxy?: { rps: number; cpuPerRequest: number };
  };
}

function ratios(agent: TcpFigures, base: TcpFigures): Ratios {
  return {
    throughput: agent.bytesPerSecond / base.bytesPerSecond,
    setupP50: agent.setup.p50ms / base.setup.p50ms,
    setupP99: agent.setup.p99ms / base.setup.p99ms,
    cpuPerGiB: agent.cpuMsPerGiB / base.cpuMsPerGiB,
    cpuPerConnection: agent.cpuMicrosPerConnection / base.cpuMicrosPerConnection,
  };
}

type System = "direct" | "agent" | "before" | "haproxy" | "socat" | "floor" | "node";
/** Where to load a system, and the processes whose CPU it costs. */
interface TcpSystem {
  sink: number;
  echo: number;
  pids: number[];
}

interface HttpsSystem {
  port: number;
  pids: number[];
}

/** Accumulates one system's rounds. */
class Tally {
  rates: number[] = [];
  samples: number[] = [];
  p99s: number[] = [];
  errors = 0;
  units = 0;
  cpu = 0;
}

async function measured<T>(pids: number[], tally: Tally, run: () => Promise<T>): Promise<T> {
  const sum = () => pids.reduce((n, pid) => n + cpuMs(pid), 0);
  const before = sum();
  const result = await run();
  tally.cpu += sum() - before;
  return result;
}

/**
 * Everything runs at once and is measured in alternating rounds (the order rotates each round), so a
 * neighbour's burst of CPU on a shared machine lands on every system alike; figures are medians of rounds,
 * and CPU per unit of work is summed over rounds.
 */
export async function benchAgent(
  opts: { seconds?: number; rounds?: number; setupConnections?: number } = {},
): Promise<AgentBench> {
  const seconds = opts.seconds ?? 5;
  const rounds = opts.rounds ?? 3;
  const perRound = Math.ceil((opts.setupConnections ?? 2000) / rounds);
  const skipped: string[] = [];
  const haproxyBin = findTool("haproxy");
  const socatBin = findTool("socat");
  if (!haproxyBin) skipped.push("haproxy not installed (scripts/ci-deps.sh installs it): HAProxy baselines skipped");
  if (!socatBin) skipped.push("socat not installed (scripts/ci-deps.sh installs it): socat baseline skipped");

  const dir = await mkdtemp(join(tmpdir(), "agent-bench-"));
  const children: Child[] = [];
  const pki = await createTestPki();
  try {
    const bundle = await bundleAgent(dir).catch(() => undefined);
    // e.g. BENCH_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=.tmp/prof" to profile the measured agents
    const agentNodeArgs = process.env.BENCH_AGENT_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
    if (!bundle) skipped.push("esbuild bundle failed: the agent ran from src through tsx");
    const cert = await pki.issue({ names: [WEB_NAME] });
    const up = await startUpstreams(cert);
    children.push(up);
    const pemFile = join(dir, "web.pem");
    await writeFile(pemFile, `${cert.certPem}${cert.keyPem}`);

    const tcp = new Map<System, TcpSystem>([["direct", { sink: up.sink, echo: up.echo, pids: [up.pid] }]]);
    const https = new Map<System, HttpsSystem>([["node", { port: up.https, pids: [up.pid] }]]);
    const web = { host: "127.0.0.1", port: up.http };
    const tls = { certFile: cert.certFile, keyFile: cert.keyFile };
    const startAgents = async (key: "agent" | "before", agentBundle: string | undefined) => {
      const egress = await spawnTcpEgress(up, agentBundle, agentNodeArgs);
      children.push(egress);
      tcp.set(key, { sink: egress.ports.get("sink") ?? 0, echo: egress.ports.get("echo") ?? 0, pids: [egress.pid] });
      const ingress = await spawnAgent(
        {
          role: "ingress",
          metricsPort: 0,
          listenHost: "127.0.0.1", // the bench's clients stand in for tailscaled's serve
          exposes: [{ name: "web", listenPort: 0, mode: "http", backend: web, tls, names: [WEB_NAME] }],
        },
        agentBundle,
        agentNodeArgs,
      );
      children.push(ingress);
      https.set(key, { port: ingress.ports.get("web") ?? 0, pids: [ingress.pid] });
    };
    await startAgents("agent", bundle);
    // BENCH_AGENT_BEFORE=<git revision>: the agent as it was there runs alongside, for before/after in one run
    const beforeRev = process.env.BENCH_AGENT_BEFORE;
    if (beforeRev) await startAgents("before", await bundleAgentAt(beforeRev, dir));
    if (haproxyBin) {
      const haproxy = await startHaproxy(haproxyBin, up, pemFile, dir);
      children.push(haproxy);
      tcp.set("haproxy", { ...haproxy.ports, pids: [haproxy.pid] });
      https.set("haproxy", { port: haproxy.ports.web, pids: [haproxy.pid] });
    }
    const floor = await startNodeFloor(up);
    children.push(floor);
    tcp.set("floor", { sink: floor.sink, echo: floor.echo, pids: [floor.pid] });
    if (socatBin) {
      const sink = await startSocat(socatBin, up.sink);
      children.push(sink);
      const echo = await startSocat(socatBin, up.echo);
      children.push(echo);
      tcp.set("socat", { sink: sink.port, echo: echo.port, pids: [sink.pid, echo.pid] });
    }

    // Warm-up: JIT, buffers, TLS sessions.
    for (const system of tcp.values()) {
      await pushThrough(system.sink, 1);
      await roundTrips(system.echo, 200);
    }
    for (const system of https.values()) await httpsLoad(system.port, pki.caPem, 1);

    const pushed = new Map<System, Tally>();
    const setup = new Map<System, Tally>();
    const served = new Map<System, Tally>();
    const tally = (map: Map<System, Tally>, system: System) => {
      const t = map.get(system) ?? new Tally();
      map.set(system, t);
      return t;
    };
    for (let round = 0; round < rounds; round++) {
      const order = [...tcp.keys()];
      for (let i = 0; i < round; i++) order.push(order.shift() as System);
      for (const name of order) {
        const system = tcp.get(name) as TcpSystem;
        const push = tally(pushed, name);
        const r = await measured(system.pids, push, () => pushThrough(system.sink, seconds));
        push.rates.push(r.bytes / r.seconds);
        push.units += r.bytes;
        const trips = tally(setup, name);
        trips.samples.push(...(await measured(system.pids, trips, () => roundTrips(system.echo, perRound))));
        trips.units += perRound;
      }
      const httpsOrder = round % 2 === 0 ? [...https.keys()] : [...https.keys()].reverse();
      for (const name of httpsOrder) {
        const system = https.get(name) as HttpsSystem;
        const t = tally(served, name);
        const r = await measured(system.pids, t, () => httpsLoad(system.port, pki.caPem, seconds));
        t.rates.push(r.rps);
        t.p99s.push(r.p99ms);
        t.errors += r.errors;
        t.units += r.total;
      }
    }
    const tcpFigures = (name: System): TcpFigures | undefined => {
      const push = pushed.get(name);
      const trips = setup.get(name);
      if (!push || !trips) return undefined;
      const sorted = [...trips.samples].sort((a, b) => a - b);
      return {
        bytesPerSecond: median(push.rates),
        setup: { p50ms: percentile(sorted, 0.5), p99ms: percentile(sorted, 0.99) },
        cpuMsPerGiB: push.cpu / (push.units / 2 ** 30),
        cpuMicrosPerConnection: (trips.cpu * 1000) / trips.units,
      };
    };
    const httpsFigures = (name: System): HttpsFigures | undefined => {
      const t = served.get(name);
      if (!t) return undefined;
      return {
        rps: median(t.rates),
        p99ms: median(t.p99s),
        errors: t.errors,
        cpuMicrosPerRequest: (t.cpu * 1000) / t.units,
      };
    };
    const agentTcp = tcpFigures("agent") as TcpFigures;
    const agentHttps = httpsFigures("agent") as HttpsFigures;
    const result: AgentBench = {
      seconds,
      rounds,
      setupConnections: perRound * rounds,
      runtime: bundle ? "bundle" : "tsx",
      skipped,
      tcp: {
        direct: tcpFigures("direct") as TcpFigures,
        agent: agentTcp,
        haproxy: tcpFigures("haproxy"),
        socat: tcpFigures("socat"),
        floor: tcpFigures("floor") as TcpFigures,
      },
      https: { agent: agentHttps, haproxy: httpsFigures("haproxy"), node: httpsFigures("node") as HttpsFigures },
      rss: await rssWith64Targets(up, bundle),
      vsFloor: ratios(agentTcp, tcpFigures("floor") as TcpFigures),
    };
    if (result.tcp.haproxy) result.vsHaproxy = ratios(agentTcp, result.tcp.haproxy);
    if (result.tcp.socat) result.vsSocat = ratios(agentTcp, result.tcp.socat);
    if (result.tcp.haproxy) result.floorVsHaproxy = ratios(result.tcp.floor, result.tcp.haproxy);
    const h = result.https.haproxy;
    const vsHttps = (a: HttpsFigures, base: HttpsFigures) => ({
      rps: a.rps / base.rps,
      cpuPerRequest: a.cpuMicrosPerRequest / base.cpuMicrosPerRequest,
    });
    if (h) result.httpsVsHaproxy = vsHttps(agentHttps, h);
    const beforeTcp = tcpFigures("before");
    const beforeHttps = httpsFigures("before");
    if (beforeRev && beforeTcp && beforeHttps) {
      result.before = {
        revision: beforeRev,
        tcp: beforeTcp,
        https: beforeHttps,
        vsHaproxy: result.tcp.haproxy && ratios(beforeTcp, result.tcp.haproxy),
        httpsVsHaproxy: h && vsHttps(beforeHttps, h),
      };
    }
    return result;
  } finally {
    for (const child of children.reverse()) await child.stop();
    await pki.cleanup();
    await rm(dir, { recursive: true, force: true });
  }
}

const mbps = (bps: number) => `${((bps * 8) / 1e6).toFixed(0)} Mbit/s`;
const lat = (l: Latency) => `p50 ${l.p50ms.toFixed(2)} / p99 ${l.p99ms.toFixed(2)} ms`;
const cpu = (t: TcpFigures) => `${t.cpuMsPerGiB.toFixed(0)} ms/GiB, ${t.cpuMicrosPerConnection.toFixed(0)} µs/conn`;

/** The rows bench/run.ts prints. */
export function agentRows(b: AgentBench): [string, string][] {
  const { tcp, https, rss } = b;
  const rows: [string, string][] = [
    [
      "agent TCP throughput, 16 conns (direct)",
      `${mbps(tcp.agent.bytesPerSecond)} (${mbps(tcp.direct.bytesPerSecond)})`,
    ],
    [`agent TCP setup, ${b.setupConnections} conns (direct)`, `${lat(tcp.agent.setup)} (${lat(tcp.direct.setup)})`],
    ["agent CPU", cpu(tcp.agent)],
  ];
  for (const [name, base, r] of [
    ["haproxy", tcp.haproxy, b.vsHaproxy],
    ["socat", tcp.socat, b.vsSocat],
    ["bare Node forwarder", tcp.floor, b.vsFloor],
  ] as const) {
    if (!base || !r) continue;
    rows.push(
      [
        `agent/${name} TCP throughput`,
        `${mbps(tcp.agent.bytesPerSecond)} / ${mbps(base.bytesPerSecond)} = ${r.throughput.toFixed(2)}`,
      ],
      [
        `agent/${name} TCP setup p50, p99`,
        `${r.setupP50.toFixed(2)}, ${r.setupP99.toFixed(2)} (${name} ${lat(base.setup)})`,
      ],
      [
        `agent/${name} CPU per GiB, per conn`,
        `${r.cpuPerGiB.toFixed(2)}, ${r.cpuPerConnection.toFixed(2)} (${name} ${cpu(base)})`,
      ],
    );
  }
  if (b.floorVsHaproxy) {
    const f = b.floorVsHaproxy;
    rows.push([
      "bare Node forwarder/haproxy: throughput, setup p50, CPU per GiB, per conn",
      `${f.throughput.toFixed(2)}, ${f.setupP50.toFixed(2)}, ${f.cpuPerGiB.toFixed(2)}, ${f.cpuPerConnection.toFixed(2)} (Node's own floor)`,
    ]);
  }
  const perReq = (h: HttpsFigures) => `${h.cpuMicrosPerRequest.toFixed(0)} µs CPU/req`;
  rows.push([
    "agent HTTPS req/s, 16 keep-alive conns",
    `${https.agent.rps.toFixed(0)} (p99 ${https.agent.p99ms} ms, ${perReq(https.agent)}, ${https.agent.errors} errors)`,
  ]);
  rows.push([
    "agent/bare Node HTTPS server req/s",
    `${https.agent.rps.toFixed(0)} / ${https.node.rps.toFixed(0)} = ${(https.agent.rps / https.node.rps).toFixed(2)} (node ${perReq(https.node)})`,
  ]);
  if (https.haproxy && b.httpsVsHaproxy) {
    rows.push(
      [
        "agent/haproxy HTTPS req/s",
        `${https.agent.rps.toFixed(0)} / ${https.haproxy.rps.toFixed(0)} = ${b.httpsVsHaproxy.rps.toFixed(2)} (haproxy p99 ${https.haproxy.p99ms} ms)`,
      ],
      [
        "agent/haproxy HTTPS CPU per request",
        `${b.httpsVsHaproxy.cpuPerRequest.toFixed(2)} (haproxy ${perReq(https.haproxy)})`,
      ],
    );
  }
  rows.push([
    `agent RSS, ${rss.targets} targets: settled / burst peak / after`,
    `${rss.settledMiB.toFixed(0)} / ${rss.peakMiB.toFixed(0)} / ${rss.afterMiB.toFixed(0)} MiB (${rss.burstConnections} conns, ${rss.runtime}; idle node ${rss.idleNodeMiB.toFixed(0)} MiB)`,
  ]);
  const before = b.before;
  if (before?.vsHaproxy && before.httpsVsHaproxy && b.vsHaproxy && b.httpsVsHaproxy) {
    const pair = (was: number, now: number) => `${was.toFixed(2)} -> ${now.toFixed(2)}`;
    rows.push(
      [
        `before (${before.revision}) -> now: /haproxy TCP throughput`,
        pair(before.vsHaproxy.throughput, b.vsHaproxy.throughput),
      ],
      [
        `before (${before.revision}) -> now: /haproxy TCP setup p50`,
        pair(before.vsHaproxy.setupP50, b.vsHaproxy.setupP50),
      ],
      [
        `before (${before.revision}) -> now: /haproxy HTTPS req/s`,
        pair(before.httpsVsHaproxy.rps, b.httpsVsHaproxy.rps),
      ],
      [
        `before (${before.revision}) -> now: /haproxy HTTPS CPU/req`,
        `${pair(before.httpsVsHaproxy.cpuPerRequest, b.httpsVsHaproxy.cpuPerRequest)} (${before.https.cpuMicrosPerRequest.toFixed(0)} -> ${https.agent.cpuMicrosPerRequest.toFixed(0)} µs)`,
      ],
    );
  }
  for (const s of b.skipped) rows.push(["skipped", s]);
  return rows;
}
