/**
 * The Gateway API class `tailnet` in the real world (issue 35): the emulated Metacontroller plays
 * decoratorcontrollers/gateway-api/*.yaml against the real hook server, the TailnetIngress a Gateway gets runs
 * its agent pod (containerboot + tailscaled v1.102.5 and the operator's agent) against the real Headscale
 * 0.29.3, and the laptop (alice, group:eng) reaches it through its own tailscaled, over https with the
 * listener's certificate: one host, two backends, chosen per request by path, by header, by method and by
 * weight as the HTTPRoute says; a backendRef to a Service that does not exist answers 500 (its share); a
 * dot segment is refused with 400 and reaches no backend. The Gateway is Programmed with the tailnet name in
 * status.addresses, the route Accepted.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { agentHostname } from "../../src/kinds/shared/dns-tenancy.js";
import { CONTROLLER_NAME } from "../../src/kinds/shared/gateway-api-objects.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { bins } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { Host, RealProcess } from "./net.js";
import {
  API,
  agentPods,
  podRunnerFor,
  type RealOperator,
  socksConnect,
  startOperator,
  tailnetSpec,
} from "./operator.js";
import type { PodRunner } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "shop";
const T = "tailnet.internal";
const GW = "gateway.networking.k8s.io/v1";
const SHOP = `shop.${BASE_DOMAIN}`;
const backendScript = (who: string, port: number) =>
  `require("node:http").createServer((q,s)=>{s.setHeader("content-type","text/plain");s.end("${who} "+q.method+" "+q.url)}).listen(${port},"0.0.0.0",()=>console.log("http up"));`;

type Cond = { type: string; status: string; reason: string };

describe("Gateway API class tailnet on the real tailnet", { timeout: 600_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  const backends: RealProcess[] = [];

  const gateway = () => op.mc.get(GW, "Gateway", "portal", NS);
  const programmed = () =>
    ((gateway()?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []).find((c) => c.type === "Programmed");

  before(async () => {
    world = await startRealWorld({ id: "gwapi" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    for (const [name, port] of [
      ["site", 3000],
      ["wiki", 8080],
    ] as const) {
      const host: Host = await world.net.addHost(name);
      const p = host.spawn(bins.node, ["-e", backendScript(name, port)], { logName: name });
      backends.push(p);
      const deadline = Date.now() + 10_000;
      while (!p.logs().includes("http up")) {
        if (Date.now() > deadline) throw new Error(`backend ${name} did not start\n${p.logs()}`);
        await sleep(50);
      }
      pods.addWorkload({ namespace: NS, name, labels: { app: name }, host });
      op.mc.apply({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name, namespace: NS },
        spec: { selector: { app: name }, ports: [{ port }] },
      });
    }
    const cert = await world.headscale.pki.issue({ names: [SHOP] });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "shop-tls", namespace: NS },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
    });
    op.mc.apply({
      apiVersion: GW,
      kind: "GatewayClass",
      metadata: { name: "tailnet" },
      spec: { controllerName: CONTROLLER_NAME },
    });
  });
  after(async () => {
    await pods?.close();
    for (const b of backends) await b.kill("SIGKILL");
    await op?.close();
    await world?.close();
  });

  const nodeIp = async () => {
    const peers = Object.values((await world.peers.laptop.status()).Peer ?? {});
    return peers.find((p) => p.HostName === agentHostname("portal", NS))?.TailscaleIPs?.find((ip) => !ip.includes(":"));
  };
  /** One request over https through the laptop's tailscaled (SOCKS5), certificate verified for SHOP. */
  const send = async (method: string, path: string, headers: string[] = []): Promise<string> => {
    const ip = await nodeIp();
    if (!ip) return "error: portal not in the laptop's netmap";
    try {
      const socket = await socksConnect(world.peers.laptop, ip, 443);
      return await new Promise((resolve) => {
        const tls = tlsConnect({ socket, servername: SHOP, ca: world.headscale.caPem, rejectUnauthorized: true });
        const timer = setTimeout(() => {
          tls.destroy();
          resolve("error: no answer within 8 s");
        }, 8000);
        let raw = "";
        tls.on("secureConnect", () => {
          const extra = headers.map((h) => `${h}\r\n`).join("");
          tls.write(
            `${method} ${path} HTTP/1.1\r\nHost: ${SHOP}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`,
          );
        });
        tls.on("data", (d) => {
          raw += d.toString("utf8");
        });
        tls.on("end", () => {
          clearTimeout(timer);
          const m = /^HTTP\/1\.1 (\d{3})/.exec(raw);
          resolve(m ? `${m[1]} ${raw.slice(raw.indexOf("\r\n\r\n") + 4)}`.trim() : `error: ${raw.slice(0, 200)}`);
        });
        tls.on("error", (e) => {
          clearTimeout(timer);
          resolve(`error: ${e.message}`);
        });
      });
    } catch (e) {
      return `error: ${(e as Error).message}`;
    }
  };
  const describeWorld = () =>
    [
      `gateway: ${JSON.stringify(gateway()?.status)}`,
      `route: ${JSON.stringify(op.mc.get(GW, "HTTPRoute", "portal", NS)?.status)}`,
      `tailnetingress: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "portal", NS)?.status)}`,
      `hook errors: ${op.failures()}`,
      ...agentPods(pods, NS, "portal").map((p) => p.logs()),
    ].join("\n");

  it("a Gateway and its HTTPRoute become Programmed and Accepted; the laptop reaches two backends by path, header, method and weight", async () => {
    op.mc.apply({
      apiVersion: GW,
      kind: "Gateway",
      metadata: { name: "portal", namespace: NS, annotations: { [`${T}/allow-from`]: "group:eng" } },
      spec: {
        gatewayClassName: "tailnet",
        listeners: [
          {
            name: "https",
            protocol: "HTTPS",
            port: 443,
            hostname: SHOP,
            tls: { certificateRefs: [{ name: "shop-tls" }] },
          },
        ],
      },
    });
    const backend = (name: string, port: number, weight?: number) => ({
      name,
      port,
      ...(weight !== undefined ? { weight } : {}),
    });
    op.mc.apply({
      apiVersion: GW,
      kind: "HTTPRoute",
      metadata: { name: "portal", namespace: NS },
      spec: {
        parentRefs: [{ name: "portal" }],
        hostnames: [SHOP],
        rules: [
          { matches: [{ path: { type: "PathPrefix", value: "/wiki" } }], backendRefs: [backend("wiki", 8080)] },
          {
            matches: [{ path: { value: "/" }, headers: [{ name: "X-Canary", value: "on" }] }],
            backendRefs: [backend("wiki", 8080)],
          },
          { matches: [{ path: { value: "/api" }, method: "POST" }], backendRefs: [backend("wiki", 8080)] },
          {
            matches: [{ path: { type: "Exact", value: "/split" } }],
            backendRefs: [backend("site", 3000, 1), backend("wiki", 8080, 1)],
          },
          { matches: [{ path: { type: "Exact", value: "/broken" } }], backendRefs: [backend("missing", 80)] },
          { matches: [{ path: { value: "/" } }], backendRefs: [backend("site", 3000)] },
        ],
      },
    });
    const t0 = Date.now();
    const deadline = Date.now() + 240_000;
    let got = "";
    for (;;) {
      await pods.sync();
      pods.check();
      await op.mc.settle(8).catch(() => undefined);
      if (programmed()?.status === "True") {
        got = await send("GET", "/wiki/page");
        if (got === "200 wiki GET /wiki/page") break;
      }
      if (Date.now() > deadline) throw new Error(`not Programmed and served: ${got}\n${describeWorld()}`);
      await sleep(500);
    }
    console.log(`# Gateway Programmed and served after ${Date.now() - t0} ms`);
    const gwStatus = gateway()?.status as { addresses?: unknown } | undefined;
    assert.deepEqual(gwStatus?.addresses, [{ type: "Hostname", value: SHOP }]);
    const route = op.mc.get(GW, "HTTPRoute", "portal", NS)?.status as
      | { parents?: { conditions: Cond[] }[] }
      | undefined;
    const parents = route?.parents ?? [];
    assert.deepEqual(
      parents[0]?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`),
      ["Accepted=True/Accepted", "ResolvedRefs=False/BackendNotFound"],
    );

    assert.equal(await send("GET", "/x/y?z=1"), "200 site GET /x/y?z=1");
    assert.equal(await send("GET", "/wikipedia"), "200 site GET /wikipedia", "by path element");
    assert.equal(await send("GET", "/x", ["X-Canary: on"]), "200 wiki GET /x", "by header");
    assert.equal(await send("GET", "/x", ["x-canary: off"]), "200 site GET /x");
    assert.equal(await send("POST", "/api/orders"), "200 wiki POST /api/orders", "by method");
    assert.equal(await send("GET", "/api/orders"), "200 site GET /api/orders");
    const split = new Set<string>();
    for (let i = 0; i < 24 && split.size < 2; i++) split.add((await send("GET", "/split")).split(" ")[1]);
    assert.deepEqual([...split].sort(), ["site", "wiki"], "both weighted backends answer");
    assert.match(await send("GET", "/broken"), /^500\b/, "an unresolved backendRef's share is answered 500");
    assert.match(await send("GET", "/wiki/../admin"), /^400\b/, "a dot segment never reaches a backend");
  });
});
