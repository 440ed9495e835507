/**
 * HTTP/2 and gRPC through the agent against HAProxy, in the same run and against the same h2c upstream:
 * - HTTP/2 requests/s: GETs over TLS with ALPN h2 (4 connections × 16 concurrent streams), to an h2c backend;
 * - gRPC unary calls/s: POSTs with a length-prefixed message, answered with one message and `grpc-status`
 *   in trailers (what a gRPC client and server exchange per unary call), same connections and streams.
 * The agent (ingress role, one http expose, backend `protocol: h2c`) and HAProxy (`nbthread 1`, `bind … alpn
 * h2,http/1.1`, `server … proto h2`) each run as their own process, the upstream in one more; this process
 * is the load client (node:http2). Systems alternate in rounds; figures are medians, CPU per request is the
 * proxy's own over all rounds. `npx tsx bench/agent/h2.ts` runs this section alone.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { type ClientHttp2Session, connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { createTestPki } from "../../test/fakes/agent/pki.js";
import {
  bundleAgent,
  type Child,
  cpuMs,
  findTool,
  freePort,
  median,
  own,
  spawnAgent,
  WEB_NAME,
  waitForPort,
} from "./harness.js";

/** The h2c upstream for a `node -e` child: a small body on GET, an echoed message with trailers on gRPC. */
const H2C_UPSTREAM_JS = `
const http2 = require("node:http2");
const body = Buffer.from("hello from the backend\\n");
const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  if (headers["content-type"] === "application/grpc") {
    const parts = [];
    stream.on("data", (c) => parts.push(c));
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(Buffer.concat(parts));
    });
    return;
  }
  stream.resume();
  stream.respond({ ":status": 200, "content-type": "text/plain", "content-length": body.length });
  stream.end(body);
});
server.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ port: server.address().port }) + "\\n"));
`;

const CONNECTIONS = 4;
const STREAMS = 16;
/** A gRPC message: the 5-byte prefix and 32 bytes. */
const GRPC_MESSAGE = Buffer.concat([Buffer.from([0, 0, 0, 0, 32]), Buffer.alloc(32, 0x61)]);

export interface H2Figures {
  /** Median over rounds. */
  rps: number;
  errors: number;
  cpuMicrosPerRequest: number;
}

export interface H2Bench {
  seconds: number;
  rounds: number;
  agent: { h2: H2Figures; grpc: H2Figures };
  haproxy?: { h2: H2Figures; grpc: H2Figures };
  skipped: string[];
}

async function startH2cUpstream(): Promise<Child & { port: number }> {
  const proc = spawn(process.execPath, ["-e", H2C_UPSTREAM_JS], { stdio: ["ignore", "pipe", "inherit"] });
  const child = own(proc, "h2c upstream");
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout as NodeJS.ReadableStream }).once("line", resolve);
    proc.once("exit", () => reject(new Error("h2c upstream exited before listening")));
  });
  return { ...child, port: (JSON.parse(line) as { port: number }).port };
}

async function startH2Haproxy(bin: string, upstream: number, pemFile: string, dir: string) {
  const port = await freePort();
  const cfg = `global
  maxconn 8000
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend web
  bind 127.0.0.1:${port} ssl crt ${pemFile} alpn h2,http/1.1
  default_backend web
backend web
  server s 127.0.0.1:${upstream} proto h2
`;
  const file = join(dir, "haproxy-h2.cfg");
  await writeFile(file, cfg);
  const child = own(spawn(bin, ["-db", "-f", file], { stdio: ["ignore", "ignore", "inherit"] }), "haproxy");
  try {
    await waitForPort(port, "haproxy");
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { ...child, port };
}

/** Keeps STREAMS requests in flight on each of CONNECTIONS sessions for `seconds`; counts completed ones. */
export async function h2Load(
  port: number,
  ca: string,
  seconds: number,
  kind: "h2" | "grpc",
): Promise<{ rps: number; total: number; errors: number }> {
  const sessions: ClientHttp2Session[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const s = connect(`https://127.0.0.1:${port}`, { ca, servername: WEB_NAME });
    s.on("error", () => {});
    sessions.push(s);
  }
  let total = 0;
  let errors = 0;
  const until = Date.now() + seconds * 1000;
  const one = (session: ClientHttp2Session) =>
    new Promise<void>((resolve) => {
      const headers =
        kind === "grpc"
          ? { ":method": "POST", ":path": "/bench.Echo/Say", "content-type": "application/grpc", te: "trailers" }
          : { ":method": "GET", ":path": "/" };
      const stream = session.request({ ":authority": WEB_NAME, ...headers }, { endStream: kind === "h2" });
      let ok = false;
      stream.on("response", (h) => (ok = h[":status"] === 200));
      if (kind === "grpc") stream.on("trailers", (t) => (ok = ok && t["grpc-status"] === "0"));
      stream.on("data", () => {});
      stream.on("error", () => {});
      stream.on("close", () => {
        if (ok && stream.rstCode === 0) total++;
        else errors++;
        resolve();
      });
      if (kind === "grpc") stream.end(GRPC_MESSAGE);
    });
  const worker = async (session: ClientHttp2Session) => {
    while (Date.now() < until && !session.destroyed) await one(session);
  };
  const started = process.hrtime.bigint();
  await Promise.all(sessions.flatMap((s) => Array.from({ length: STREAMS }, () => worker(s))));
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  for (const s of sessions) s.destroy();
  return { rps: total / elapsed, total, errors };
}

export async function benchH2(opts: { seconds?: number; rounds?: number } = {}): Promise<H2Bench> {
  const seconds = opts.seconds ?? 3;
  const rounds = opts.rounds ?? 3;
  const skipped: string[] = [];
  const haproxyBin = findTool("haproxy");
  if (!haproxyBin) skipped.push("haproxy not installed (scripts/ci-deps.sh installs it): HTTP/2 baseline skipped");
  const dir = await mkdtemp(join(tmpdir(), "agent-h2-bench-"));
  const children: Child[] = [];
  const pki = await createTestPki();
  try {
    const cert = await pki.issue({ names: [WEB_NAME] });
    const pemFile = join(dir, "web.pem");
    await writeFile(pemFile, `${cert.certPem}${cert.keyPem}`);
    const up = await startH2cUpstream();
    children.push(up);
    const bundle = await bundleAgent(dir).catch(() => undefined);
    // as in cases.ts: e.g. BENCH_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=.tmp/prof" profiles the agent
    const agentNodeArgs = process.env.BENCH_AGENT_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
    const agent = await spawnAgent(
      {
        role: "ingress",
        metricsPort: 0,
        listenHost: "127.0.0.1",
        exposes: [
          {
            name: "web",
            listenPort: 0,
            mode: "http",
            backend: { host: "127.0.0.1", port: up.port, protocol: "h2c" },
            tls: { certFile: cert.certFile, keyFile: cert.keyFile },
            names: [WEB_NAME],
          },
        ],
      },
      bundle,
      agentNodeArgs,
    );
    children.push(agent);
    const systems = new Map<string, { port: number; pid: number }>([
      ["agent", { port: agent.ports.get("web") ?? 0, pid: agent.pid }],
    ]);
    if (haproxyBin) {
      const haproxy = await startH2Haproxy(haproxyBin, up.port, pemFile, dir);
      children.push(haproxy);
      systems.set("haproxy", { port: haproxy.port, pid: haproxy.pid });
    }
    for (const s of systems.values())
      for (const kind of ["h2", "grpc"] as const) await h2Load(s.port, pki.caPem, 0.5, kind);
    const tallies = new Map<string, { rates: number[]; errors: number; total: number; cpu: number }>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [...systems.keys()] : [...systems.keys()].reverse();
      for (const name of order)
        for (const kind of ["h2", "grpc"] as const) {
          const s = systems.get(name) as { port: number; pid: number };
          const key = `${name}/${kind}`;
          const t = tallies.get(key) ?? { rates: [], errors: 0, total: 0, cpu: 0 };
          tallies.set(key, t);
          const before = cpuMs(s.pid);
          const r = await h2Load(s.port, pki.caPem, seconds, kind);
          t.cpu += cpuMs(s.pid) - before;
          t.rates.push(r.rps);
          t.errors += r.errors;
          t.total += r.total;
        }
    }
    const figures = (key: string): H2Figures => {
      const t = tallies.get(key) as { rates: number[]; errors: number; total: number; cpu: number };
      return { rps: median(t.rates), errors: t.errors, cpuMicrosPerRequest: (t.cpu * 1000) / Math.max(1, t.total) };
    };
    return {
      seconds,
      rounds,
      agent: { h2: figures("agent/h2"), grpc: figures("agent/grpc") },
      ...(systems.has("haproxy") ? { haproxy: { h2: figures("haproxy/h2"), grpc: figures("haproxy/grpc") } } : {}),
      skipped,
    };
  } finally {
    for (const child of children.reverse()) await child.stop();
    await pki.cleanup();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The rows bench/run.ts prints. */
export function h2Rows(b: H2Bench): [string, string][] {
  const shape = `${CONNECTIONS} conns × ${STREAMS} streams`;
  const fig = (f: H2Figures) =>
    `${f.rps.toFixed(0)}/s (${f.cpuMicrosPerRequest.toFixed(0)} µs CPU each, ${f.errors} errors)`;
  const rows: [string, string][] = [
    [`agent HTTP/2 req/s to h2c, ${shape}`, fig(b.agent.h2)],
    [`agent gRPC unary calls/s to h2c, ${shape}`, fig(b.agent.grpc)],
  ];
  const h = b.haproxy;
  if (h) {
    const ratio = (a: H2Figures, base: H2Figures) =>
      `${a.rps.toFixed(0)} / ${base.rps.toFixed(0)} = ${(a.rps / base.rps).toFixed(2)}; CPU per request ${(a.cpuMicrosPerRequest / base.cpuMicrosPerRequest).toFixed(2)} (haproxy ${base.cpuMicrosPerRequest.toFixed(0)} µs, ${base.errors} errors)`;
    rows.push(
      ["agent/haproxy HTTP/2 req/s", ratio(b.agent.h2, h.h2)],
      ["agent/haproxy gRPC calls/s", ratio(b.agent.grpc, h.grpc)],
    );
  }
  for (const s of b.skipped) rows.push(["skipped", s]);
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const bench = await benchH2({
    seconds: Number(process.env.BENCH_H2_SECONDS ?? 3),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  });
  for (const [k, v] of h2Rows(bench)) console.log(`${k}  ${v}`);
}
