/**
 * Agent stress (`npm run stress`; test/hardening/agent-stress.test.ts runs a smaller one on every `npm test`):
 * one ingress agent, in its own process through the real CLI, with four exposes sharing one connection budget
 * — `echo` (tcp → echo target), `stall` (tcp → a backend that never reads), `reset` (tcp → a target that resets
 * every connection) and `web` (http, TLS from a test CA → keep-alive HTTP backend) — under, all at once:
 * a flood of concurrent connections (STRESS_CLIENTS, default 10,000) held open, slowloris clients on the TLS
 * listener (silent before the handshake, and dripping request headers forever), clients pushing into the
 * never-reading backend, and loops against the resetting target; while a healthy TCP client and a healthy
 * HTTPS keep-alive client, connected before the flood, keep talking, and /healthz and /metrics are polled.
 * It then closes everything and refills the whole budget once, which fails if any path leaked a slot.
 * Exits 1 when an invariant (stressViolations) does not hold.
 *
 * Knobs (env): STRESS_CLIENTS 10000, STRESS_MAX_CONNECTIONS 4096 (the agent default), STRESS_HOLD_SECONDS 20,
 * STRESS_SLOWLORIS 200, STRESS_STALLED 50, STRESS_RESETTERS 20, STRESS_HEADER_TIMEOUT_SECONDS 10 (default),
 * STRESS_IDLE_TIMEOUT_SECONDS 60 (the default 300 would make the run wait 5 minutes for stuck streams),
 * STRESS_BATCH 500, STRESS_MEMORY_LIMIT_MIB 256, STRESS_AGENT_NODE_ARGS (default POD_HEAP; "" = none),
 * STRESS_FROM_SOURCE=1 (run src through tsx instead of a bundle).
 * Open files: the load process needs about clients + maxConnections + 1,000 descriptors, the agent
 * 2 × maxConnections + 256. Node raises its soft limit to the hard one at start, so `ulimit -Hn` is what counts.
 *
 * The harness (upstreams, options, report, monitor) is bench/stress/harness.ts, the load cases bench/stress/cases.ts.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createTestPki } from "../test/fakes/agent/pki.js";
import { type AgentProcess, bundleAgent, spawnAgent, vmRssMiB } from "./agent.js";
import { healthyHttps, healthyTcp, openMany, resetLoops, slowloris, stalledClients } from "./stress/cases.js";
import {
  fdsNeeded,
  fileLimits,
  metrics,
  monitor,
  POD_HEAP,
  type StressOptions,
  type StressReport,
  sleep,
  startUpstreams,
  sumOf,
  WEB_NAME,
  waitFor,
} from "./stress/harness.js";

export { fdsNeeded, fileLimits, POD_HEAP, type StressOptions, type StressReport } from "./stress/harness.js";

export async function runAgentStress(opts: StressOptions): Promise<StressReport> {
  const needed = fdsNeeded(opts);
  const load = fileLimits().soft;
  if (load < needed.load) {
    throw new Error(
      `open-files limit ${load} < ${needed.load} needed for ${opts.clients} clients: raise it (\`ulimit -n ${needed.load}\`, hard limit now ${fileLimits().hard}) or lower STRESS_CLIENTS`,
    );
  }
  const pki = await createTestPki();
  const up = await startUpstreams();
  const stops: (() => unknown)[] = [];
  let agent: AgentProcess | undefined;
  try {
    const cert = await pki.issue({ names: [WEB_NAME] });
    const backend = (port: number) => ({ host: "127.0.0.1", port });
    agent = await spawnAgent(
      {
        role: "ingress",
        metricsPort: 0,
        listenHost: "127.0.0.1", // the bench's clients stand in for tailscaled's serve
        limits: {
          maxConnections: opts.maxConnections,
          headerTimeoutSeconds: opts.headerTimeoutSeconds,
          idleTimeoutSeconds: opts.idleTimeoutSeconds,
        },
        exposes: [
          { name: "echo", listenPort: 0, mode: "tcp", backend: backend(up.echo) },
          { name: "stall", listenPort: 0, mode: "tcp", backend: backend(up.stall) },
          { name: "reset", listenPort: 0, mode: "tcp", backend: backend(up.reset) },
          {
            name: "web",
            listenPort: 0,
            mode: "http",
            backend: backend(up.web),
            tls: { certFile: cert.certFile, keyFile: cert.keyFile },
            names: [WEB_NAME],
          },
        ],
      },
      opts.bundle,
      opts.agentNodeArgs,
    );
    const a = agent;
    const port = (name: string) => a.ports.get(name) ?? Number.NaN;
    const agentLimit = fileLimits(a.pid).soft;
    if (agentLimit < needed.agent) {
      throw new Error(
        `agent open-files limit ${agentLimit} < ${needed.agent} for maxConnections ${opts.maxConnections}`,
      );
    }
    await sleep(1000);
    const settledRssMiB = vmRssMiB(a.pid);
    const mon = monitor(a, 100);
    stops.push(() => mon.stop());

    const tcp = await healthyTcp(port("echo"));
    stops.push(() => tcp.stop());
    const https = await healthyHttps(port("web"), pki.caPem);
    stops.push(() => https.stop());
    const slow = slowloris(port("web"), opts.slowloris, pki.caPem);
    stops.push(() => slow.stop());
    const stalled = await stalledClients(port("stall"), opts.stalled);
    stops.push(() => stalled.stop());
    const resets = resetLoops(port("reset"), opts.resetters);
    stops.push(() => resets.stop());
    // The stalled clients give up: while the agent is not reading them (backpressure) it cannot see them go,
    // so their slots stay taken until the idle timeout; the flood runs with those slots gone.
    stalled.stop();
    const gauge = async (name: string) =>
      sumOf(await metrics(a), "tailnet_agent_connections_active", name ? `name="${name}"` : "");
    const stalledLeft = performance.now();
    await sleep(200);
    const heldAfterClientsLeft = await gauge("stall");
    const readByAgentMiB =
      sumOf(await metrics(a), "tailnet_agent_bytes_total", 'name="stall",direction="in"') / 2 ** 20;

    const before = { tcp: tcp.counts.roundTrips, https: https.counts.ok };
    const started = performance.now();
    const flood = await openMany(port("echo"), opts.clients, opts.batch);
    const openMs = performance.now() - started;
    await sleep(opts.holdMs);
    const during = { tcp: tcp.counts.roundTrips - before.tcp, https: https.counts.ok - before.https };
    for (const socket of flood.open) socket.destroy();

    // Slowloris clients are the agent's to close (header timeout); allow two timeouts plus the check interval.
    await waitFor(() => slow.state.closedByAgent === slow.state.total, opts.headerTimeoutSeconds * 2000 + 10_000);
    for (const stop of stops.splice(1).reverse()) await stop();
    const idleMs = opts.idleTimeoutSeconds * 1000;
    await waitFor(async () => (await gauge("stall")) === 0, idleMs + 15_000 - (performance.now() - stalledLeft));
    const releasedAfterMs = performance.now() - stalledLeft;
    await waitFor(async () => (await gauge("")) === 0, 15_000);
    const activeAfter = await gauge("");
    const text = await metrics(a);
    const rejectedEcho = sumOf(text, "tailnet_agent_connections_rejected_total", 'name="echo"');
    const dialErrorsEcho = sumOf(text, "tailnet_agent_dial_errors_total", 'name="echo"');
    const rejectedTotal = sumOf(text, "tailnet_agent_connections_rejected_total");

    const refill = await openMany(port("echo"), opts.maxConnections, opts.batch);
    const newlyRejected = sumOf(await metrics(a), "tailnet_agent_connections_rejected_total") - rejectedTotal;
    for (const socket of refill.open) socket.destroy();
    await mon.stop();
    stops.length = 0;

    return {
      options: { ...opts },
      fdLimit: { load, agent: agentLimit, needed },
      maxActiveSeen: mon.seen.maxActive,
      rejected: { echo: rejectedEcho + dialErrorsEcho, total: rejectedTotal },
      flood: { echoed: flood.open.length, refused: flood.refused, openMs },
      healthy: {
        tcpRoundTrips: tcp.counts.roundTrips,
        tcpMismatches: tcp.counts.mismatches,
        tcpDuringFlood: during.tcp,
        httpsOk: https.counts.ok,
        httpsFailed: https.counts.failed,
        httpsDuringFlood: during.https,
      },
      healthz: { checks: mon.seen.checks, failures: mon.seen.failures, maxMs: mon.seen.maxMs },
      slowloris: { ...slow.state },
      stalled: {
        clients: opts.stalled,
        bytesPushedMiB: stalled.bytesPushedMiB,
        readByAgentMiB,
        heldAfterClientsLeft,
        releasedAfterMs,
      },
      resets: { ...resets.counts },
      memory: {
        settledRssMiB,
        peakRssMiB: mon.seen.peakRss,
        endRssMiB: vmRssMiB(a.pid),
        peakHeapUsedMiB: mon.seen.peakHeap,
        peakExternalMiB: mon.seen.peakExternal,
      },
      activeAfter,
      refill: { opened: opts.maxConnections, echoed: refill.open.length, newlyRejected },
      agentProblems: [...a.problems],
    };
  } finally {
    for (const stop of stops.reverse()) await stop();
    await agent?.stop();
    up.close();
    await pki.cleanup();
  }
}

/** The invariants; empty when the agent held. */
export function stressViolations(r: StressReport): string[] {
  const o = r.options;
  const v: string[] = [];
  if (r.maxActiveSeen > o.maxConnections)
    v.push(`connections_active reached ${r.maxActiveSeen} > limit ${o.maxConnections}`);
  if (o.clients > o.maxConnections && r.flood.refused === 0) v.push("the flood never hit the connection limit");
  if (r.flood.echoed > o.maxConnections) v.push(`${r.flood.echoed} flood connections admitted > ${o.maxConnections}`);
  if (r.rejected.echo !== r.flood.refused)
    v.push(`rejected+dial errors on echo = ${r.rejected.echo}, but ${r.flood.refused} flood clients were refused`);
  if (r.healthy.tcpMismatches > 0) v.push(`${r.healthy.tcpMismatches} healthy TCP round trips came back wrong`);
  if (r.healthy.tcpDuringFlood === 0) v.push("the healthy TCP client got no echo during the flood");
  if (r.healthy.httpsFailed > 0) v.push(`${r.healthy.httpsFailed} healthy HTTPS requests failed`);
  if (r.healthy.httpsDuringFlood === 0) v.push("the healthy HTTPS client got no answer during the flood");
  if (r.healthz.failures > 0) v.push(`/healthz failed ${r.healthz.failures} of ${r.healthz.checks} times`);
  if (r.slowloris.closedByAgent !== r.slowloris.total)
    v.push(`${r.slowloris.total - r.slowloris.closedByAgent} slowloris clients were never closed by the agent`);
  if (r.resets.completed !== r.resets.attempts)
    v.push(`${r.resets.attempts - r.resets.completed} connections to the resetting target hung`);
  if (r.memory.peakRssMiB >= o.memoryLimitMiB)
    v.push(`agent RSS peaked at ${r.memory.peakRssMiB.toFixed(0)} MiB >= ${o.memoryLimitMiB} MiB`);
  if (r.activeAfter !== 0) v.push(`connections_active is ${r.activeAfter} after every client closed`);
  if (r.refill.echoed !== r.refill.opened || r.refill.newlyRejected !== 0)
    v.push(
      `refill after the storm: ${r.refill.echoed}/${r.refill.opened} echoed, ${r.refill.newlyRejected} rejected (a leaked slot)`,
    );
  if (r.agentProblems.length > 0) v.push(`agent logged: ${r.agentProblems.slice(0, 3).join(" | ")}`);
  return v;
}

// `npm run stress`
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const opts: StressOptions = {
    clients: env("STRESS_CLIENTS", 10_000),
    batch: env("STRESS_BATCH", 500),
    holdMs: env("STRESS_HOLD_SECONDS", 20) * 1000,
    maxConnections: env("STRESS_MAX_CONNECTIONS", 4096),
    headerTimeoutSeconds: env("STRESS_HEADER_TIMEOUT_SECONDS", 10),
    idleTimeoutSeconds: env("STRESS_IDLE_TIMEOUT_SECONDS", 60),
    slowloris: env("STRESS_SLOWLORIS", 200),
    stalled: env("STRESS_STALLED", 50),
    resetters: env("STRESS_RESETTERS", 20),
    memoryLimitMiB: env("STRESS_MEMORY_LIMIT_MIB", 256),
    agentNodeArgs: (process.env.STRESS_AGENT_NODE_ARGS ?? POD_HEAP).split(" ").filter((arg) => arg !== ""),
  };
  const { soft, hard } = fileLimits();
  console.log(`open files: soft ${soft}, hard ${hard}; needed ${JSON.stringify(fdsNeeded(opts))}`);
  const dir = await mkdtemp(join(tmpdir(), "agent-stress-"));
  try {
    opts.bundle = process.env.STRESS_FROM_SOURCE ? undefined : await bundleAgent(dir);
    const report = await runAgentStress(opts);
    console.log(JSON.stringify(report, null, 2));
    const violations = stressViolations(report);
    for (const line of violations) console.error(`VIOLATION: ${line}`);
    console.log(violations.length === 0 ? "agent stress: all invariants held" : "agent stress: FAILED");
    process.exitCode = violations.length === 0 ? 0 : 1;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
