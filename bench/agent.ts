/**
 * The agent's data plane against HAProxy, socat and a bare Node HTTPS server: bench/agent/cases.ts says what is
 * measured and how it is reported, bench/agent/harness.ts runs the processes and the load. bench/run.ts prints
 * agentRows(benchAgent()); bench/stress.ts reuses the harness through the re-exports below.
 * `npx tsx bench/agent.ts` runs this section alone (BENCH_SECONDS, default 5; BENCH_ROUNDS, default 3;
 * BENCH_AGENT_BEFORE and BENCH_AGENT_NODE_ARGS as in bench/agent/cases.ts). `npx tsx bench/agent/tcp-rounds.ts`
 * repeats the TCP rows alone in separate processes and prints their median and spread.
 */
import { pathToFileURL } from "node:url";
import { agentRows, benchAgent } from "./agent/cases.js";

export * from "./agent/cases.js";
export * from "./agent/harness.js";

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const bench = await benchAgent({
    seconds: Number(process.env.BENCH_SECONDS ?? 5),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  });
  const rows = agentRows(bench);
  const width = Math.max(...rows.map((r) => r[0].length));
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  console.log(JSON.stringify(bench, null, 2));
}
