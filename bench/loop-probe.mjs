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
 * because the server worked through it or because it waited for a core; the CPU time tells which. And each phase
 * reports its ticks of 20 ms or more (`long`): how many, how many held a full collection's pause, and the share of
 * their delay that was the collector's pauses on the main thread (perf_hooks "gc" entries), so a p99 over the goal
 * says whether the collector or the server's own work holds it.
 */
import { createHistogram, PerformanceObserver, performance } from "node:perf_hooks";

const RESOLUTION_MS = 10;
/** A tick this long or longer is "long" (the goal: p99 ≤ 20 ms), and the GC pauses inside it are counted. */
const LONG_TICK_MS = 20;
/** Long ticks as [start, end] (performance.now() ms) and phase; main-thread GC pauses as [start, end, major]. */
const longTicks = [];
const pauses = [];
// perf_hooks delivers GC entries after the fact (a later turn), so they are matched to the ticks at report time
new PerformanceObserver((list) => {
  // constants.NODE_PERFORMANCE_GC_MAJOR = 4
  for (const e of list.getEntries()) pauses.push([e.startTime, e.startTime + e.duration, e.detail?.kind === 4]);
}).observe({ entryTypes: ["gc"] });
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
  const tickMs = Number(now - prev) / 1e6;
  if (tickMs >= LONG_TICK_MS) {
    const end = performance.now();
    longTicks.push([end - tickMs, end, phase]);
  }
  prev = now;
}, RESOLUTION_MS);
timer.unref();

/**
 * The ticks of ≥ LONG_TICK_MS in these phases: how many, how many held a full collection's pause, and the share of
 * their time over RESOLUTION_MS that GC pauses took (what the loop's p99 owes to the collector).
 * @param {string[]} names
 */
const longFigures = (names) => {
  let count = 0;
  let withMajorGc = 0;
  let gcMs = 0;
  let overMs = 0;
  let p = 0;
  for (const [start, end, ph] of longTicks) {
    while (p < pauses.length && pauses[p][1] <= start) p++;
    if (!names.includes(ph)) continue;
    count++;
    overMs += end - start - RESOLUTION_MS;
    let major = false;
    for (let q = p; q < pauses.length && pauses[q][0] < end; q++) {
      const overlap = Math.min(pauses[q][1], end) - Math.max(pauses[q][0], start);
      if (overlap > 0) {
        gcMs += overlap;
        major ||= pauses[q][2];
      }
    }
    if (major) withMajorGc++;
  }
  return { count, withMajorGc, gcShare: overMs ? +(gcMs / overMs).toFixed(2) : 0 };
};

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
      for (const [name, h] of byPhase) report[name] = { ...figures(h), long: longFigures([name]) };
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
      if (steady) report.steady = { ...steady, long: longFigures(["steady", "settled"]) };
      const both = merged(["steady", "settled", "tailnet"]);
      if (both) report["steady+tailnet"] = { ...both, long: longFigures(["steady", "settled", "tailnet"]) };
      process.send?.({ report });
    }
  });
}
