/**
 * `npm run soak`: Metacontroller's 5 workers syncing 2,000 parents of mixed kinds against the fake
 * Headscale for SOAK_SECONDS (default 600), with a fault injected every 30 s for 5 s. The hook
 * server runs as its own process (`tailnet-operator serve`, as in production) and is driven over
 * HTTP; its RSS and event-loop delay p99 are read from its own /metrics (prom-client's default
 * metrics; the lag histogram resets at each scrape, so the end scrape covers the measured window).
 * Fails when a hook answered non-200 outside the injected faults, when the server's RSS grew by
 * 10 % or more after warm-up, or when its event-loop delay p99 reached 50 ms.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import type { K8sObject } from "../src/k8s/objects.js";
import { startFakeHeadscale } from "../test/fakes/headscale/index.js";
import { parentObject, syncRequest } from "../test/fixtures/hooks.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 600);
const PARENTS = Number(process.env.SOAK_PARENTS ?? 2000);
const b64 = (s: string) => Buffer.from(s).toString("base64");

const hs = await startFakeHeadscale();
for (let i = 0; i < 50; i++)
  hs.addNode({ name: `node-${i}`, tags: [`tag:k8s-ns${i % 10}-obj${i}`], availableRoutes: [`10.${i}.0.0/16`] });
const root = fileURLToPath(new URL("..", import.meta.url));
const cfgDir = mkdtempSync(join(tmpdir(), "soak-"));
writeFileSync(join(cfgDir, "config.yaml"), "logLevel: warn\nheadscale: { timeoutSeconds: 2, cacheTTLSeconds: 10 }\n");
const port = 19000 + Math.floor(Math.random() * 1000);
const server = spawn(
  process.execPath,
  ["--import", "tsx", "src/cli.ts", "serve", "--config", join(cfgDir, "config.yaml")],
  {
    cwd: root,
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "inherit"],
  },
);
const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 5 });
for (let i = 0; i < 150; i++) {
  const up = await pool.request({ path: "/healthz", method: "GET" }).then(
    async (r) => {
      await r.body.dump();
      return r.statusCode === 200;
    },
    () => false,
  );
  if (up) break;
  await new Promise((r) => setTimeout(r, 200));
}
/** The server's own RSS and event-loop delay p99 (prom-client default metrics). */
async function serverMetrics(): Promise<{ rss: number; lagP99: number }> {
  const r = await pool.request({ path: "/metrics", method: "GET" });
  const text = await r.body.text();
  const val = (name: string) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? Number.NaN);
  return { rss: val("process_resident_memory_bytes"), lagP99: val("nodejs_eventloop_lag_p99_seconds") };
}

const tailnet = parentObject("Tailnet", "home", {
  headscale: { url: hs.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
  policy: { mode: "Apply" },
  allowedEgressTargets: ["100.64.0.0/10"],
  allowedIngressSources: ["group:eng"],
});
const apiKey: K8sObject = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "hs", namespace: "tailnet-system" },
  data: { apiKey: b64(hs.apiKey) },
};
const creds: K8sObject = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
  data: { url: b64(hs.url), apiKey: b64(hs.apiKey) },
};
const parents: { path: string; body: () => unknown }[] = [];
const workloads: K8sObject[] = [];
for (let i = 0; i < PARENTS; i++) {
  const ns = `ns${i % 10}`;
  const ref = { tailnetRef: { name: "home" } };
  const pick = i % 4;
  const p =
    pick === 0
      ? parentObject(
          "TailnetEgress",
          `obj${i}`,
          { ...ref, targets: [{ name: "t", host: `100.64.0.${(i % 200) + 1}`, ports: [{ port: 5432 }] }] },
          { namespace: ns },
        )
      : pick === 1
        ? parentObject(
            "TailnetIngress",
            `obj${i}`,
            {
              ...ref,
              hostname: `h${i}`,
              allowFrom: ["group:eng"],
              exposes: [{ name: "web", port: 80, backend: { service: "web", port: 8080 } }],
            },
            { namespace: ns },
          )
        : pick === 2
          ? parentObject(
              "TailnetSite",
              `obj${i}`,
              { ...ref, prefixes: [`10.${i % 250}.${Math.floor(i / 250)}.0/24`], advertiserTags: ["tag:router"] },
              { namespace: ns },
            )
          : parentObject(
              "TailnetGateway",
              `obj${i}`,
              { ...ref, hostname: `gw${i}`, routes: [], dns: { zone: "ts.example.com" } },
              { namespace: ns },
            );
  workloads.push(p);
  const kind = ["egress", "ingress", "site", "gateway"][pick];
  let status: Record<string, unknown> | undefined;
  let children: K8sObject[] = [];
  parents.push({
    path: `/hooks/${kind}/sync`,
    body: () => syncRequest({ parent: { ...p, ...(status ? { status } : {}) }, children, related: [tailnet, creds] }),
  });
  // keep each parent's last answer as its observed state, as Metacontroller would
  Object.defineProperty(parents[parents.length - 1], "record", {
    value: (r: { status: Record<string, unknown>; children: K8sObject[] }) => {
      status = r.status;
      children = r.children;
    },
  });
}
parents.push({
  path: "/hooks/tailnet/sync",
  body: () => syncRequest({ parent: tailnet, related: [apiKey, ...workloads] }),
});

let syncs = 0;
let unexpected = 0;
const unexpectedSamples: string[] = [];
let faultActive = false;
const deadline = Date.now() + seconds * 1000;
const faults = ["status", "timeout", "reset", "unauthorized", "slow"] as const;
let faultIdx = 0;
const faultTimer = setInterval(async () => {
  faultActive = true;
  await hs.fault({ kind: faults[faultIdx++ % faults.length], status: 503, delayMs: 3000 });
  setTimeout(async () => {
    await hs.clearFaults();
    faultActive = false;
  }, 5000).unref();
}, 30000);
faultTimer.unref();

let warmRss = 0;
let next = 0;
const started = Date.now();
await Promise.all(
  Array.from({ length: 5 }, async () => {
    while (Date.now() < deadline) {
      const p = parents[next++ % parents.length] as (typeof parents)[number] & { record?: (r: unknown) => void };
      const res = await pool.request({
        path: p.path,
        method: "POST",
        body: JSON.stringify(p.body()),
        headers: { "content-type": "application/json" },
      });
      const text = await res.body.text();
      syncs++;
      if (res.statusCode === 200) p.record?.(JSON.parse(text));
      else if (!faultActive) {
        unexpected++;
        if (unexpectedSamples.length < 5) unexpectedSamples.push(`${p.path} ${res.statusCode} ${text.slice(0, 200)}`);
      }
      if (!warmRss && Date.now() - started > Math.min(60000, (seconds * 1000) / 5)) {
        warmRss = 1; // claimed before the await, so one worker scrapes; the scrape also resets the lag histogram
        warmRss = (await serverMetrics()).rss;
      }
    }
  }),
);
const end = await serverMetrics();
const endRss = end.rss;
const growth = warmRss ? (endRss - warmRss) / warmRss : 0;
const p99 = end.lagP99 * 1000;
console.log(
  JSON.stringify(
    {
      seconds,
      parents: parents.length,
      syncs,
      syncsPerSecond: Math.round(syncs / seconds),
      unexpectedErrors: unexpected,
      rssWarmMiB: +(warmRss / 2 ** 20).toFixed(1),
      rssEndMiB: +(endRss / 2 ** 20).toFixed(1),
      rssGrowthPct: +(growth * 100).toFixed(2),
      eventLoopP99ms: +p99.toFixed(1),
      headscaleRequests: hs.requests.length,
    },
    null,
    2,
  ),
);
if (unexpectedSamples.length) console.log(unexpectedSamples.join("\n"));
server.kill("SIGTERM");
await pool.close();
await hs.close();
const ok = unexpected === 0 && growth < 0.1 && p99 < 50;
console.log(ok ? "soak: PASS" : "soak: FAIL");
process.exit(ok ? 0 : 1);
