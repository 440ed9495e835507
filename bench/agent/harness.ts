/**
 * The agent bench's harness (bench/agent/cases.ts holds what is measured): the processes it runs — the agent
 * as an esbuild bundle of its entry (or at a git revision, for before/after), the upstreams (echo, sink, a
 * keep-alive HTTP backend, a bare Node HTTPS server) in one `node -e` child, HAProxy and socat — each killed by
 * its own pid; and the load generators (TCP push, sequential short connections, autocannon HTTPS), which run
 * in the bench's own process, plus /proc readers for CPU and RSS.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import type { AgentConfigInput } from "../../src/contract/agent-config.js";
import { bundleForNode } from "../measure.js";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A child process we started: killed by its own pid, never by name. */
export interface Child {
  readonly pid: number;
  stop(): Promise<void>;
}

export function own(proc: ChildProcess, what: string, graceMs = 0): Child {
  if (proc.pid === undefined) throw new Error(`${what} did not start`);
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  return {
    pid: proc.pid,
    async stop() {
      // graceMs: SIGTERM first, so a profiled child (--cpu-prof) exits normally and writes its profile
      if (graceMs > 0 && proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        await Promise.race([exited, sleep(graceMs)]);
      }
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await exited;
    },
  };
}

/** Resident set size of a process in MiB, from /proc/<pid>/status (VmRSS). */
export function vmRssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** The soft open-files limit of a process (this one by default), from /proc/<pid>/limits. */
export function openFilesLimit(pid: number | "self" = "self"): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"));
  return !match || match[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(match[1]);
}

export interface AgentProcess extends Child {
  metricsPort: number;
  /** Bound data port by target/expose name (from the agent's "listening" log lines). */
  ports: Map<string, number>;
  /** Lines the agent logged at warn or error. */
  problems: string[];
}

/**
 * Bundles the agent entry (runAgent) into one ESM file with esbuild (tsx's own dependency), so the agent can
 * run as compiled JavaScript like in the image instead of through the tsx loader, whose transform cache
 * would inflate RSS figures. Undefined when esbuild is not available.
 */
export async function bundleAgent(dir: string, root = REPO_ROOT): Promise<string | undefined> {
  const entry = join(dir, "agent-entry.ts");
  const main = JSON.stringify(join(root, "src", "agent", "main.ts"));
  await writeFile(entry, `import { runAgent } from ${main};\nawait runAgent(process.argv.slice(2));\n`);
  return bundleForNode(entry, join(dir, "agent.mjs"));
}

/** The TCP rows' egress agent: targets `sink` and `echo` on the upstream process, ports bound by the kernel. */
export function spawnTcpEgress(
  up: { sink: number; echo: number },
  bundle?: string,
  nodeArgs: readonly string[] = [],
): Promise<AgentProcess> {
  return spawnAgent(
    {
      role: "egress",
      metricsPort: 0,
      listenHost: "127.0.0.1",
      targets: [
        { name: "sink", host: "127.0.0.1", ports: [{ port: up.sink, listenPort: 0 }] },
        { name: "echo", host: "127.0.0.1", ports: [{ port: up.echo, listenPort: 0 }] },
      ],
    },
    bundle,
    nodeArgs,
  );
}

/**
 * Runs the agent with `--config <file>` and waits until it has started: the bundle from bundleAgent when
 * given, else `tailnet-operator agent` from src/cli.ts through tsx; `nodeArgs` go to node first (e.g. a heap
 * limit). Listen and metrics ports may be 0: the bound ports are read from its log lines.
 */
export async function spawnAgent(
  config: AgentConfigInput,
  bundle?: string,
  nodeArgs: readonly string[] = [],
): Promise<AgentProcess> {
  const dir = await mkdtemp(join(tmpdir(), "agent-bench-"));
  const file = join(dir, "config.json");
  await writeFile(file, JSON.stringify(config));
  const args = [
    ...nodeArgs,
    ...(bundle ? [bundle, "--config", file] : ["--import", "tsx", "src/cli.ts", "agent", "--config", file]),
  ];
  const proc = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    // loopback stands for the pod IP (the agent's metrics default, src/contract/ports.ts POD_IP_HOST)
    env: { ...process.env, LOG_LEVEL: "info", POD_IP: "127.0.0.1" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const child = own(proc, "agent", nodeArgs.length > 0 ? 10_000 : 0);
  const ports = new Map<string, number>();
  const problems: string[] = [];
  const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
  try {
    const metricsPort = await new Promise<number>((resolve, reject) => {
      proc.once("exit", (code) => reject(new Error(`agent exited (${code}) before it started`)));
      lines.on("line", (line) => {
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (entry.level === "warn" || entry.level === "error") problems.push(line);
        if (entry.msg === "listening") ports.set(String(entry.name ?? entry.exposes), Number(entry.port));
        if (entry.msg === "agent started") resolve(Number(entry.metricsPort));
      });
    });
    return {
      ...child,
      metricsPort,
      ports,
      problems,
      async stop() {
        await child.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await child.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A port on 127.0.0.1 that was free a moment ago (for tools that cannot report an ephemeral port). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves once something accepts on the port (a started child process is ready). */
export async function waitForPort(port: number, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = netConnect({ host: "127.0.0.1", port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await sleep(25);
  }
  throw new Error(`${what} is not accepting on 127.0.0.1:${port}`);
}

// The upstreams, as plain JavaScript for a `node -e` child: an echo target, a sink target (reads and drops),
// a keep-alive HTTP backend answering a small fixed body, and (given cert and key files as arguments) a bare
// Node HTTPS server answering that body itself: Node's TLS stack without a proxy hop, to tell the two costs
// apart. It prints its ports as one JSON line.
const UPSTREAMS_JS = `
const net = require("node:net"), http = require("node:http"), https = require("node:https");
const fs = require("node:fs");
const listen = (s) => new Promise((r) => s.listen(0, "127.0.0.1", 4096, () => r(s.address().port)));
const echo = net.createServer({ allowHalfOpen: true }, (s) => { s.on("error", () => s.destroy()); s.pipe(s); });
const sink = net.createServer({ allowHalfOpen: true }, (s) => {
  s.on("error", () => s.destroy()); s.on("end", () => s.end()); s.resume();
});
const body = Buffer.from("hello from the backend\\n");
const web = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { "content-type": "text/plain", "content-length": body.length }); res.end(body);
});
web.keepAliveTimeout = 60000;
const [certFile, keyFile] = process.argv.slice(1);
const tls = certFile && https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
  req.resume();
  res.writeHead(200, { "content-type": "text/plain", "content-length": body.length }); res.end(body);
});
Promise.all([listen(echo), listen(sink), listen(web), tls ? listen(tls) : 0]).then(([echo, sink, http, https]) =>
  process.stdout.write(JSON.stringify({ echo, sink, http, https }) + "\\n"));
`;

export interface Upstreams extends Child {
  echo: number;
  sink: number;
  http: number;
  /** The bare Node HTTPS server (0 when no certificate was given). */
  https: number;
}

export async function startUpstreams(tls?: { certFile: string; keyFile: string }): Promise<Upstreams> {
  const args = ["-e", UPSTREAMS_JS, ...(tls ? [tls.certFile, tls.keyFile] : [])];
  const proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const child = own(proc, "upstreams");
  const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      lines.once("line", resolve);
      proc.once("exit", () => reject(new Error("upstreams exited before listening")));
    });
    return { ...child, ...(JSON.parse(line) as { echo: number; sink: number; http: number; https: number }) };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** The path of a system tool (haproxy installs into /usr/sbin, which a non-login PATH may lack), or undefined. */
export function findTool(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/local/sbin", "/sbin"];
  for (const dir of dirs.filter((d) => d !== "")) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface HaproxyPorts {
  sink: number;
  echo: number;
  /** HTTPS frontend (TLS terminated with `pemFile`). */
  web: number;
}

/** One HAProxy for all three frontends, one thread (the agent is one Node process), foreground. */
export async function startHaproxy(bin: string, up: Upstreams, pemFile: string, dir: string) {
  const ports: HaproxyPorts = { sink: await freePort(), echo: await freePort(), web: await freePort() };
  const cfg = `global
  maxconn 8000
  nbthread 1
defaults
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend sink
  mode tcp
  bind 127.0.0.1:${ports.sink}
  default_backend sink
backend sink
  mode tcp
  server s 127.0.0.1:${up.sink}
frontend echo
  mode tcp
  bind 127.0.0.1:${ports.echo}
  default_backend echo
backend echo
  mode tcp
  server s 127.0.0.1:${up.echo}
frontend web
  mode http
  bind 127.0.0.1:${ports.web} ssl crt ${pemFile} alpn http/1.1
  default_backend web
backend web
  mode http
  server s 127.0.0.1:${up.http}
`;
  const file = join(dir, "haproxy.cfg");
  await writeFile(file, cfg);
  const child = own(spawn(bin, ["-db", "-f", file], { stdio: ["ignore", "ignore", "inherit"] }), "haproxy");
  try {
    for (const port of Object.values(ports)) await waitForPort(port, "haproxy");
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { ...child, ports };
}

// The least a Node TCP forwarder does per connection: accept, connect, pipe both ways, destroy both on an error;
// no budget, metrics, idle or stall bounds. What the agent costs beyond Node itself is the distance to it.
const NODE_FLOOR_JS = `
const net = require("node:net");
const forward = (port) => net.createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
  const upstream = net.connect({ host: "127.0.0.1", port, allowHalfOpen: true, noDelay: true });
  const both = () => { client.destroy(); upstream.destroy(); };
  client.on("error", both); upstream.on("error", both);
  client.pipe(upstream); upstream.pipe(client);
});
const listen = (s) => new Promise((r) => s.listen(0, "127.0.0.1", 4096, () => r(s.address().port)));
const [sink, echo] = process.argv.slice(1).map(Number);
Promise.all([listen(forward(sink)), listen(forward(echo))]).then(([sink, echo]) =>
  process.stdout.write(JSON.stringify({ sink, echo }) + "\\n"));
`;

/** A bare Node forwarder in front of the sink and echo upstreams (NODE_FLOOR_JS): Node's own floor. */
export async function startNodeFloor(up: { sink: number; echo: number }) {
  const proc = spawn(process.execPath, ["-e", NODE_FLOOR_JS, String(up.sink), String(up.echo)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const child = own(proc, "node forwarder");
  const lines = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      lines.once("line", resolve);
      proc.once("exit", () => reject(new Error("node forwarder exited before listening")));
    });
    return { ...child, ...(JSON.parse(line) as { sink: number; echo: number }) };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** socat forwarding one port, a process per connection (`fork`), as people do. */
export async function startSocat(bin: string, target: number) {
  const port = await freePort();
  const args = [`TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr,backlog=1024`, `TCP:127.0.0.1:${target}`];
  const child = own(spawn(bin, args, { stdio: ["ignore", "ignore", "inherit"] }), "socat");
  try {
    await waitForPort(port, "socat");
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { ...child, port };
}

/** 16 connections push 64 KiB writes into the sink for `seconds`; bytes written, and time until all closed. */
export async function pushThrough(
  port: number,
  seconds: number,
  connections = 16,
): Promise<{ bytes: number; seconds: number }> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const started = process.hrtime.bigint();
  const deadline = Date.now() + seconds * 1000;
  const written = await Promise.all(
    Array.from(
      { length: connections },
      () =>
        new Promise<number>((resolve, reject) => {
          const socket = netConnect({ host: "127.0.0.1", port, allowHalfOpen: true, noDelay: true });
          const pump = () => {
            while (Date.now() < deadline) {
              if (!socket.write(chunk)) {
                socket.once("drain", pump);
                return;
              }
            }
            socket.end();
          };
          socket.once("connect", pump);
          socket.resume();
          socket.once("error", reject);
          socket.once("close", () => resolve(socket.bytesWritten));
        }),
    ),
  );
  return { bytes: written.reduce((a, b) => a + b, 0), seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

export interface Latency {
  p50ms: number;
  p99ms: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/** `count` sequential short connections: connect, send one byte, time until its echo arrives, close (ms each). */
export async function roundTrips(port: number, count: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    await new Promise<void>((resolve, reject) => {
      const socket: Socket = netConnect({ host: "127.0.0.1", port, noDelay: true });
      socket.once("connect", () => socket.write("x"));
      socket.once("data", () => {
        samples.push(Number(process.hrtime.bigint() - started) / 1e6);
        socket.destroy();
        resolve();
      });
      socket.once("error", reject);
    });
  }
  return samples;
}

/** CPU time a process and its reaped children (socat's forks) have used, in ms (/proc/<pid>/stat, 100 Hz). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
}

export const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

export const WEB_NAME = "web.bench.test";

export async function httpsLoad(port: number, ca: string, seconds: number) {
  const r = await autocannon({
    url: `https://127.0.0.1:${port}/`,
    headers: { host: WEB_NAME },
    servername: WEB_NAME,
    tlsOptions: { ca },
    connections: 16,
    pipelining: 1,
    duration: seconds,
  });
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p99ms: r.latency.p99,
    errors: r.errors + r.non2xx + r.timeouts,
  };
}

/**
 * The agent's src/ at git revision `rev`, bundled (for a before/after comparison in one run). Extracted under
 * .tmp/ in the repository so the bundler resolves dependencies from its node_modules.
 */
export async function bundleAgentAt(rev: string, dir: string): Promise<string | undefined> {
  const root = join(REPO_ROOT, ".tmp", `agent-at-${rev.replace(/[^\w.-]/g, "_")}`);
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  const archive = spawnSync("git", ["archive", rev, "src"], { cwd: REPO_ROOT, maxBuffer: 1 << 28 });
  if (archive.status !== 0) throw new Error(`git archive ${rev}: ${archive.stderr.toString().trim()}`);
  const untar = spawnSync("tar", ["-x", "-C", root], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar: ${untar.stderr.toString().trim()}`);
  const out = join(dir, `before-${Date.now()}`);
  await mkdir(out);
  return bundleAgent(out, root);
}
