/**
 * Sync hook throughput and p99 against a fastify echo of the same payload (an egress with 16
 * targets and its observed children, plus its Tailnet and credentials in related), both served
 * in this process and loaded by autocannon with Metacontroller's 5 workers; and the Headscale
 * calls a wave of 1,000 egress syncs costs.
 */
import autocannon from "autocannon";
import Fastify from "fastify";
import { configFrom } from "../src/config.js";
import type { K8sObject } from "../src/k8s/objects.js";
import { buildServer } from "../src/server/app.js";
import { startFakeHeadscale } from "../test/fakes/headscale/index.js";
import { parentObject, syncRequest } from "../test/fixtures/hooks.js";

export interface HookBench {
  payloadBytes: number;
  sync: { rps: number; p99ms: number };
  echo: { rps: number; p99ms: number };
  rpsRatio: number;
  p99Ratio: number;
  waveSyncs: number;
  waveHeadscaleCalls: number;
  rssMiB: number;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

function egressWorld(url: string, apiKey: string, i: number) {
  const tailnet = parentObject("Tailnet", "home", {
    headscale: { url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
    allowedEgressTargets: ["100.64.0.0/10"],
  });
  const creds: K8sObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
    data: { url: b64(url), apiKey: b64(apiKey) },
  };
  const targets = Array.from({ length: 16 }, (_, t) => ({
    name: `db-${t}`,
    host: `100.64.0.${t + 10}`,
    ports: [{ port: 5432 }],
  }));
  const egress = parentObject(
    "TailnetEgress",
    `shop-${i}`,
    { tailnetRef: { name: "home" }, targets },
    { namespace: "shop" },
  );
  return { tailnet, creds, egress };
}

async function load(url: string, body: string, seconds: number) {
  const r = await autocannon({
    url,
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
    connections: 5,
    pipelining: 1,
    duration: seconds,
  });
  return { rps: r.requests.average, p99ms: r.latency.p99, errors: r.errors + r.non2xx };
}

export async function benchHooks(seconds = 5): Promise<HookBench> {
  const hs = await startFakeHeadscale();
  const config = configFrom({ logLevel: "silent", hooks: { maxInFlight: 1000 } });
  const app = buildServer(config, { logger: false });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const echo = Fastify({ bodyLimit: config.hooks.bodyLimitBytes });
  echo.post("/echo", async (req) => req.body);
  await echo.listen({ port: 0, host: "127.0.0.1" });
  try {
    const w = egressWorld(hs.url, hs.apiKey, 0);
    const first = await app.inject({
      method: "POST",
      url: "/hooks/egress/sync",
      payload: syncRequest({ parent: w.egress, related: [w.tailnet, w.creds] }),
    });
    const children = (first.json() as { children: K8sObject[] }).children;
    const body = JSON.stringify(syncRequest({ parent: w.egress, children, related: [w.tailnet, w.creds] }));
    const syncUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/hooks/egress/sync`;
    const echoUrl = `http://127.0.0.1:${(echo.server.address() as { port: number }).port}/echo`;
    await load(echoUrl, body, 1); // warm-up
    await load(syncUrl, body, 1);
    const e = await load(echoUrl, body, seconds);
    const s = await load(syncUrl, body, seconds);
    if (s.errors) throw new Error(`sync bench saw ${s.errors} errors`);
    const rssMiB = process.memoryUsage().rss / 2 ** 20;

    // a wave: 1,000 different, already provisioned egresses (their key Secret and status observed,
    // as on every resync) synced 5 at a time by a fresh server, so the cache starts cold
    const wave = Array.from({ length: 1000 }, (_, i) => ({
      ...egressWorld(hs.url, hs.apiKey, i),
      children: [] as K8sObject[],
      status: undefined as unknown,
    }));
    const syncWave = async (server: typeof app, record: boolean) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 5 }, async () => {
          while (next < wave.length) {
            const x = wave[next++];
            const parent = x.status ? { ...x.egress, status: x.status } : x.egress;
            const res = await server.inject({
              method: "POST",
              url: "/hooks/egress/sync",
              payload: syncRequest({
                parent: parent as K8sObject,
                children: x.children,
                related: [x.tailnet, x.creds],
              }),
            });
            if (record) {
              const body = res.json() as { children: K8sObject[]; status: unknown };
              x.children = body.children;
              x.status = body.status;
            }
          }
        }),
      );
    };
    const provision = buildServer(config, { logger: false });
    await provision.ready();
    await syncWave(provision, true);
    await provision.close();
    const app2 = buildServer(config, { logger: false });
    await app2.ready();
    const before = hs.requests.length;
    await syncWave(app2, false);
    const waveCalls = hs.requests.length - before;
    await app2.close();
    return {
      payloadBytes: body.length,
      sync: { rps: s.rps, p99ms: s.p99ms },
      echo: { rps: e.rps, p99ms: e.p99ms },
      rpsRatio: s.rps / e.rps,
      p99Ratio: s.p99ms / Math.max(e.p99ms, 1),
      waveSyncs: wave.length,
      waveHeadscaleCalls: waveCalls,
      rssMiB,
    };
  } finally {
    await app.close();
    await echo.close();
    await hs.close();
  }
}
