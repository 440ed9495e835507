/**
 * Hostile callers against the hook server (issue 23, item 6; `npm run bench`, or alone:
 * `tsx bench/hostile.ts`): the server as the image runs it (an esbuild bundle of src/cli.ts, tsx
 * without esbuild), in its own process with the pod's heap cap (OPERATOR_POD_HEAP) and the body
 * budget the chart's 384Mi limit derives (a sixth: 64 MiB), while 16 unauthenticated callers
 * (BENCH_HOSTILE_CONNECTIONS) send, each scenario on a fresh server:
 * - max: bodies of the Tailnet limit as fast as the socket takes them,
 * - liar: the Tailnet limit announced in Content-Length, 1 KiB sent, then silence,
 * - slow: the Tailnet limit announced, 16 KiB every 500 ms,
 * - token: the max scenario against a server with a hook token (the default install).
 * Meanwhile one legitimate egress sync every 100 ms. Reported: the server's peak RSS (VmHWM)
 * against the chart's 384Mi limit, legitimate syncs answered 200, and the attackers' answers.
 * BENCH_HOSTILE_ROOT runs another checkout's src/cli.ts (the "before" figures of the report).
 */
import { rmSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { configFrom } from "../src/config.js";
import { hookLimits } from "../src/server/limits.js";
import { bundle, peakRssMiB, startProcess, stop } from "./hooks.js";
import { operatorPodEnv } from "./pod-runtime.js";
import { OPERATOR_POD_HEAP } from "./soak.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const MiB = 1024 * 1024;
const CHART_LIMIT_MIB = 384;
const BUDGET = (CHART_LIMIT_MIB * MiB) / 6;
const TOKEN = "bench-hostile-token-0123456789";

export type Scenario = "max" | "liar" | "slow" | "token";

export interface HostileRow {
  scenario: Scenario;
  connections: number;
  announcedBytes: number;
  peakRssMiB: number;
  legitOk: number;
  legitTotal: number;
  /** HTTP status (or "closed") → how many attackers got it. */
  attackAnswers: Record<string, number>;
  /** The server's exit while under attack (a crash or an OOM kill), if it died. */
  died?: string;
  seconds: number;
}

const legitBody = JSON.stringify({
  controller: { metadata: { name: "tailnet-operator-egress" } },
  parent: {
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: { name: "db", namespace: "shop", uid: "u1", generation: 1 },
    spec: { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
  },
  children: {},
  related: {},
});

/** One attacker: the head of a Tailnet sync announcing `length`, then the body as the scenario sends it. */
function attack(port: number, scenario: Scenario, length: number, deadline: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    let timer: NodeJS.Timeout | undefined;
    const done = (what: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(what);
    };
    socket.on("data", (d) => {
      answer += d;
      const m = /^HTTP\/1\.1 (\d+)/.exec(answer);
      if (m) done(m[1]);
    });
    socket.on("error", () => done(answer ? answer : "closed"));
    socket.on("close", () => done("closed"));
    setTimeout(() => done("still open"), deadline);
    socket.write(
      `POST /hooks/tailnet/sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"pad":"`,
    );
    let sent = 8;
    const chunk = Buffer.alloc(MiB, "x");
    if (scenario === "max" || scenario === "token") {
      const pump = () => {
        while (sent < length - 2) {
          const n = Math.min(chunk.length, length - 2 - sent);
          sent += n;
          if (!socket.write(chunk.subarray(0, n))) return void socket.once("drain", pump);
        }
        socket.write('"}');
      };
      pump();
    } else if (scenario === "liar") {
      socket.write(chunk.subarray(0, 1024));
    } else {
      const drip = () => {
        if (socket.destroyed || sent >= length - 2) return;
        socket.write(chunk.subarray(0, 16 * 1024));
        sent += 16 * 1024;
        timer = setTimeout(drip, 500);
      };
      drip();
    }
  });
}

async function runScenario(scenario: Scenario, connections: number, serverArgs: string[]): Promise<HostileRow> {
  const env: Record<string, string> = {
    ...operatorPodEnv(),
    LOG_LEVEL: "silent",
    HOOK_BODY_BUDGET_BYTES: String(BUDGET),
    ...(scenario === "token" ? { HOOK_TOKEN: TOKEN } : { ALLOW_UNAUTHENTICATED_HOOKS: "true" }),
  };
  const server = await startProcess([OPERATOR_POD_HEAP, ...serverArgs], env);
  const port = Number(new URL(server.url).port);
  const announced = Number(process.env.BENCH_HOSTILE_BODY_BYTES ?? hookLimitsFor().tailnetBodyLimitBytes);
  const started = performance.now();
  // VmHWM polled: a server that dies under attack has no /proc entry left to read at the end
  let peak = 0;
  const poll = setInterval(() => {
    try {
      const v = peakRssMiB(server.child.pid);
      if (v > peak) peak = v;
    } catch {}
  }, 100);
  let died: string | undefined;
  server.child.once("exit", (code, signal) => {
    died = `exited ${signal ?? code}`;
  });
  let legitOk = 0;
  let legitTotal = 0;
  let attacking = true;
  const legit = (async () => {
    while (attacking) {
      legitTotal++;
      const ok = await fetch(`${server.url}/hooks/egress/sync`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(scenario === "token" ? { authorization: `Bearer ${TOKEN}` } : {}),
        },
        body: legitBody,
        signal: AbortSignal.timeout(10_000),
      }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) legitOk++;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    const answers = await Promise.all(
      Array.from({ length: connections }, () => attack(port, scenario, announced, 60_000)),
    );
    await new Promise((r) => setTimeout(r, 500)); // a few legit syncs after the attack too
    attacking = false;
    await legit;
    clearInterval(poll);
    try {
      const v = peakRssMiB(server.child.pid);
      if (v > peak) peak = v;
    } catch {}
    const attackAnswers: Record<string, number> = {};
    for (const a of answers) attackAnswers[a] = (attackAnswers[a] ?? 0) + 1;
    return {
      scenario,
      connections,
      announcedBytes: announced,
      peakRssMiB: Math.round(peak),
      died,
      legitOk,
      legitTotal,
      attackAnswers,
      seconds: Math.round((performance.now() - started) / 100) / 10,
    };
  } finally {
    clearInterval(poll);
    attacking = false;
    await stop(server.child);
  }
}

const hookLimitsFor = () =>
  hookLimits(configFrom({ hooks: { bodyBudgetBytes: BUDGET } }), { bytes: BUDGET * 6, source: "cgroup v2 memory.max" });

export async function benchHostile(
  connections = Number(process.env.BENCH_HOSTILE_CONNECTIONS ?? 16),
  scenarios: Scenario[] = ["max", "liar", "slow", "token"],
): Promise<{ build: string; rows: HostileRow[] }> {
  const root = process.env.BENCH_HOSTILE_ROOT ?? REPO_ROOT;
  const entry = join(root, "src", "cli.ts");
  const out = process.env.BENCH_HOSTILE_FROM_SOURCE ? undefined : await bundle(entry, "bench-hostile-server");
  const serverArgs = out
    ? [
        "--input-type=module",
        "-e",
        `const { main } = await import(${JSON.stringify(pathToFileURL(out).href)}); await main(["serve"]);`,
      ]
    : ["--import", "tsx", entry, "serve"];
  const rows: HostileRow[] = [];
  try {
    for (const s of scenarios) rows.push(await runScenario(s, connections, serverArgs));
  } finally {
    if (out) rmSync(out, { force: true });
  }
  return { build: out ? "bundle" : "tsx", rows };
}

/** The table rows of `npm run bench`. */
export function hostileRows(h: { build: string; rows: HostileRow[] }): [string, string][] {
  return h.rows.map((r) => [
    `hostile hooks: ${r.connections} × ${r.scenario} (${(r.announcedBytes / MiB).toFixed(0)} MiB announced, ${h.build}, ${OPERATOR_POD_HEAP})`,
    `peak RSS ${r.peakRssMiB} MiB (limit ${CHART_LIMIT_MIB} MiB), legit syncs ${r.legitOk}/${r.legitTotal} answered 200, attackers ${Object.entries(
      r.attackAnswers,
    )
      .map(([k, v]) => `${v}×${k}`)
      .join(" ")}, ${r.seconds} s${r.died ? `; the server ${r.died}` : ""}`,
  ]);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const scenarios = process.env.BENCH_HOSTILE_SCENARIOS?.split(",") as Scenario[] | undefined;
  const h = await benchHostile(undefined, scenarios);
  for (const [k, v] of hostileRows(h)) console.log(`${k}\n  ${v}`);
}
