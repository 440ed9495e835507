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
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { createServer, connect as netConnect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { pathToFileURL } from "node:url";
import { createTestPki } from "../test/fakes/agent/pki.js";
import { type AgentProcess, bundleAgent, spawnAgent, vmRssMiB } from "./agent.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const WEB_NAME = "web.stress.test";

/**
 * The heap Node 22 gives itself in the agent container: it sizes V8 from the cgroup memory limit (256Mi),
 * old generation = limit / 4 × 2 = 128 MiB. Outside a cgroup V8 would size from the host's RAM and let
 * garbage pile up far beyond what the pod would see, so the agent under stress gets the pod's heap.
 */
export const POD_HEAP = "--max-old-space-size=128";

export interface StressOptions {
  /** Flood connections to the echo expose, opened `batch` at a time and held for holdMs. */
  clients: number;
  batch: number;
  holdMs: number;
  /** The agent's limits.maxConnections. */
  maxConnections: number;
  /** The agent's limits.headerTimeoutSeconds (slowloris bound). */
  headerTimeoutSeconds: number;
  /**
   * The agent's limits.idleTimeoutSeconds: above holdMs plus the time to open the flood (held connections are
   * idle), and what bounds how long a connection stuck behind the never-reading backend keeps its slot.
   */
  idleTimeoutSeconds: number;
  /** TLS slowloris clients (half silent before the handshake, half dripping headers). */
  slowloris: number;
  /** Clients pushing into the never-reading backend. */
  stalled: number;
  /** Concurrent connect-send-get-reset loops against the resetting target. */
  resetters: number;
  /** Peak agent RSS must stay below this (the agent container's memory limit is 256Mi). */
  memoryLimitMiB: number;
  /** Run the agent from this bundle (bench/agent.ts bundleAgent) instead of src through tsx. */
  bundle?: string;
  /** Extra node arguments for the agent: [POD_HEAP] mimics the agent container's heap sizing. */
  agentNodeArgs?: string[];
}

export interface StressReport {
  options: StressOptions;
  fdLimit: { load: number; agent: number; needed: { load: number; agent: number } };
  /** Highest sum of tailnet_agent_connections_active seen while polling /metrics. */
  maxActiveSeen: number;
  rejected: { echo: number; total: number };
  flood: { echoed: number; refused: number; openMs: number };
  healthy: {
    tcpRoundTrips: number;
    tcpMismatches: number;
    tcpDuringFlood: number;
    httpsOk: number;
    httpsFailed: number;
    httpsDuringFlood: number;
  };
  healthz: { checks: number; failures: number; maxMs: number };
  slowloris: { total: number; closedByAgent: number };
  stalled: {
    clients: number;
    /** What the clients wrote (up to 8 MiB each, or until nothing drained for a second). */
    bytesPushedMiB: number;
    /** What the agent read from them (tailnet_agent_bytes_total{stall,in}): it went on into kernel buffers. */
    readByAgentMiB: number;
    /** connections_active{stall} right after the clients closed their end: the agent cannot see it while paused. */
    heldAfterClientsLeft: number;
    /** Time from the clients leaving until connections_active{stall} was 0 (the idle timeout reaps them). */
    releasedAfterMs: number;
  };
  resets: { attempts: number; completed: number };
  memory: {
    settledRssMiB: number;
    peakRssMiB: number;
    endRssMiB: number;
    peakHeapUsedMiB: number;
    /** Buffers outside the V8 heap (socket data, collected or not): would grow with a buffered stuck stream. */
    peakExternalMiB: number;
  };
  /** connections_active sum once every client closed. */
  activeAfter: number;
  /** After everything closed: maxConnections fresh connections all echoed, none rejected. */
  refill: { opened: number; echoed: number; newlyRejected: number };
  /** Lines the agent logged at warn/error. */
  agentProblems: string[];
}

/** The soft and hard open-files limits of a process, from /proc/<pid>/limits. */
export function fileLimits(pid: number | "self" = "self"): { soft: number; hard: number } {
  const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"));
  const n = (v: string | undefined) => (v === undefined || v === "unlimited" ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: n(match?.[1]), hard: n(match?.[2]) };
}

/** Descriptors each side needs: the load process holds every client plus the upstream ends; the agent two per slot. */
export function fdsNeeded(opts: StressOptions): { load: number; agent: number } {
  return {
    load: opts.clients + opts.maxConnections + opts.slowloris + opts.stalled + opts.resetters + 512,
    agent: 2 * opts.maxConnections + 256,
  };
}

interface Upstreams {
  echo: number;
  stall: number;
  reset: number;
  web: number;
  close(): void;
}

async function startUpstreams(): Promise<Upstreams> {
  const live = new Set<Socket>();
  const track = (socket: Socket) => {
    live.add(socket);
    socket.once("close", () => live.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const echo = createServer({ allowHalfOpen: true }, (s) => {
    track(s);
    s.pipe(s);
  });
  // Never reads: pauseOnConnect leaves every byte in the kernel, so the agent sees backpressure at once.
  const stall = createServer({ pauseOnConnect: true }, track);
  const reset = createServer((s) => {
    track(s);
    s.once("data", () => s.resetAndDestroy());
  });
  const web = createHttpServer((req, res) => {
    req.resume();
    res.end("ok\n");
  });
  web.keepAliveTimeout = 60_000;
  web.on("connection", track);
  const servers: (Server | HttpServer)[] = [echo, stall, reset, web];
  const ports = await Promise.all(
    servers.map(
      (server) =>
        new Promise<number>((resolve) =>
          server.listen(0, "127.0.0.1", 4096, () => resolve((server.address() as { port: number }).port)),
        ),
    ),
  );
  return {
    echo: ports[0],
    stall: ports[1],
    reset: ports[2],
    web: ports[3],
    close() {
      for (const socket of live) socket.destroy();
      for (const server of servers) server.close();
    },
  };
}

/** The value of every sample of a family in Prometheus text, summed over labels matching `labels`. */
function sumOf(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || !line.includes(labels)) continue;
    const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match && match[1] === name) sum += Number(match[3]);
  }
  return sum;
}

/** Polls /healthz and /metrics of the agent and its VmRSS until stopped. */
function monitor(agent: AgentProcess, everyMs: number) {
  const seen = { checks: 0, failures: 0, maxMs: 0, maxActive: 0, peakRss: 0, peakHeap: 0, peakExternal: 0 };
  let running = true;
  const base = `http://127.0.0.1:${agent.metricsPort}`;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const res = await fetch(`${base}/healthz`);
        await res.text();
        if (res.status !== 200) seen.failures++;
      } catch {
        seen.failures++;
      }
      seen.checks++;
      seen.maxMs = Math.max(seen.maxMs, performance.now() - started);
      try {
        const text = await (await fetch(`${base}/metrics`)).text();
        seen.maxActive = Math.max(seen.maxActive, sumOf(text, "tailnet_agent_connections_active"));
        seen.peakHeap = Math.max(seen.peakHeap, sumOf(text, "nodejs_heap_size_used_bytes") / 2 ** 20);
        seen.peakExternal = Math.max(seen.peakExternal, sumOf(text, "nodejs_external_memory_bytes") / 2 ** 20);
      } catch {
        // /healthz failures are what count; a missed scrape only loses a sample
      }
      seen.peakRss = Math.max(seen.peakRss, vmRssMiB(agent.pid));
      await sleep(everyMs);
    }
  })();
  return {
    seen,
    async stop() {
      running = false;
      await loop;
    },
  };
}

async function metrics(agent: AgentProcess): Promise<string> {
  return (await fetch(`http://127.0.0.1:${agent.metricsPort}/metrics`)).text();
}

/** Connects, sends a few bytes, and resolves with the socket once they come back, or undefined when refused. */
function echoConnection(port: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: "127.0.0.1", port });
    const probe = Buffer.from("flood-probe-1234");
    let got = 0;
    const onData = (chunk: Buffer) => {
      got += chunk.length;
      if (got < probe.length) return;
      socket.off("data", onData);
      socket.off("close", onClose);
      resolve(socket);
    };
    const onClose = () => resolve(undefined);
    socket.on("error", () => socket.destroy());
    socket.once("connect", () => socket.write(probe));
    socket.on("data", onData);
    socket.once("close", onClose);
  });
}

/** Opens n echo connections, `batch` in flight at a time; the refused ones are counted, the rest returned open. */
async function openMany(port: number, n: number, batch: number): Promise<{ open: Socket[]; refused: number }> {
  const open: Socket[] = [];
  let refused = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(batch, n) }, async () => {
      while (next < n) {
        next++;
        const socket = await echoConnection(port);
        if (socket) open.push(socket);
        else refused++;
      }
    }),
  );
  return { open, refused };
}

/** A client that sends 1 KiB every few ms on one connection and checks the echo, until stopped. */
async function healthyTcp(port: number) {
  const socket = await echoConnection(port);
  if (!socket) throw new Error("healthy TCP client was refused before the flood");
  const counts = { roundTrips: 0, mismatches: 0 };
  let running = true;
  const loop = (async () => {
    let i = 0;
    while (running && !socket.destroyed) {
      const payload = Buffer.alloc(1024, i++ % 251);
      const back = await new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        let got = 0;
        const onData = (chunk: Buffer) => {
          chunks.push(chunk);
          got += chunk.length;
          if (got >= payload.length) done();
        };
        const done = () => {
          socket.off("data", onData);
          socket.off("close", done);
          resolve(Buffer.concat(chunks));
        };
        socket.on("data", onData);
        socket.once("close", done);
        socket.write(payload);
      });
      if (back.equals(payload)) counts.roundTrips++;
      else counts.mismatches++;
      await sleep(20);
    }
  })();
  return {
    counts,
    async stop() {
      running = false;
      await loop;
      socket.destroy();
    },
  };
}

/** An HTTPS keep-alive client (one socket) asking every few ms, until stopped. */
async function healthyHttps(port: number, ca: string) {
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca, servername: WEB_NAME });
  const ask = () =>
    new Promise<number>((resolve) => {
      const req = httpsRequest({ host: "127.0.0.1", port, path: "/", agent, headers: { host: WEB_NAME } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", () => resolve(0));
      req.end();
    });
  if ((await ask()) !== 200) throw new Error("healthy HTTPS client failed before the flood");
  const counts = { ok: 1, failed: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      if ((await ask()) === 200) counts.ok++;
      else counts.failed++;
      await sleep(20);
    }
  })();
  return {
    counts,
    async stop() {
      running = false;
      await loop;
      agent.destroy();
    },
  };
}

/** TLS slowloris clients: even ones never start the handshake, odd ones drip header lines and never finish. */
function slowloris(port: number, n: number, ca: string) {
  const state = { total: n, closedByAgent: 0 };
  const sockets: Socket[] = [];
  let stopping = false;
  for (let i = 0; i < n; i++) {
    let socket: Socket;
    if (i % 2 === 0) {
      socket = netConnect({ host: "127.0.0.1", port });
    } else {
      const tls = tlsConnect({ host: "127.0.0.1", port, servername: WEB_NAME, ca });
      let drip: NodeJS.Timeout | undefined;
      tls.once("secureConnect", () => {
        tls.write(`GET / HTTP/1.1\r\nhost: ${WEB_NAME}\r\n`);
        drip = setInterval(() => tls.write("x-slow: 1\r\n"), 250);
      });
      tls.once("close", () => clearInterval(drip));
      socket = tls;
    }
    socket.resume(); // a 408 may come back before the close
    socket.on("error", () => socket.destroy());
    socket.once("close", () => {
      if (!stopping) state.closedByAgent++;
    });
    sockets.push(socket);
  }
  return {
    state,
    stop() {
      stopping = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Clients that push into the never-reading backend until nothing drains for a second (or 8 MiB each). */
async function stalledClients(port: number, n: number) {
  const chunk = Buffer.alloc(64 * 1024, 0x73);
  const sockets: Socket[] = [];
  const pushed = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<number>((resolve) => {
          const socket = netConnect({ host: "127.0.0.1", port });
          sockets.push(socket);
          let timer: NodeJS.Timeout | undefined;
          const done = () => {
            clearTimeout(timer);
            socket.off("drain", push);
            resolve(socket.bytesWritten - socket.writableLength);
          };
          const push = () => {
            clearTimeout(timer);
            while (socket.bytesWritten < 8 * 2 ** 20) {
              if (!socket.write(chunk)) {
                timer = setTimeout(done, 1000);
                return;
              }
            }
            done();
          };
          socket.on("drain", push);
          socket.on("error", () => socket.destroy());
          socket.once("close", done);
          socket.once("connect", push);
        }),
    ),
  );
  return {
    bytesPushedMiB: pushed.reduce((a, b) => a + b, 0) / 2 ** 20,
    stop() {
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Loops that connect to the resetting target, send, and wait for the reset to come through, until stopped. */
function resetLoops(port: number, n: number) {
  const counts = { attempts: 0, completed: 0 };
  let running = true;
  const loops = Array.from({ length: n }, async () => {
    while (running) {
      counts.attempts++;
      await new Promise<void>((resolve) => {
        const socket = netConnect({ host: "127.0.0.1", port });
        socket.on("error", () => socket.destroy());
        socket.once("connect", () => socket.write("ping"));
        socket.resume();
        socket.once("close", () => resolve());
      });
      counts.completed++;
      await sleep(10);
    }
  });
  return {
    counts,
    /** Waits up to 5 s for attempts in flight; one still open then is a hang (completed < attempts). */
    async stop() {
      running = false;
      await Promise.race([Promise.all(loops), sleep(5000)]);
    },
  };
}

async function waitFor(predicate: () => boolean | Promise<boolean>, maxMs: number): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  while (performance.now() < deadline) {
    if (await predicate()) return true;
    await sleep(50);
  }
  return predicate();
}

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
