/**
 * The hook server as its own process for a bench (as in production: `tailnet-operator serve`, compiled by
 * bench/soak.ts buildServer, NODE_ENV=production, the container's heap), and what it says about itself on
 * /metrics: RSS, heap, event-loop p99 (the lag histogram resets at each scrape) and the Headscale requests it
 * made per method and path (tailnet_headscale_requests_total), which counts calls the same way against the
 * fake Headscale and a real one.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { operatorPodEnv } from "./pod-runtime.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ServerMetrics {
  rss: number;
  heapUsed: number;
  lagP99ms: number;
  /** Headscale requests by "METHOD path" (the bounded path template), summed over status codes. */
  headscale: Record<string, number>;
}

export interface HookProcess {
  url: string;
  pool: Pool;
  pid: number;
  metrics(): Promise<ServerMetrics>;
  /** Peak RSS (VmHWM) so far, MiB. */
  peakRssMiB(): number;
  /** CPU time the server used so far (user + system), s: what its work costs however loaded the machine is. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Starts `cli` (dist/cli.js) serving hooks without authentication on a free port; resolves once /healthz answers. */
export async function startHookProcess(opts: {
  cli: string;
  nodeArgs?: string[];
  config?: string;
  connections?: number;
}): Promise<HookProcess> {
  const dir = mkdtempSync(join(tmpdir(), "hook-process-"));
  const config = join(dir, "config.yaml");
  writeFileSync(config, opts.config ?? "logLevel: warn\nheadscale: { timeoutSeconds: 10, cacheTTLSeconds: 10 }\n");
  const port = 20000 + Math.floor(Math.random() * 5000);
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.cli, "serve", "--config", config], {
    cwd: ROOT,
    // the Deployment's own environment (NODE_OPTIONS, MALLOC_*, bench/pod-runtime.ts), as the pod runs
    env: {
      ...process.env,
      ...operatorPodEnv(),
      PORT: String(port),
      ALLOW_UNAUTHENTICATED_HOOKS: "true",
      NODE_ENV: "production",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  const pool = new Pool(url, { connections: opts.connections ?? 8, bodyTimeout: 300_000, headersTimeout: 300_000 });
  for (let i = 0; ; i++) {
    const up = await pool.request({ path: "/healthz", method: "GET" }).then(
      async (r) => {
        await r.body.dump();
        return r.statusCode === 200;
      },
      () => false,
    );
    if (up) break;
    if (child.exitCode !== null || i > 300) throw new Error("the hook server did not start");
    await sleep(200);
  }
  const pid = child.pid as number;
  return {
    url,
    pool,
    pid,
    async metrics() {
      const r = await pool.request({ path: "/metrics", method: "GET" });
      const text = await r.body.text();
      const val = (name: string) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? Number.NaN);
      const headscale: Record<string, number> = {};
      for (const m of text.matchAll(/^tailnet_headscale_requests_total\{([^}]*)\} (\S+)$/gm)) {
        const label = (l: string) => m[1].match(new RegExp(`${l}="([^"]*)"`))?.[1] ?? "";
        const k = `${label("method")} ${label("path")}`;
        headscale[k] = (headscale[k] ?? 0) + Number(m[2]);
      }
      return {
        rss: val("process_resident_memory_bytes"),
        heapUsed: val("nodejs_heap_size_used_bytes"),
        lagP99ms: +(val("nodejs_eventloop_lag_p99_seconds") * 1000).toFixed(1),
        headscale,
      };
    },
    peakRssMiB() {
      const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmHWM:\s+(\d+) kB$/m);
      return m ? +(Number(m[1]) / 1024).toFixed(1) : Number.NaN;
    },
    cpuSeconds() {
      return processCpuSeconds(pid);
    },
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once("exit", r)));
      await pool.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Sum of Headscale calls in `after` minus `before` whose key matches (all when no pattern). */
export function callsBetween(before: Record<string, number>, after: Record<string, number>, match?: RegExp): number {
  let n = 0;
  for (const [k, v] of Object.entries(after)) if (!match || match.test(k)) n += v - (before[k] ?? 0);
  return n;
}

/** utime + stime of a process from /proc/<pid>/stat, s (clock ticks of 1/100 s, as on every Linux we run on). */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // the command name may hold spaces: the fields counted after its closing parenthesis
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The 1-minute load average, for a figure measured on a shared machine. */
export function loadAverage(): number {
  return +readFileSync("/proc/loadavg", "utf8").split(" ")[0];
}
