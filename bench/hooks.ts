/**
 * Sync hook throughput and p99 against a fastify echo of the same payload (an egress with 16 targets and its
 * observed children, plus its Tailnet and credentials in related). The hook server (`tailnet-operator serve`,
 * an esbuild bundle as the image runs it; src through tsx when esbuild is missing) and the echo
 * (bench/echo-server.ts, bundled the same way) each run as their own process, so the load generator
 * (autocannon, Metacontroller's 5 workers, in this process) does not steal their event loop. Several rounds,
 * echo and sync alternating; the figures are medians with their spread (min–max over the rounds). Plus the
 * Headscale calls a wave of 1,000 egress syncs costs (a count, measured in process).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import autocannon from "autocannon";
import { configFrom } from "../src/config.js";
import type { K8sObject } from "../src/k8s/objects.js";
import { buildServer } from "../src/server/app.js";
import { startFakeHeadscale } from "../test/fakes/headscale/index.js";
import { parentObject, syncRequest } from "../test/fixtures/hooks.js";
import { bundleForNode } from "./measure.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.BENCH_HOOK_ROUNDS ?? 5);

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface HookBench {
  payloadBytes: number;
  rounds: number;
  /** "bundle" (esbuild, as the image) or "tsx" (no esbuild). */
  build: string;
  sync: { rps: Spread; p99ms: Spread };
  echo: { rps: Spread; p99ms: Spread };
  /** Per round sync/echo, then the median and spread of those ratios. */
  rpsRatio: Spread;
  p99Ratio: Spread;
  waveSyncs: number;
  waveHeadscaleCalls: number;
  /** Peak RSS of the hook server process (VmHWM). */
  rssMiB: number;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

export function spread(values: number[]): Spread {
  const v = [...values].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  return { median, min: v[0], max: v[v.length - 1] };
}

function egressWorld(url: string, apiKey: string, i: number) {
  const tailnet = parentObject("Tailnet", "home", {
    headscale: { url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
    allowedEgressTargets: ["100.64.0.0/10"],
  });
  const creds: K8sObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
    data: { url: b64(url), apiKey: b64(apiKey) },
  };
  const targets = Array.from({ length: 16 }, (_, t) => ({
    name: `db-${t}`,
    host: `100.64.0.${t + 10}`,
    ports: [{ port: 5432 }],
  }));
  const egress = parentObject(
    "TailnetEgress",
    `shop-${i}`,
    { tailnetRef: { name: "home" }, targets },
    { namespace: "shop" },
  );
  return { tailnet, creds, egress };
}

async function load(url: string, body: string, seconds: number) {
  const r = await autocannon({
    url,
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
    connections: 5,
    pipelining: 1,
    duration: seconds,
  });
  return { rps: r.requests.average, p99ms: r.latency.p99, errors: r.errors + r.non2xx };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** An esbuild bundle of `entry` (dependencies external, as in the image); undefined without esbuild. */
export function bundle(entry: string, name: string): Promise<string | undefined> {
  // under .tmp/ of the repo, so `../package.json` (read relative to the bundle) is the repo's
  return bundleForNode(entry, join(REPO_ROOT, ".tmp", `${name}-${process.pid}.mjs`), { externalPackages: true });
}

/** Spawns `args` (node arguments) with PORT set and waits for GET /healthz. */
export async function startProcess(
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ALLOW_UNAUTHENTICATED_HOOKS: "true", ...env, PORT: String(port), NODE_ENV: "production" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`bench process exited with ${child.exitCode}`);
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { child, url };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error("bench process did not come up within 60 s");
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  if (child.exitCode === null) child.kill("SIGKILL");
}

export function peakRssMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+) kB$/m);
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

export async function benchHooks(seconds = 5, rounds = ROUNDS): Promise<HookBench> {
  const hs = await startFakeHeadscale();
  const config = configFrom({ logLevel: "silent", hooks: { maxInFlight: 1000 } });
  const dir = mkdtempSync(join(tmpdir(), "bench-hooks-"));
  const configFile = join(dir, "config.yaml");
  writeFileSync(
    configFile,
    "logLevel: silent\nhooks: { maxInFlight: 1000 }\nheadscale: { timeoutSeconds: 5, cacheTTLSeconds: 10 }\n",
  );
  const entry = join(dir, "server.ts");
  writeFileSync(entry, `export { main } from ${JSON.stringify(join(REPO_ROOT, "src", "cli.ts"))};\n`);
  const serverBundle = await bundle(entry, "bench-hooks-server");
  const echoBundle = serverBundle
    ? await bundle(join(REPO_ROOT, "bench", "echo-server.ts"), "bench-hooks-echo")
    : undefined;
  // `node -e`: argv[1] is not the bundle, so the CLI's own "run when main" check stays off
  const serverArgs = serverBundle
    ? [
        "--input-type=module",
        "-e",
        `const { main } = await import(${JSON.stringify(pathToFileURL(serverBundle).href)}); await main(["serve", "--config", ${JSON.stringify(configFile)}]);`,
      ]
    : ["--import", "tsx", "src/cli.ts", "serve", "--config", configFile];
  const echoArgs = echoBundle ? [echoBundle] : ["--import", "tsx", "bench/echo-server.ts"];
  // e.g. BENCH_HOOKS_NODE_ARGS="--cpu-prof --cpu-prof-dir=.tmp/prof" to profile the hook server
  const nodeArgs = process.env.BENCH_HOOKS_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const server = await startProcess([...nodeArgs, ...serverArgs], {});
  const echo = await startProcess(echoArgs, { BODY_LIMIT: String(config.hooks.bodyLimitBytes) });
  try {
    const w = egressWorld(hs.url, hs.apiKey, 0);
    const first = await fetch(`${server.url}/hooks/egress/sync`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(syncRequest({ parent: w.egress, related: [w.tailnet, w.creds] })),
    });
    const children = ((await first.json()) as { children: K8sObject[] }).children;
    const body = JSON.stringify(syncRequest({ parent: w.egress, children, related: [w.tailnet, w.creds] }));
    const syncUrl = `${server.url}/hooks/egress/sync`;
    const echoUrl = `${echo.url}/echo`;
    await load(echoUrl, body, 1); // warm-up
    await load(syncUrl, body, 1);
    const perRound: { s: { rps: number; p99ms: number }; e: { rps: number; p99ms: number } }[] = [];
    for (let round = 0; round < rounds; round++) {
      const e = await load(echoUrl, body, seconds);
      const s = await load(syncUrl, body, seconds);
      if (s.errors) throw new Error(`sync bench saw ${s.errors} errors`);
      if (e.errors) throw new Error(`echo bench saw ${e.errors} errors`);
      perRound.push({ s, e });
    }
    const rssMiB = peakRssMiB(server.child.pid);

    // a wave: 1,000 different, already provisioned egresses (their key Secret and status observed,
    // as on every resync) synced 5 at a time by a fresh server, so the cache starts cold
    const wave = Array.from({ length: 1000 }, (_, i) => ({
      ...egressWorld(hs.url, hs.apiKey, i),
      children: [] as K8sObject[],
      status: undefined as unknown,
    }));
    const syncWave = async (server: ReturnType<typeof buildServer>, record: boolean) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 5 }, async () => {
          while (next < wave.length) {
            const x = wave[next++];
            const parent = x.status ? { ...x.egress, status: x.status } : x.egress;
            const res = await server.inject({
              method: "POST",
              url: "/hooks/egress/sync",
              payload: syncRequest({
                parent: parent as K8sObject,
                children: x.children,
                related: [x.tailnet, x.creds],
              }),
            });
            if (record) {
              const body = res.json() as { children: K8sObject[]; status: unknown };
              x.children = body.children;
              x.status = body.status;
            }
          }
        }),
      );
    };
    const provision = buildServer(config, { logger: false });
    await provision.ready();
    await syncWave(provision, true);
    await provision.close();
    const app2 = buildServer(config, { logger: false });
    await app2.ready();
    const before = hs.requests.length;
    await syncWave(app2, false);
    const waveCalls = hs.requests.length - before;
    await app2.close();
    return {
      payloadBytes: body.length,
      rounds,
      build: serverBundle ? "bundle" : "tsx",
      sync: { rps: spread(perRound.map((r) => r.s.rps)), p99ms: spread(perRound.map((r) => r.s.p99ms)) },
      echo: { rps: spread(perRound.map((r) => r.e.rps)), p99ms: spread(perRound.map((r) => r.e.p99ms)) },
      rpsRatio: spread(perRound.map((r) => r.s.rps / r.e.rps)),
      p99Ratio: spread(perRound.map((r) => r.s.p99ms / Math.max(r.e.p99ms, 1))),
      waveSyncs: wave.length,
      waveHeadscaleCalls: waveCalls,
      rssMiB,
    };
  } finally {
    await stop(server.child);
    await stop(echo.child);
    await hs.close();
    rmSync(dir, { recursive: true, force: true });
    for (const f of [serverBundle, echoBundle]) if (f) rmSync(f, { force: true });
  }
}

const fmt = (s: Spread, digits: number) =>
  `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;

/** The table rows of `npm run bench`: medians over the rounds, min–max in parentheses. */
export function hookRows(h: HookBench): [string, string][] {
  const where = `own processes, ${h.build}, ${h.rounds} rounds, median (min–max)`;
  return [
    ["sync payload (egress, 16 targets + children)", `${(h.payloadBytes / 1024).toFixed(1)} KiB`],
    [`sync req/s (${where})`, fmt(h.sync.rps, 0)],
    ["echo req/s", fmt(h.echo.rps, 0)],
    ["sync/echo req/s per round (goal ≥ 0.5)", fmt(h.rpsRatio, 2)],
    ["sync p99 / echo p99 (ms)", `${fmt(h.sync.p99ms, 0)} / ${fmt(h.echo.p99ms, 0)}`],
    ["sync/echo p99 per round (goal ≤ 2)", fmt(h.p99Ratio, 2)],
    [`Headscale calls for ${h.waveSyncs} egress syncs`, String(h.waveHeadscaleCalls)],
    ["hook server peak RSS (VmHWM)", `${h.rssMiB.toFixed(0)} MiB`],
  ];
}
