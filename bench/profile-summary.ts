/**
 * `npx tsx bench/profile-summary.ts <file.cpuprofile> [from] [to] [rows]`: the functions a CPU profile spent its
 * time in, by self time and by inclusive time (a text flame graph's widest frames), over a window of the run
 * given as fractions of its duration (e.g. 0.6 1 for the steady rounds after a soak's install). Idle time is
 * left out, so the shares are of the busy time. Profiles come from `--cpu-prof` (SOAK_NODE_ARGS,
 * BENCH_AGENT_NODE_ARGS, BENCH_SCALE_NODE_ARGS); docs/OPERATIONS.md "Profiling" reads them this way.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface FrameTime {
  frame: string;
  ms: number;
  share: number;
}

/** "name file:line", the file cut to its package or its path under src/ or dist/. */
function frameName(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url.replace(/.*\/(node_modules\/[^/]+|dist|src)\//, "$1/");
  return `${functionName || "(anonymous)"} ${file}:${lineNumber}`;
}

export function summarizeProfile(
  profile: CpuProfile,
  from = 0,
  to = 1,
): { busyMs: number; self: FrameTime[]; inclusive: FrameTime[] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const span = profile.timeDeltas.reduce((a, b) => a + b, 0);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const at = span > 0 ? t / span : 0;
    // a sample's time is the gap to the next one
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const node = byId.get(profile.samples[i]);
    if (at < from || at > to || !node || node.callFrame.functionName === "(idle)") continue;
    busy += dt;
    const name = frameName(node);
    self.set(name, (self.get(name) ?? 0) + dt);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id);
      if (!frame) break;
      const f = frameName(frame);
      if (seen.has(f)) continue; // a recursive frame counts once per sample
      seen.add(f);
      inclusive.set(f, (inclusive.get(f) ?? 0) + dt);
    }
  }
  const ranked = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([frame, us]) => ({ frame, ms: us / 1000, share: busy > 0 ? us / busy : 0 }));
  return { busyMs: busy / 1000, self: ranked(self), inclusive: ranked(inclusive) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, from = "0", to = "1", rows = "30"] = process.argv.slice(2);
  if (!file) throw new Error("usage: bench/profile-summary.ts <file.cpuprofile> [from] [to] [rows]");
  const s = summarizeProfile(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, Number(from), Number(to));
  const line = (f: FrameTime) =>
    `${f.ms.toFixed(0).padStart(8)} ms ${(f.share * 100).toFixed(1).padStart(5)} %  ${f.frame}`;
  console.log(`busy ${(s.busyMs / 1000).toFixed(1)} s\n-- self`);
  for (const f of s.self.slice(0, Number(rows))) console.log(line(f));
  console.log("-- inclusive");
  for (const f of s.inclusive.slice(0, Number(rows))) console.log(line(f));
}
