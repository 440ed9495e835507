/**
 * The agent's TCP rows only (throughput and connection setup against HAProxy), repeated in separate processes
 * so one run's luck on a shared machine does not decide the figure: `npx tsx bench/agent/tcp-rounds.ts`
 * starts BENCH_PROCESSES (default 5) children one after another; each starts its own upstreams, agent (egress,
 * direct dial, the esbuild bundle) and HAProxy (`nbthread 1`), warms them up and measures BENCH_ROUNDS
 * (default 3) alternating rounds of the same loads as bench/agent/cases.ts (16 connections pushing into a
 * sink for BENCH_SECONDS, default 3; sequential connect + 1-byte echo, BENCH_SETUP_CONNECTIONS per round,
 * default 600). The parent prints each process's agent/HAProxy ratios, then their median and spread (min-max).
 * BENCH_AGENT_BEFORE=<git revision> runs the agent at that revision beside the current one in every child;
 * BENCH_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" profiles the measured agents. BENCH_TCP_FLOOR=1 adds a bare
 * Node forwarder (harness.ts startNodeFloor: accept, connect, pipe) as "node-floor": what Node costs by itself.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestPki } from "../../test/fakes/agent/pki.js";
import {
  bundleAgent,
  bundleAgentAt,
  type Child,
  cpuMs,
  findTool,
  median,
  percentile,
  pushThrough,
  REPO_ROOT,
  roundTrips,
  spawnTcpEgress,
  startHaproxy,
  startNodeFloor,
  startUpstreams,
} from "./harness.js";

interface Figures {
  /** Median bytes/s over rounds. */
  bytesPerSecond: number;
  setupP50ms: number;
  setupP99ms: number;
  cpuMsPerGiB: number;
  cpuMicrosPerConnection: number;
}

interface OneProcess {
  systems: Record<string, Figures>;
}

async function oneProcess(seconds: number, rounds: number, perRound: number): Promise<OneProcess> {
  const haproxyBin = findTool("haproxy");
  if (!haproxyBin) throw new Error("haproxy not installed (scripts/ci-deps.sh installs it)");
  const dir = await mkdtemp(join(tmpdir(), "agent-tcp-rounds-"));
  const children: Child[] = [];
  try {
    const up = await startUpstreams();
    children.push(up);
    const nodeArgs = process.env.BENCH_AGENT_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
    const systems = new Map<string, { sink: number; echo: number; pid: number }>();
    const startAgent = async (key: string, bundle: string | undefined) => {
      const agent = await spawnTcpEgress(up, bundle, nodeArgs);
      children.push(agent);
      systems.set(key, { sink: agent.ports.get("sink") ?? 0, echo: agent.ports.get("echo") ?? 0, pid: agent.pid });
    };
    await startAgent("agent", await bundleAgent(dir));
    const beforeRev = process.env.BENCH_AGENT_BEFORE;
    if (beforeRev) await startAgent("before", await bundleAgentAt(beforeRev, dir));
    // startHaproxy wants a certificate for its HTTPS frontend: none is measured here, any PEM will do.
    const pki = await createTestPki();
    const cert = await pki.issue({ names: ["web.bench.test"] });
    const pem = join(dir, "web.pem");
    await writeFile(pem, `${cert.certPem}${cert.keyPem}`);
    const haproxy = await startHaproxy(haproxyBin, up, pem, dir);
    children.push(haproxy);
    await pki.cleanup();
    systems.set("haproxy", { sink: haproxy.ports.sink, echo: haproxy.ports.echo, pid: haproxy.pid });
    if (process.env.BENCH_TCP_FLOOR === "1") {
      const floor = await startNodeFloor(up);
      children.push(floor);
      systems.set("node-floor", { sink: floor.sink, echo: floor.echo, pid: floor.pid });
    }

    // BENCH_TCP_LOADS=setup or =push runs one load only (e.g. to profile it alone)
    const loads = process.env.BENCH_TCP_LOADS ?? "push,setup";
    const push = (port: number, s: number) =>
      loads.includes("push") ? pushThrough(port, s) : Promise.resolve({ bytes: 1, seconds: 1 });
    const trips = (port: number, n: number) => (loads.includes("setup") ? roundTrips(port, n) : Promise.resolve([1]));
    for (const s of systems.values()) {
      await push(s.sink, 1);
      await trips(s.echo, 200);
    }
    const rates = new Map<string, number[]>();
    const samples = new Map<string, number[]>();
    const cpu = new Map<string, { push: number; bytes: number; trips: number; conns: number }>();
    for (let round = 0; round < rounds; round++) {
      const order = [...systems.keys()];
      for (let i = 0; i < round; i++) order.push(order.shift() as string);
      for (const name of order) {
        const s = systems.get(name) as { sink: number; echo: number; pid: number };
        const c = cpu.get(name) ?? { push: 0, bytes: 0, trips: 0, conns: 0 };
        cpu.set(name, c);
        let before = cpuMs(s.pid);
        const r = await push(s.sink, seconds);
        c.push += cpuMs(s.pid) - before;
        c.bytes += r.bytes;
        rates.set(name, [...(rates.get(name) ?? []), r.bytes / r.seconds]);
        before = cpuMs(s.pid);
        const samplesNow = await trips(s.echo, perRound);
        c.trips += cpuMs(s.pid) - before;
        c.conns += perRound;
        samples.set(name, [...(samples.get(name) ?? []), ...samplesNow]);
      }
    }
    const out: Record<string, Figures> = {};
    for (const name of systems.keys()) {
      const sorted = [...(samples.get(name) ?? [])].sort((a, b) => a - b);
      const c = cpu.get(name) as { push: number; bytes: number; trips: number; conns: number };
      out[name] = {
        bytesPerSecond: median(rates.get(name) ?? []),
        setupP50ms: percentile(sorted, 0.5),
        setupP99ms: percentile(sorted, 0.99),
        cpuMsPerGiB: c.push / (c.bytes / 2 ** 30),
        cpuMicrosPerConnection: (c.trips * 1000) / c.conns,
      };
    }
    return { systems: out };
  } finally {
    for (const child of children.reverse()) await child.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const perRound = Number(process.env.BENCH_SETUP_CONNECTIONS ?? 600);

if (process.argv.includes("--one")) {
  process.stdout.write(`${JSON.stringify(await oneProcess(seconds, rounds, perRound))}\n`);
} else {
  const processes = Number(process.env.BENCH_PROCESSES ?? 5);
  const self = fileURLToPath(import.meta.url);
  const runs: OneProcess[] = [];
  for (let i = 0; i < processes; i++) {
    const child = spawn(process.execPath, ["--import", "tsx", self, "--one"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    if (code !== 0) throw new Error(`tcp-rounds child exited ${code}`);
    const run = JSON.parse(text.trim().split("\n").at(-1) as string) as OneProcess;
    runs.push(run);
    const line = Object.entries(run.systems)
      .filter(([name]) => name !== "haproxy")
      .map(([name, f]) => {
        const h = run.systems.haproxy;
        return `${name}/haproxy throughput ${(f.bytesPerSecond / h.bytesPerSecond).toFixed(2)}, setup p50 ${(f.setupP50ms / h.setupP50ms).toFixed(2)} (${f.setupP50ms.toFixed(3)} / ${h.setupP50ms.toFixed(3)} ms), CPU/conn ${f.cpuMicrosPerConnection.toFixed(0)} / ${h.cpuMicrosPerConnection.toFixed(0)} µs, CPU/GiB ${f.cpuMsPerGiB.toFixed(0)} / ${h.cpuMsPerGiB.toFixed(0)} ms`;
      })
      .join("; ");
    console.log(`process ${i + 1}: ${line}`);
  }
  const names = Object.keys(runs[0].systems).filter((n) => n !== "haproxy");
  for (const name of names) {
    const stat = (label: string, values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b);
      console.log(
        `${name}/haproxy ${label}: median ${median(sorted).toFixed(2)}, spread ${sorted[0].toFixed(2)}-${sorted[sorted.length - 1].toFixed(2)} over ${values.length} processes`,
      );
    };
    const ratio = (pick: (f: Figures) => number) => runs.map((r) => pick(r.systems[name]) / pick(r.systems.haproxy));
    stat(
      "TCP throughput",
      ratio((f) => f.bytesPerSecond),
    );
    stat(
      "TCP setup p50",
      ratio((f) => f.setupP50ms),
    );
    stat(
      "TCP setup p99",
      ratio((f) => f.setupP99ms),
    );
    stat(
      "CPU per connection",
      ratio((f) => f.cpuMicrosPerConnection),
    );
    stat(
      "CPU per GiB",
      ratio((f) => f.cpuMsPerGiB),
    );
  }
}
