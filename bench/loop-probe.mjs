/**
 * Preloaded into the bench's hook server (`node --import bench/loop-probe.mjs`) by bench/soak.ts. Plain JavaScript:
 * no tsx in the measured process, and none of Node's type stripping either, which loads a WebAssembly TypeScript
 * parser into the process (17 MiB of RSS at rest, counted in every RSS the soak measured until issue 36): the event-loop delay split by what the bench was doing,
 * which prom-client's one histogram per scrape cannot give. A 10 ms repeating timer records the time
 * between its callbacks (what perf_hooks.monitorEventLoopDelay records, so an idle loop reads about 10 ms)
 * into the histogram of the current phase; the bench names the phase over the IPC channel
 * ({ phase: "steady" }, { phase: "tailnet" } while a Tailnet sync is in flight, …) and asks for
 * { report: true }, answered with { report: { [phase]: { p50, p99, max, count } in ms } }, "steady" holding
 * "settled" too, plus "steady+tailnet".
 * Each tick also records the process's CPU time over it (cpuP99): on a loaded machine a tick is long either
 * because the server worked through it or because it waited for a core; the CPU time tells which.
 */
import { createHistogram } from "node:perf_hooks";

const RESOLUTION_MS = 10;
/** @type {Map<string, { wall: import("node:perf_hooks").RecordableHistogram; cpu: import("node:perf_hooks").RecordableHistogram }>} */
const byPhase = new Map();
let phase = "start";
let prev = process.hrtime.bigint();
let prevCpu = process.cpuUsage();
const timer = setInterval(() => {
  const now = process.hrtime.bigint();
  const cpu = process.cpuUsage(prevCpu);
  prevCpu = process.cpuUsage();
  let h = byPhase.get(phase);
  if (!h) {
    h = { wall: createHistogram(), cpu: createHistogram() };
    byPhase.set(phase, h);
  }
  h.wall.record(now - prev);
  h.cpu.record(Math.max(1, (cpu.user + cpu.system) * 1000));
  prev = now;
}, RESOLUTION_MS);
timer.unref();

/** @param {number} ns */
const ms = (ns) => +(ns / 1e6).toFixed(1);
/** @param {{ wall: import("node:perf_hooks").RecordableHistogram; cpu: import("node:perf_hooks").RecordableHistogram }} h */
const figures = (h) => ({
  p50: ms(h.wall.percentile(50)),
  p99: ms(h.wall.percentile(99)),
  max: ms(h.wall.max),
  count: h.wall.count,
  cpuP99: ms(h.cpu.percentile(99)),
});

if (process.send) {
  process.channel?.unref();
  process.on("message", (/** @type {{ phase?: string; report?: boolean }} */ m) => {
    if (typeof m?.phase === "string") phase = m.phase;
    if (m?.report) {
      /** @type {Record<string, ReturnType<typeof figures>>} */
      const report = {};
      for (const [name, h] of byPhase) report[name] = figures(h);
      // the phases the bench names after the install: "steady" (the first round after it), "settled" (the
      // rounds after that) and "tailnet" (a Tailnet sync in flight in either); "steady" reports both rounds
      const merged = (/** @type {string[]} */ names) => {
        const all = { wall: createHistogram(), cpu: createHistogram() };
        for (const name of names) {
          const h = byPhase.get(name);
          if (h) {
            all.wall.add(h.wall);
            all.cpu.add(h.cpu);
          }
        }
        return all.wall.count ? figures(all) : undefined;
      };
      const steady = merged(["steady", "settled"]);
      if (steady) report.steady = steady;
      const both = merged(["steady", "settled", "tailnet"]);
      if (both) report["steady+tailnet"] = both;
      process.send?.({ report });
    }
  });
}
