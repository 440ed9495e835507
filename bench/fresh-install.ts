/**
 * Fresh install (issue 25): N workload objects that each need a pre-auth key (egress, ingress and gateway in
 * turn) are created at once, and Metacontroller's workers sync them against one Headscale. Converged = every
 * object's first answer carries its key Secret (every key minted, every object answered once), and a second
 * pass over the recorded children mints nothing (one key per object). Reports the time, the hook server's
 * Headscale calls per object by method and path (from its own tailnet_headscale_requests_total, so the same
 * count holds against the fake Headscale and a real one), peak RSS and event-loop p99.
 *
 * Reusable against any Headscale: `freshInstall({ headscaleUrl, apiKey, objects })` starts the compiled hook
 * server (bench/soak.ts buildServer unless `cli` is given) and drives it; `npx tsx bench/fresh-install.ts [N]`
 * runs it against the fake Headscale (FRESH_HEADSCALE_URL + FRESH_API_KEY: against that server instead;
 * FRESH_CLI: a dist/cli.js already built).
 * Objects are created "now", so keys an earlier run left on a real server are never taken for theirs
 * (pendingKey only counts keys created after the object); `namespacePrefix` keeps their tags apart too.
 */
import { pathToFileURL } from "node:url";
import type { K8sObject } from "../src/k8s/objects.js";
import { AUTHKEY_LABEL } from "../src/kinds/shared/authkey.js";
import { startFakeHeadscale } from "../test/fakes/headscale/index.js";
import { parentObject, syncRequest } from "../test/fixtures/hooks.js";
import { callsBetween, loadAverage, startHookProcess } from "./hook-process.js";
import { buildServer, OPERATOR_POD_HEAP } from "./soak.js";

const b64 = (s: string) => Buffer.from(s).toString("base64");

export interface FreshInstallOptions {
  headscaleUrl: string;
  apiKey: string;
  /** PEM of the CA that signed Headscale's certificate (https only). */
  ca?: string;
  objects: number;
  /** Concurrent hook calls, as Metacontroller's workers (default 5, as bench/soak.ts). */
  workers?: number;
  /** A compiled dist/cli.js; default: src/ compiled now (and removed after). */
  cli?: string;
  /** Node flags of the server (default: the operator container's heap, OPERATOR_POD_HEAP). */
  nodeArgs?: string[];
  /** Namespaces are `<prefix><i % 10>` (default "fresh"): a distinct prefix per run keeps tags apart. */
  namespacePrefix?: string;
}

export interface FreshInstallResult {
  objects: number;
  workers: number;
  /** Wall time of the first pass (every object synced once), s. */
  seconds: number;
  objectsPerSecond: number;
  /** Objects whose first answer carried a key Secret. */
  answeredWithKey: number;
  /** Non-200 answers (first pass + second pass). */
  errors: number;
  errorSamples: string[];
  /** POST /api/v1/preauthkey in the first pass, and in the second (must be 0). */
  mints: number;
  mintsSecondPass: number;
  /** Every Headscale call of the first pass, and per object. */
  headscaleCalls: number;
  callsPerObject: number;
  keyListReads: number;
  callsByRoute: Record<string, number>;
  peakRssMiB: number;
  eventLoopP99ms: number;
  /** The hook server's CPU time over the first pass, s, and per object, ms. */
  serverCpuSeconds: number;
  serverCpuMsPerObject: number;
  /** This process's CPU time over the first pass (the fake Headscale lives here when used), s. */
  driverCpuSeconds: number;
  /** 1-minute load average at the start and the end of the first pass. */
  load: [number, number];
  converged: boolean;
}

function workload(i: number, ns: string, created: string): { hook: string; parent: K8sObject } {
  const ref = { tailnetRef: { name: "home" } };
  const opts = { namespace: ns, creationTimestamp: created };
  switch (i % 3) {
    case 0:
      return {
        hook: "egress",
        parent: parentObject(
          "TailnetEgress",
          `obj${i}`,
          { ...ref, targets: [{ name: "t", host: `100.64.0.${(i % 200) + 1}`, ports: [{ port: 5432 }] }] },
          opts,
        ),
      };
    case 1:
      return {
        hook: "ingress",
        parent: parentObject(
          "TailnetIngress",
          `obj${i}`,
          {
            ...ref,
            hostname: `h${i}`,
            allowFrom: ["group:eng"],
            exposes: [{ name: "web", port: 80, backend: { service: "web", port: 8080 } }],
          },
          opts,
        ),
      };
    default:
      return {
        hook: "gateway",
        parent: parentObject(
          "TailnetGateway",
          `obj${i}`,
          // a day, like the agents' keys: the default hour would rotate at half-life on a slow machine's second pass
          { ...ref, hostname: `gw${i}`, routes: [], dns: { zone: "ts.example.com" }, bootstrapKeyTTL: "24h" },
          opts,
        ),
      };
  }
}

export async function freshInstall(o: FreshInstallOptions): Promise<FreshInstallResult> {
  const workers = o.workers ?? 5;
  const cli = o.cli ?? buildServer();
  const server = await startHookProcess({
    cli,
    nodeArgs: o.nodeArgs ?? [OPERATOR_POD_HEAP],
    connections: workers + 2,
  });
  try {
    const hs = { url: o.headscaleUrl, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } };
    const tailnet = parentObject("Tailnet", "home", {
      headscale: hs,
      policy: { mode: "Apply" },
      allowedEgressTargets: ["100.64.0.0/10"],
      allowedIngressSources: ["group:eng"],
    });
    const secret = (name: string, data: Record<string, string>): K8sObject => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: "tailnet-system" },
      data,
    });
    const creds = secret("tailnet-home-credentials", {
      url: b64(o.headscaleUrl),
      apiKey: b64(o.apiKey),
      ...(o.ca ? { "ca.crt": b64(o.ca) } : {}),
    });
    const apiKey = secret("hs", { apiKey: b64(o.apiKey) });
    // whole seconds, as the API server writes creationTimestamp
    const created = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(".000Z", "Z");
    const prefix = o.namespacePrefix ?? "fresh";
    const objects = Array.from({ length: o.objects }, (_, i) => workload(i, `${prefix}${i % 10}`, created));
    const answers: ({ status: Record<string, unknown>; children: K8sObject[] } | undefined)[] = [];
    let errors = 0;
    const errorSamples: string[] = [];
    const post = async (path: string, body: unknown) => {
      const res = await server.pool.request({
        path,
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(`${path} ${res.statusCode} ${text.slice(0, 200)}`);
        return undefined;
      }
      return JSON.parse(text) as { status: Record<string, unknown>; children: K8sObject[] };
    };
    // the Tailnet first, as an install applies it: its policy names every object's tag (a real Headscale
    // refuses keys for tags no tagOwner holds)
    await post(
      "/hooks/tailnet/sync",
      syncRequest({ parent: tailnet, related: [apiKey, ...objects.map((w) => w.parent)] }),
    );
    const pass = async (second: boolean) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: workers }, async () => {
          for (let i = next++; i < objects.length; i = next++) {
            const { hook, parent } = objects[i];
            const prev = answers[i];
            const body = syncRequest({
              parent: second && prev ? { ...parent, status: prev.status } : parent,
              children: second && prev ? prev.children : [],
              related: [tailnet, creds],
            });
            const answer = await post(`/hooks/${hook}/sync`, body);
            if (!second) answers[i] = answer;
          }
        }),
      );
    };
    const m0 = await server.metrics();
    const load0 = loadAverage();
    const cpu0 = server.cpuSeconds();
    const driver0 = process.cpuUsage();
    const t0 = performance.now();
    await pass(false);
    const seconds = (performance.now() - t0) / 1000;
    const serverCpuSeconds = +(server.cpuSeconds() - cpu0).toFixed(1);
    const driver = process.cpuUsage(driver0);
    const load1 = loadAverage();
    const m1 = await server.metrics();
    await pass(true);
    const m2 = await server.metrics();
    const hasKey = (a: (typeof answers)[number]) =>
      !!a?.children.some((c) => c.kind === "Secret" && c.metadata.labels?.[AUTHKEY_LABEL] === "true");
    const answeredWithKey = answers.filter(hasKey).length;
    const mintRoute = /^POST \/api\/v1\/preauthkey$/;
    const mints = callsBetween(m0.headscale, m1.headscale, mintRoute);
    const mintsSecondPass = callsBetween(m1.headscale, m2.headscale, mintRoute);
    const headscaleCalls = callsBetween(m0.headscale, m1.headscale);
    const callsByRoute = Object.fromEntries(
      Object.keys(m1.headscale)
        .map((k) => [k, (m1.headscale[k] ?? 0) - (m0.headscale[k] ?? 0)] as const)
        .filter(([, v]) => v > 0)
        .sort((a, b) => b[1] - a[1]),
    );
    return {
      objects: o.objects,
      workers,
      seconds: +seconds.toFixed(1),
      objectsPerSecond: Math.round(o.objects / seconds),
      answeredWithKey,
      errors,
      errorSamples,
      mints,
      mintsSecondPass,
      headscaleCalls,
      callsPerObject: +(headscaleCalls / o.objects).toFixed(2),
      keyListReads: callsBetween(m0.headscale, m1.headscale, /^GET \/api\/v1\/preauthkey$/),
      callsByRoute,
      peakRssMiB: server.peakRssMiB(),
      eventLoopP99ms: m1.lagP99ms,
      serverCpuSeconds,
      serverCpuMsPerObject: +((serverCpuSeconds * 1000) / o.objects).toFixed(2),
      driverCpuSeconds: +((driver.user + driver.system) / 1e6).toFixed(1),
      load: [load0, load1],
      converged: errors === 0 && answeredWithKey === o.objects && mints === o.objects && mintsSecondPass === 0,
    };
  } finally {
    await server.stop();
  }
}

/** Goals (issue 25): converged, Headscale calls O(n): at most this many per object, and the time. */
export const FRESH_GOAL = { objects: 20_000, callsPerObject: 2, seconds: 300 };

/** Against the fake Headscale (bench/run.ts row): a fresh fake per run. */
export async function freshInstallOnFake(objects: number, cli?: string): Promise<FreshInstallResult> {
  const fake = await startFakeHeadscale();
  try {
    return await freshInstall({ headscaleUrl: fake.url, apiKey: fake.apiKey, objects, ...(cli ? { cli } : {}) });
  } finally {
    await fake.close();
  }
}

export function freshInstallRows(r: FreshInstallResult, against = "fake Headscale"): [string, string][] {
  const met =
    r.converged &&
    r.callsPerObject <= FRESH_GOAL.callsPerObject &&
    (r.objects < FRESH_GOAL.objects || r.seconds <= FRESH_GOAL.seconds);
  return [
    [
      `fresh install, ${r.objects} workload objects (${against}, ${r.workers} workers)`,
      `${r.seconds} s (${r.objectsPerSecond} objects/s), ${r.answeredWithKey}/${r.objects} answered with their key at the first sync, ${r.mints} mints (+${r.mintsSecondPass} on the second pass), ${r.headscaleCalls} Headscale calls = ${r.callsPerObject}/object (${r.keyListReads} key-list reads), server CPU ${r.serverCpuSeconds} s = ${r.serverCpuMsPerObject} ms/object, peak RSS ${r.peakRssMiB} MiB, event-loop p99 ${r.eventLoopP99ms} ms, ${r.errors} errors, load ${r.load[0]} → ${r.load[1]}`,
    ],
    [
      `fresh install goal (converged, ≤ ${FRESH_GOAL.callsPerObject} Headscale calls/object, ${FRESH_GOAL.objects} in ≤ ${FRESH_GOAL.seconds} s)`,
      met ? "PASS" : "NOT MET",
    ],
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const objects = Number(process.argv[2] ?? 20_000);
  const url = process.env.FRESH_HEADSCALE_URL;
  const r = url
    ? await freshInstall({
        headscaleUrl: url,
        apiKey: process.env.FRESH_API_KEY ?? "",
        objects,
        ...(process.env.FRESH_CLI ? { cli: process.env.FRESH_CLI } : {}),
      })
    : await freshInstallOnFake(objects, process.env.FRESH_CLI);
  const { errorSamples, ...shown } = r;
  console.log(JSON.stringify(shown, null, 2));
  if (errorSamples.length) console.log(errorSamples.join("\n"));
  for (const [k, v] of freshInstallRows(r, url ? url : "fake Headscale")) console.log(`${k}: ${v}`);
  process.exit(r.converged ? 0 : 1);
}
