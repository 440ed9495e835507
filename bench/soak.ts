/**
 * `npm run soak`: Metacontroller's 5 workers syncing 2,000 parents of mixed kinds against the fake
 * Headscale for SOAK_SECONDS (default 600), with a fault injected every 30 s for 5 s. Prints the
 * figures and fails when a hook answered non-200 outside the injected faults' consequences, when
 * RSS grew by 10 % or more after warm-up, or when event-loop delay p99 reached 50 ms.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { configFrom } from "../src/config.js";
import type { K8sObject } from "../src/k8s/objects.js";
import { buildServer } from "../src/server/app.js";
import { startFakeHeadscale } from "../test/fakes/headscale/index.js";
import { parentObject, syncRequest } from "../test/fixtures/hooks.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 600);
const PARENTS = Number(process.env.SOAK_PARENTS ?? 2000);
const b64 = (s: string) => Buffer.from(s).toString("base64");

const hs = await startFakeHeadscale();
for (let i = 0; i < 50; i++)
  hs.addNode({ name: `node-${i}`, tags: [`tag:k8s-ns${i % 10}-obj${i}`], availableRoutes: [`10.${i}.0.0/16`] });
const app = buildServer(configFrom({ logLevel: "silent", headscale: { timeoutSeconds: 2, cacheTTLSeconds: 10 } }), {
  logger: false,
});
await app.ready();

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

const delay = monitorEventLoopDelay({ resolution: 10 });
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
      const res = await app.inject({
        method: "POST",
        url: p.path,
        payload: JSON.stringify(p.body()),
        headers: { "content-type": "application/json" },
      });
      syncs++;
      if (res.statusCode === 200) p.record?.(res.json());
      else if (!faultActive) {
        unexpected++;
        if (unexpectedSamples.length < 5)
          unexpectedSamples.push(`${p.path} ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
      if (!warmRss && Date.now() - started > Math.min(60000, (seconds * 1000) / 5)) {
        warmRss = process.memoryUsage().rss;
        delay.enable();
      }
    }
  }),
);
const endRss = process.memoryUsage().rss;
const growth = warmRss ? (endRss - warmRss) / warmRss : 0;
const p99 = delay.percentile(99) / 1e6;
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
await app.close();
await hs.close();
const ok = unexpected === 0 && growth < 0.1 && p99 < 50;
console.log(ok ? "soak: PASS" : "soak: FAIL");
process.exit(ok ? 0 : 1);
