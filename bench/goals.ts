/**
 * The goals of issue 36 as one table at the end of `npm run bench`: each row is a figure measured in this run
 * (a ratio against its same-run baseline where one exists), its goal and PASS or NOT MET. A section that did not
 * run says "not measured" with the reason its own row gave, never a silent PASS.
 */
import type { AgentBench } from "./agent/cases.js";
import type { H2Bench } from "./agent/h2.js";
import type { RealBench } from "./real.js";
import { goalMet, SCALE_GOAL, type SoakResult } from "./soak.js";
import type { ScaleBench } from "./tailnet-scale.js";

export interface GoalRow {
  row: string;
  value: string;
  goal: string;
  /** undefined: not measured; "reported": a figure of the table without a goal of its own yet. */
  met: boolean | undefined | "reported";
}

/** The chart's default memory limit of the operator container: the Tailnet sync at 20,000 workloads must fit. */
export const TAILNET_20K_RSS_GOAL_MIB = 384;

export interface GoalInputs {
  real?: RealBench | { notMeasured: string };
  agent?: AgentBench;
  soak?: { rows: SoakResult[] };
  scale?: ScaleBench;
  h2?: H2Bench;
}

const measured = <T extends object>(v: T | { notMeasured: string } | undefined): v is T =>
  v !== undefined && !("notMeasured" in v);

export function goalRows(r: GoalInputs): GoalRow[] {
  const rows: GoalRow[] = [];
  const add = (row: string, value: number | undefined, goal: string, met: (v: number) => boolean, digits = 2) =>
    rows.push({
      row,
      value: value === undefined || Number.isNaN(value) ? "not measured" : value.toFixed(digits),
      goal,
      met: value === undefined || Number.isNaN(value) ? undefined : met(value),
    });
  const real = measured(r.real) ? r.real : undefined;
  add("real egress bytes/s, agent / tailscaled SOCKS5", real?.throughputRatio, "≥ 0.95", (v) => v >= 0.95);
  // The row above is CPU-bound on a 2-core host: every hop takes cores from tailscaled's userspace WireGuard, and a
  // bare Node relay in the agent's place reaches 0.84-0.91 of SOCKS5 there (2026-12-06). This is the row's goal
  // moved to that floor: the agent within 5 % of the bare relay in the same run.
  add(
    "real egress bytes/s, agent / bare Node relay in the same pod (the floor)",
    real?.bare ? real.agent.bytesPerSecond / real.bare.bytesPerSecond : undefined,
    "≥ 0.95",
    (v) => v >= 0.95,
  );
  add(
    "real egress connect p99, agent / SOCKS5",
    real ? real.agent.connectP99ms / real.socks.connectP99ms : undefined,
    "≤ 1.5",
    (v) => v <= 1.5,
  );
  const a = r.agent;
  add("agent / HAProxy TCP throughput, 16 conns", a?.vsHaproxy?.throughput, "≥ 0.95", (v) => v >= 0.95);
  add("agent / HAProxy TCP setup p50", a?.vsHaproxy?.setupP50, "≤ 1.2", (v) => v <= 1.2);
  add("agent / HAProxy HTTPS req/s, 16 keep-alive conns", a?.httpsVsHaproxy?.rps, "≥ 1.0", (v) => v >= 1);
  add("agent / HAProxy HTTPS CPU per request", a?.httpsVsHaproxy?.cpuPerRequest, "≤ 1.2", (v) => v <= 1.2);
  const soak = r.soak?.rows.find((row) => row.parents - 1 === SCALE_GOAL.parents);
  const soakLoop = soak ? (soak.loop["steady+tailnet"]?.p99 ?? soak.eventLoopP99ms) : undefined;
  add(
    `hook server, ${SCALE_GOAL.parents} parents: event-loop p99 in steady rounds (ms)`,
    soakLoop,
    `≤ ${SCALE_GOAL.eventLoopP99ms}`,
    () => (soak ? goalMet(soak).loop : false),
    1,
  );
  const soakRss = soak
    ? soak.steady && !Number.isNaN(soak.steady.peakRssMiB)
      ? soak.steady.peakRssMiB
      : soak.peakRssMiB
    : undefined;
  add(
    `hook server, ${SCALE_GOAL.parents} parents: peak RSS (MiB)`,
    soakRss,
    `≤ ${SCALE_GOAL.rssMiB}`,
    () => (soak ? goalMet(soak).rss : false),
    1,
  );
  // the row run as the pod runs it (its heap cap and the budget of the chart's limit): outside a cgroup V8
  // sizes its heap from the host's RAM and the RSS would not be the pod's (bench/tailnet-scale.ts)
  const tailnet = r.scale?.rows.find((row) => row.workloads === 20_000 && row.pod);
  const tailnetRow = "Tailnet sync of 20,000 workloads, pod heap and budget: peak RSS (MiB)";
  if (tailnet && tailnet.status !== 200) {
    // refused (413 over the limit, 503 at the budget): the sync did not happen, whatever its RSS
    rows.push({ row: tailnetRow, value: `HTTP ${tailnet.status}`, goal: `≤ ${TAILNET_20K_RSS_GOAL_MIB}`, met: false });
  } else {
    add(tailnetRow, tailnet?.peakRssMiB, `≤ ${TAILNET_20K_RSS_GOAL_MIB}`, (v) => v <= TAILNET_20K_RSS_GOAL_MIB, 1);
  }
  // HTTP/2 and gRPC (issue 35) join the table as figures: no goal was set for them yet (docs/http2.md)
  for (const [what, pick] of [
    ["HTTP/2 req/s", (b: H2Bench) => b.agent.h2.rps / (b.haproxy?.h2.rps ?? Number.NaN)],
    ["gRPC unary calls/s", (b: H2Bench) => b.agent.grpc.rps / (b.haproxy?.grpc.rps ?? Number.NaN)],
  ] as const) {
    const v = r.h2 ? pick(r.h2) : undefined;
    const known = v !== undefined && !Number.isNaN(v);
    rows.push({
      row: `agent / HAProxy ${what}`,
      value: known ? v.toFixed(2) : "not measured",
      goal: "none yet",
      met: known ? "reported" : undefined,
    });
  }
  return rows;
}

/** The goal table as rows of the bench's printout. */
export function goalTableRows(goals: GoalRow[]): [string, string][] {
  return goals.map((g) => [
    `goal: ${g.row}`,
    `${g.value} (goal ${g.goal}): ${g.met === undefined ? "NOT MEASURED" : g.met === "reported" ? "REPORTED" : g.met ? "PASS" : "NOT MET"}`,
  ]);
}
