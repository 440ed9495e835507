/**
 * What the real Headscale (v0.29.3, scripts/real-deps.sh) pays for the operator (issue 25 B). The hook
 * server runs in this process as it is (default view cache: cacheTTLSeconds 10, slowPartTTLSeconds 60), driven over its HTTP
 * routes as Metacontroller would; Headscale serves HTTPS in a network namespace of its own (test/real).
 * - Fresh install: N TailnetEgress objects appear at once. The Tailnet syncs once (its policy names the
 *   N tags, checked and PUT), then every egress syncs once, 4 at a time, and must mint its key
 *   (status.preAuthKeyIds). Time and Headscale calls per object, per N, and the growth between sizes.
 * - Steady-state polling: Headscale holding POLL_OBJECTS pre-auth keys and POLL_NODES tagged nodes (the
 *   installed objects' own keys, the rest written into its database while it is stopped, each node
 *   registered with one of them), the installed egresses resync round robin (POLL_RATE syncs/s) and the
 *   Tailnet every 10 s, for POLL_SECONDS: the headscale process's CPU (utime + stime of /proc/<pid>/stat)
 *   over that window, as a share of one core; goal < 5 %. Then one call of each kind alone: Headscale's
 *   CPU per call (every authenticated call pays a bcrypt check of the API key).
 * `npx tsx bench/headscale-real.ts` runs this section alone (root, scripts/real-deps.sh done); env:
 * BENCH_HS_SIZES (default 100,300), BENCH_HS_POLL_OBJECTS (20000), BENCH_HS_POLL_NODES (2000),
 * BENCH_HS_POLL_SECONDS (60), BENCH_HS_POLL_RATE (20), BENCH_HS_DATABASE (sqlite | postgres).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Agent, request } from "undici";
import type { K8sObject } from "../src/k8s/objects.js";
import { b64 } from "../src/kinds/shared/secrets.js";
import { parentObject, syncRequest } from "../test/fixtures/hooks.js";
import { build } from "../test/helpers/server.js";
import { pgBin, requireBins } from "../test/real/bins.js";
import { type RealHeadscale, startHeadscale } from "../test/real/headscale.js";
import { TestNet } from "../test/real/net.js";

const OPS = "tailnet-system";
const CONCURRENCY = 4;
const START_TIMEOUT_MS = 600_000;
/** The operator's defaults (src/config.ts; slowPartTTLSeconds by default): the view's cache keeps Headscale's load down. */
const HEADSCALE_CONFIG = { timeoutSeconds: 5, cacheTTLSeconds: 10 };

export interface FreshInstallRow {
  objects: number;
  /** Wall time from the Tailnet's first sync to the last egress answered. */
  ms: number;
  /** The Tailnet's first sync (renders, checks and PUTs a policy naming every object's tag). */
  tailnetMs: number;
  /** Median time of one egress sync (4 in flight). */
  egressP50ms: number;
  /** CPU the headscale process spent over the install, per object. */
  headscaleCpuMsPerObject: number;
  /** First egress answers that recorded a minted key (status.preAuthKeyIds). */
  minted: number;
  /** Further syncs of the objects whose first answer recorded none, and how many then have one. */
  resyncs: number;
  converged: number;
  /** Conditions that were not True on first answers without a key (distinct, at most 4). */
  misses: string[];
  /** Headscale requests the hook server made, by "METHOD path". */
  calls: Record<string, number>;
  callsPerObject: number;
  /** Pre-auth keys Headscale holds afterwards. */
  keys: number;
}

export interface PollingRow {
  keys: number;
  nodes: number;
  seconds: number;
  syncs: number;
  calls: Record<string, number>;
  /** CPU seconds of the headscale process over the window ÷ the window: a share of one core. */
  cpuPercent: number;
  /** The same process, idle (no syncs), over IDLE_SECONDS before: what Headscale costs anyway. */
  idleCpuPercent: number;
  /**
   * One call alone, sequentially (mean of 3): wall time from here and the headscale process's CPU.
   * /health costs what every authenticated call costs at least (Headscale checks the API key's bcrypt
   * hash on every request: hscontrol/db/api_key.go validateAPIKey, no cache).
   */
  perCall: Record<"health" | "nodes" | "preAuthKeys", { ms: number; cpuMs: number }>;
  /** Headscale's restart with all the nodes, until /health answers. */
  startMs: number;
  rssMiB: number;
}

export interface PollOptions {
  /** Pre-auth keys Headscale holds while polled. */
  objects: number;
  /**
   * Nodes it holds: fewer than keys, because Headscale 0.29 builds its peer map over every pair of nodes
   * when it starts (hscontrol/state/node_store.go snapshotFromNodes → policy/v2/policy.go BuildPeerMap):
   * a restart with 20,000 nodes did not finish within minutes on the 2-core bench machine.
   */
  nodes: number;
  seconds: number;
  rate: number;
}

export interface HeadscaleRealBench {
  database: "sqlite" | "postgres";
  fresh: FreshInstallRow[];
  /** ms per object at the largest size ÷ at the smallest (1 = O(n) overall). */
  perObjectGrowth: number;
  polling?: PollingRow;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) of a process, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The headscale process serving `hs` (`ip netns exec` execs it: found by its config path in /proc). */
function headscalePid(hs: RealHeadscale): number {
  const config = `${hs.host.dir}/config.yaml`;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    const argv = (() => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      } catch {
        return [];
      }
    })();
    if (argv[0]?.endsWith("headscale") && argv[1] === "serve" && argv.includes(config)) return Number(d);
  }
  throw new Error(`no headscale process serving ${config}`);
}

function rssMiB(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Headscale requests by "METHOD path" from the hook server's own counter (tailnet_headscale_requests_total). */
function callsFrom(metrics: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of metrics.matchAll(
    /^tailnet_headscale_requests_total\{method="(\w+)",path="([^"]+)",code="\d+"\} (\S+)$/gm,
  )) {
    const k = `${m[1]} ${m[2]}`;
    out[k] = (out[k] ?? 0) + Number(m[3]);
  }
  return out;
}
const minus = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(a)
      .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort(),
  );
const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);

function egress(i: number): K8sObject {
  return parentObject(
    "TailnetEgress",
    `obj-${i}`,
    {
      tailnetRef: { name: "home" },
      targets: [{ name: "db", host: `100.64.0.${1 + (i % 200)}`, ports: [{ port: 5432 }] }],
    },
    {
      namespace: `ns-${i % 50}`,
      uid: `0e9e${String(i).padStart(4, "0")}-0000-4000-8000-${String(i).padStart(12, "0")}`,
    },
  );
}

/** The hook server in this process, against one real Headscale: a Tailnet "home" in Apply mode and its objects. */
async function operator(hs: RealHeadscale) {
  const cleanups: (() => Promise<void> | void)[] = [];
  const { app } = await build(
    { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) },
    { config: { logLevel: "warn", headscale: HEADSCALE_CONFIG } },
  );
  const secrets: K8sObject[] = [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "headscale-api-key", namespace: OPS },
      data: { apiKey: b64(hs.apiKey) },
    },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "headscale-ca", namespace: OPS },
      data: { "ca.crt": b64(hs.caPem) },
    },
  ];
  let tailnet = parentObject("Tailnet", "home", {
    headscale: {
      url: hs.url,
      apiKeySecretRef: { namespace: OPS, name: "headscale-api-key" },
      caSecretRef: { namespace: OPS, name: "headscale-ca" },
    },
    policy: { mode: "Apply" },
    allowedEgressTargets: ["100.64.0.0/10"],
    dns: { baseDomain: "ts.test" },
  });
  let tailnetChildren: K8sObject[] = [];
  const namespaces = Array.from({ length: 50 }, (_, i) => ({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: `ns-${i}` },
  }));
  const post = async (kind: string, body: unknown) => {
    const res = await app.inject({
      method: "POST",
      url: `/hooks/${kind}/sync`,
      headers: { "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
    if (res.statusCode !== 200) throw new Error(`${kind} sync: HTTP ${res.statusCode} ${res.body.slice(0, 300)}`);
    return JSON.parse(res.body) as { status: Record<string, unknown>; children: K8sObject[] };
  };
  return {
    async syncTailnet(objects: K8sObject[]) {
      const r = await post(
        "tailnet",
        syncRequest({ parent: tailnet, children: tailnetChildren, related: [...secrets, ...namespaces, ...objects] }),
      );
      tailnet = { ...tailnet, status: r.status };
      tailnetChildren = r.children;
      return r;
    },
    /** One egress sync as Metacontroller sends it; the object with the status it answered. */
    async syncEgress(o: K8sObject, children: K8sObject[] = []) {
      const credentials = tailnetChildren.filter((c) => c.kind === "Secret");
      const ns = namespaces.find((n) => n.metadata.name === o.metadata.namespace) as K8sObject;
      const r = await post("egress", syncRequest({ parent: o, children, related: [tailnet, ...credentials, ns] }));
      return { object: { ...o, status: r.status }, children: r.children };
    },
    async metrics(): Promise<string> {
      return (await app.inject({ method: "GET", url: "/metrics" })).body;
    },
    async close() {
      for (const fn of cleanups.reverse()) await fn();
    },
  };
}

async function pool<T>(items: T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

async function freshInstall(hs: RealHeadscale, objects: number) {
  const op = await operator(hs);
  const list = Array.from({ length: objects }, (_, i) => egress(i));
  const before = callsFrom(await op.metrics());
  const pid = headscalePid(hs);
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  await op.syncTailnet(list);
  const tailnetMs = performance.now() - t0;
  const answered: { object: K8sObject; children: K8sObject[] }[] = new Array(objects);
  const times: number[] = [];
  await pool(list, CONCURRENCY, async (o, i) => {
    const s = performance.now();
    answered[i] = await op.syncEgress(o);
    times.push(performance.now() - s);
  });
  const ms = performance.now() - t0;
  const hsCpu = cpuSeconds(pid) - cpu0;
  times.sort((x, y) => x - y);
  const calls = minus(callsFrom(await op.metrics()), before);
  const hasKey = (a: { object: K8sObject }) => {
    const ids = (a.object.status as { preAuthKeyIds?: unknown } | undefined)?.preAuthKeyIds;
    return Array.isArray(ids) && ids.length > 0;
  };
  const minted = answered.filter(hasKey).length;
  // why a first answer recorded no key: its conditions that are not True (distinct, a few)
  type Cond = { type?: string; status?: string; reason?: string; message?: string };
  const misses = [
    ...new Set(
      answered
        .filter((a) => !hasKey(a))
        .flatMap((a) =>
          ((a.object.status as { conditions?: Cond[] })?.conditions ?? []).filter((c) => c.status !== "True"),
        )
        .map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`),
    ),
  ].slice(0, 4);
  const keys = ((await hs.json<unknown[] | null>(["preauthkeys", "list"])) ?? []).length;
  // The objects whose first answer recorded no key sync again (as Metacontroller's resync would) until
  // all have one, so the polling that follows is the steady state, not a tail of the install.
  let resyncs = 0;
  for (let pass = 0; pass < 5 && answered.some((a) => !hasKey(a)); pass++) {
    await pool(
      answered.flatMap((a, i) => (hasKey(a) ? [] : [i])),
      CONCURRENCY,
      async (i) => {
        resyncs++;
        answered[i] = await op.syncEgress(answered[i].object, answered[i].children);
      },
    );
  }
  const row: FreshInstallRow = {
    objects,
    ms: Math.round(ms),
    tailnetMs: Math.round(tailnetMs),
    egressP50ms: Math.round(times[Math.floor(times.length / 2)] ?? Number.NaN),
    headscaleCpuMsPerObject: +((hsCpu * 1000) / objects).toFixed(1),
    minted,
    resyncs,
    misses,
    converged: answered.filter(hasKey).length,
    calls,
    callsPerObject: +(total(calls) / objects).toFixed(2),
    keys,
  };
  return { row, op, answered };
}

/**
 * Tops Headscale up to `count` pre-auth keys and `nodes` tagged nodes, each registered with a key,
 * written into its database while it is stopped (the API would take minutes to mint and register
 * 20,000): new keys copy an installed key's row (same user, flags, dates), nodes get fresh keys, IPs and
 * names. Headscale loads the nodes into its NodeStore when it starts again.
 */
async function topUp(
  hs: RealHeadscale,
  database: "sqlite" | "postgres",
  count: number,
  nodes: number,
): Promise<number> {
  const sqlite = database === "sqlite";
  const hex = (e: string, w: number) => (sqlite ? `printf('%0${w}x', ${e})` : `lpad(to_hex(${e}), ${w}, '0')`);
  const str = (e: string) => (sqlite ? `CAST(${e} AS TEXT)` : `(${e})::text`);
  const seq = sqlite
    ? `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${count})`
    : `WITH seq(i) AS (SELECT generate_series(1, ${count}))`;
  const sql = [
    // keys: as many as needed to reach `count`, cloned from the newest installed key
    `${seq} INSERT INTO pre_auth_keys (prefix, hash, user_id, reusable, ephemeral, used, tags, expiration, created_at)
     SELECT 'bench' || ${hex("i", 7)}, k.hash, k.user_id, k.reusable, k.ephemeral, k.used,
            '["tag:bench-' || ${str("i")} || '"]', k.expiration, k.created_at
     FROM seq, (SELECT * FROM pre_auth_keys ORDER BY id DESC LIMIT 1) k
     WHERE i <= ${count} - (SELECT count(*) FROM pre_auth_keys)`,
    // a node per key, tagged like its key, registered with it
    `INSERT INTO nodes (machine_key, node_key, disco_key, endpoints, host_info, ipv4, ipv6, hostname, given_name,
                        register_method, tags, auth_key_id, last_seen, approved_routes, created_at, updated_at)
     SELECT 'mkey:' || ${hex("k.id", 64)}, 'nodekey:' || ${hex("k.id", 64)}, 'discokey:' || ${hex("k.id", 64)},
            '[]', '{}',
            '100.' || ${str("64 + k.id / 65536")} || '.' || ${str("(k.id / 256) % 256")} || '.' || ${str("k.id % 256")},
            'fd7a:115c:a1e0::' || ${hex("k.id", 1)}, 'bench-' || ${str("k.id")}, 'bench-' || ${str("k.id")},
            'authkey', k.tags, k.id, k.created_at, '[]', k.created_at, k.created_at
     FROM pre_auth_keys k WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.auth_key_id = k.id)
     ORDER BY k.id LIMIT ${nodes} - (SELECT count(*) FROM nodes)`,
  ];
  await hs.stop();
  for (const q of sql) {
    if (sqlite) {
      // loaded here: node:sqlite prints an ExperimentalWarning on import
      const { DatabaseSync } = await import("node:sqlite");
      const db = new DatabaseSync(`${hs.host.dir}/db.sqlite`);
      try {
        db.exec(q);
      } finally {
        db.close();
      }
    } else await hs.sql(q);
  }
  // Headscale loads every node and computes their peer maps before it answers /health: with 20,000
  // nodes that can take longer than the 30 s start() waits, so wait on (the process keeps running).
  const t0 = performance.now();
  const started = await hs.start().then(
    () => true,
    () => false,
  );
  if (!started) {
    const dispatcher = new Agent({ connect: { ca: hs.caPem, timeout: 1000 } });
    try {
      for (;;) {
        const ok = await request(`${hs.url}/health`, { dispatcher }).then(
          async (r) => {
            await r.body.dump();
            return r.statusCode === 200;
          },
          () => false,
        );
        if (ok) break;
        if (performance.now() - t0 > START_TIMEOUT_MS)
          throw new Error(
            `headscale not healthy ${START_TIMEOUT_MS} ms after a restart with ${count} nodes\n${hs.logs()}`,
          );
        await sleep(1000);
      }
    } finally {
      await dispatcher.close();
    }
  }
  return Math.round(performance.now() - t0);
}

async function polling(
  hs: RealHeadscale,
  database: "sqlite" | "postgres",
  installed: Awaited<ReturnType<typeof freshInstall>>,
  opts: PollOptions,
): Promise<PollingRow> {
  const startMs = await topUp(hs, database, opts.objects, opts.nodes);
  const pid = headscalePid(hs);
  const op = installed.op;
  const nodes = ((await hs.json<unknown[] | null>(["nodes", "list"])) ?? []).length;
  const keys = ((await hs.json<unknown[] | null>(["preauthkeys", "list"])) ?? []).length;
  // Headscale on its own first (after its start-up work settles)
  await sleep(5_000);
  const idleSeconds = Math.min(20, opts.seconds);
  const idle0 = cpuSeconds(pid);
  await sleep(idleSeconds * 1000);
  const idleCpuPercent = +(((cpuSeconds(pid) - idle0) / idleSeconds) * 100).toFixed(2);
  // each list once and /health, sequentially: wall time and the headscale process's CPU per call
  const dispatcher = new Agent({ connect: { ca: hs.caPem } });
  const perCall = async (path: string, times = 3) => {
    const c0 = cpuSeconds(pid);
    const t0 = performance.now();
    for (let i = 0; i < times; i++) {
      const r = await request(`${hs.url}${path}`, { headers: { authorization: `Bearer ${hs.apiKey}` }, dispatcher });
      await r.body.arrayBuffer();
      if (r.statusCode !== 200) throw new Error(`GET ${path}: HTTP ${r.statusCode}`);
    }
    return {
      ms: Math.round((performance.now() - t0) / times),
      cpuMs: Math.round(((cpuSeconds(pid) - c0) * 1000) / times),
    };
  };
  const calls1 = {
    health: await perCall("/api/v1/health"),
    nodes: await perCall("/api/v1/node"),
    preAuthKeys: await perCall("/api/v1/preauthkey"),
  };
  await dispatcher.close();
  const objects = installed.answered.map((a) => a.object);
  const before = callsFrom(await op.metrics());
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  const end = t0 + opts.seconds * 1000;
  let syncs = 0;
  let nextTailnet = t0;
  for (let i = 0; performance.now() < end; i++) {
    const due = t0 + (i * 1000) / opts.rate;
    if (due > performance.now()) await sleep(due - performance.now());
    if (performance.now() >= nextTailnet) {
      await op.syncTailnet(objects);
      nextTailnet += 10_000;
      syncs++;
    }
    const k = i % objects.length;
    const r = await op.syncEgress(objects[k], installed.answered[k].children);
    objects[k] = r.object;
    syncs++;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  const calls = minus(callsFrom(await op.metrics()), before);
  return {
    keys,
    nodes,
    seconds: +seconds.toFixed(1),
    syncs,
    calls,
    cpuPercent: +((cpu / seconds) * 100).toFixed(2),
    idleCpuPercent,
    perCall: calls1,
    startMs,
    rssMiB: Math.round(rssMiB(pid)),
  };
}

export async function benchHeadscaleReal(
  opts: { sizes?: number[]; database?: "sqlite" | "postgres"; poll?: PollOptions | false } = {},
): Promise<HeadscaleRealBench> {
  const sizes = opts.sizes ?? [100, 300];
  const database = opts.database ?? "sqlite";
  const net = await TestNet.create({ id: "bench-hs" });
  const fresh: FreshInstallRow[] = [];
  let pollRow: PollingRow | undefined;
  try {
    for (const [n, objects] of sizes.entries()) {
      const hs = await startHeadscale(net, { name: `hs${n}`, database });
      try {
        const installed = await freshInstall(hs, objects);
        fresh.push(installed.row);
        if (n === sizes.length - 1 && opts.poll) pollRow = await polling(hs, database, installed, opts.poll);
        await installed.op.close();
      } finally {
        await hs.close();
      }
    }
  } finally {
    await net.close();
  }
  const [a, b] = [fresh[0], fresh.at(-1)];
  return {
    database,
    fresh,
    perObjectGrowth: a && b ? +(b.ms / b.objects / (a.ms / a.objects)).toFixed(2) : Number.NaN,
    polling: pollRow,
  };
}

const fmtCalls = (c: Record<string, number>, per: number) =>
  Object.entries(c)
    .map(([k, v]) => `${k} ${+(v / per).toFixed(2)}`)
    .join(", ");

export function headscaleRealRows(r: HeadscaleRealBench): [string, string][] {
  const rows: [string, string][] = r.fresh.map((f) => [
    `real Headscale (${r.database}): fresh install of ${f.objects} egresses`,
    `${(f.ms / 1000).toFixed(1)} s (${(f.ms / f.objects).toFixed(1)} ms/object; Tailnet ${f.tailnetMs} ms, egress sync p50 ${f.egressP50ms} ms; Headscale CPU ${f.headscaleCpuMsPerObject} ms/object), ${f.minted}/${f.objects} keys recorded by the first answer (${f.keys} keys in Headscale; ${f.converged} after ${f.resyncs} resyncs), ${f.callsPerObject} Headscale calls/object (${fmtCalls(f.calls, f.objects)})${f.minted === f.objects ? "" : " NOT MET: not every object answered once with its key"}`,
  ]);
  if (r.fresh.length > 1) {
    const g = r.perObjectGrowth;
    rows.push([
      `real Headscale (${r.database}): fresh install, time per object ${r.fresh[0].objects} → ${r.fresh.at(-1)?.objects}`,
      `×${g} (goal ≤ 1.5, O(n) overall): ${g <= 1.5 ? "PASS" : "NOT MET"}`,
    ]);
  }
  const p = r.polling;
  if (p) {
    rows.push([
      `real Headscale (${r.database}): CPU answering steady-state polling, ${p.keys} keys, ${p.nodes} nodes`,
      `${p.cpuPercent} % of a core over ${p.seconds} s (idle ${p.idleCpuPercent} %, restart ${(p.startMs / 1000).toFixed(0)} s), ${p.syncs} syncs, ${total(p.calls)} Headscale calls (${fmtCalls(p.calls, 1)}), RSS ${p.rssMiB} MiB (goal < 5 %): ${p.cpuPercent < 5 ? "PASS" : "NOT MET"}`,
    ]);
    const c = p.perCall;
    rows.push([
      `real Headscale (${r.database}): one call alone at ${p.keys} keys, ${p.nodes} nodes (wall, Headscale CPU)`,
      `GET /health ${c.health.ms} ms, ${c.health.cpuMs} ms CPU (the API key's bcrypt check, on every call); GET /node ${c.nodes.ms} ms, ${c.nodes.cpuMs} ms CPU; GET /preauthkey ${c.preAuthKeys.ms} ms, ${c.preAuthKeys.cpuMs} ms CPU`,
    ]);
  }
  return rows;
}

/**
 * The runs `npm run bench` and this file make, from the environment (see the file comment):
 * BENCH_HS_DATABASE picks one database; default SQLite, and PostgreSQL too when Debian's server is
 * installed (test/real/bins.ts pgBin).
 */
export function headscaleRealOptions(env: NodeJS.ProcessEnv): Parameters<typeof benchHeadscaleReal>[0][] {
  const databases: ("sqlite" | "postgres")[] = env.BENCH_HS_DATABASE
    ? [env.BENCH_HS_DATABASE === "postgres" ? "postgres" : "sqlite"]
    : existsSync(`${pgBin}/postgres`)
      ? ["sqlite", "postgres"]
      : ["sqlite"];
  return databases.map((database) => ({
    sizes: env.BENCH_HS_SIZES?.split(",").map(Number),
    database,
    poll: {
      objects: Number(env.BENCH_HS_POLL_OBJECTS ?? 20_000),
      nodes: Number(env.BENCH_HS_POLL_NODES ?? 2_000),
      seconds: Number(env.BENCH_HS_POLL_SECONDS ?? 60),
      rate: Number(env.BENCH_HS_POLL_RATE ?? 20),
    },
  }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  requireBins(["headscale"]);
  for (const opts of headscaleRealOptions(process.env)) {
    const r = await benchHeadscaleReal(opts);
    for (const [k, v] of headscaleRealRows(r)) console.log(`${k}: ${v}`);
    console.log(JSON.stringify(r));
  }
}
