/**
 * `npm run bench`: every figure is a ratio against a baseline measured in the same run, on the
 * same machine. Prints a table and writes bench/results.json so runs can be compared.
 */
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { requireBins } from "../test/real/bins.js";
import { benchH2, h2Rows } from "./agent/h2.js";
import { agentRows, benchAgent } from "./agent.js";
import { freshInstallOnFake, freshInstallRows } from "./fresh-install.js";
import { type GoalInputs, goalRows, goalTableRows } from "./goals.js";
import { benchHeadscaleReal, headscaleRealOptions, headscaleRealRows } from "./headscale-real.js";
import { benchHooks, hookRows } from "./hooks.js";
import { benchHostile, hostileRows } from "./hostile.js";
import { benchPolicy } from "./policy.js";
import { benchReal, realRows } from "./real.js";
import { SCALE_PARENTS, soakScale, soakScaleRows } from "./soak.js";
import { benchTailnetDecide } from "./tailnet.js";
import { benchTailnetScale, scaleRows } from "./tailnet-scale.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const results: Record<string, unknown> = {
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  },
  date: new Date().toISOString(),
};
const rows: [string, string][] = [];
const print = () => {
  const width = Math.max(...rows.map((r) => r[0].length));
  console.log(`\n${"figure".padEnd(width)}  value`);
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  writeFileSync(new URL("./results.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
  console.log("\nwritten to bench/results.json");
};

// Fresh install (issue 25): every object's first key minted, Headscale calls per object, against the fake.
async function freshInstallSection(): Promise<void> {
  const fresh = await freshInstallOnFake(Number(process.env.BENCH_FRESH_OBJECTS ?? 20_000));
  results.freshInstall = fresh;
  rows.push(...freshInstallRows(fresh));
}
// The hook server's RSS and throughput against the number of parents (issue 17 §2, issue 25; `npm run soak --
// --sizes` alone): the compiled server in its own process, BENCH_SOAK_SECONDS (default 60), several rounds per size.
async function soakSection(): Promise<void> {
  const soakSizes = process.env.BENCH_SOAK_SIZES?.split(",").map(Number) ?? SCALE_PARENTS;
  const soak = await soakScale(soakSizes, Number(process.env.BENCH_SOAK_SECONDS ?? 60));
  results.soakScale = soak;
  rows.push(...soakScaleRows(soak));
}
// `npm run bench -- --only=scale`: only the rows at scale (fresh install; steady state at 1k, 5k, 20k parents)
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
if (only !== undefined) {
  if (only !== "scale") throw new Error(`--only=${only}: the one section that runs alone is "scale"`);
  await freshInstallSection();
  await soakSection();
  print();
  process.exit(0);
}

const hooks = await benchHooks(seconds);
results.hooks = hooks;
rows.push(...hookRows(hooks));
// Hostile callers (issue 23 item 6): the server's RSS against the chart's limit, legit syncs answered.
const hostile = await benchHostile();
results.hostile = hostile;
rows.push(...hostileRows(hostile));

const policy = await benchPolicy();
results.policy = policy;
const base = policy[0];
for (const p of policy) {
  rows.push([
    `policy render, ${p.objects} objects`,
    `${p.ms.toFixed(1)} ms (×${(p.ms / base.ms).toFixed(2)} of ${base.objects})`,
  ]);
}
// The Tailnet's whole decide path (inputs, blocked sites, render, DNS records, conditions, children).
const decidePath = await benchTailnetDecide();
results.tailnetDecide = decidePath;
for (const p of decidePath) rows.push([`Tailnet decide path, ${p.objects} objects`, `${p.ms.toFixed(1)} ms`]);
// The Tailnet sync end to end over HTTP on Metacontroller-shaped bodies, the server in its own process.
const scale = await benchTailnetScale();
results.tailnetScale = scale;
rows.push(...scaleRows(scale));

await freshInstallSection();
await soakSection();

// The agent's data plane against HAProxy, socat and a bare Node HTTPS server (bench/agent.ts).
const agent = await benchAgent({ seconds, rounds: Number(process.env.BENCH_ROUNDS ?? 3) });
results.agent = agent;
rows.push(...agentRows(agent));
// HTTP/2 and gRPC through the agent beside HAProxy (h2), to the same h2c upstream (bench/agent/h2.ts).
const h2 = await benchH2({ seconds: Math.min(seconds, 3), rounds: Number(process.env.BENCH_ROUNDS ?? 3) });
results.h2 = h2;
rows.push(...h2Rows(h2));

// The real data path: the operator's own pods on real tailscaled/WireGuard/Headscale (bench/real.ts).
// Needs root and scripts/real-deps.sh; without them the row says what is missing (never a silent skip).
let missing: string | undefined;
try {
  requireBins();
} catch (err) {
  missing = (err as Error).message;
}
if (missing) {
  results.real = { notMeasured: missing };
  rows.push(["real data path", `not measured: ${missing}`]);
} else {
  const real = await benchReal({ seconds, rounds: Number(process.env.BENCH_ROUNDS ?? 3) });
  results.real = real;
  rows.push(...realRows(real));
  // What the real Headscale pays for the operator: fresh install, steady-state polling (bench/headscale-real.ts).
  const hsReal = [];
  for (const opts of headscaleRealOptions(process.env)) {
    const r = await benchHeadscaleReal(opts);
    hsReal.push(r);
    rows.push(...headscaleRealRows(r));
  }
  results.headscaleReal = hsReal;
}

// Issue 36's goals, one row each, from the figures above (bench/goals.ts).
const goals = goalRows({
  real: results.real as GoalInputs["real"],
  agent,
  soak: results.soakScale as GoalInputs["soak"],
  scale,
  h2,
});
results.goals = goals;
rows.push(...goalTableRows(goals));

print();
