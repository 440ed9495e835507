/**
 * The Kubernetes Ingress of class `tailnet` in the real world (issue 26): the emulated Metacontroller
 * plays decoratorcontrollers/ingress-class.yaml against the real hook server, the TailnetIngress it
 * attaches runs its agent pod (containerboot + tailscaled v1.102.5 and the operator's agent) against the
 * real Headscale 0.29.3, and the laptop (alice, group:eng) reaches it through its own tailscaled:
 * - two hosts of one Ingress, `site.<baseDomain>` and the bare label `wiki`, each to its own Service on
 *   its own workload host: over https with the spec.tls certificate (verified against the CA, SNI picks
 *   the host) each request reaches that host's backend, whatever its path;
 * - the Ingress says Ready only once the laptop's bytes flow, and its status.loadBalancer names both
 *   tailnet names (what `kubectl get ingress` shows under ADDRESS);
 * - an Ingress of another class in the same namespace is never written to.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { agentHostname } from "../../src/kinds/shared/dns-tenancy.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { bins } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import { httpsVia } from "./https.js";
import type { Host, RealProcess } from "./net.js";
import { API, agentPods, podRunnerFor, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import type { PodRunner } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "monitoring";
const T = "tailnet.internal";
const SITE = `site.${BASE_DOMAIN}`;
const WIKI = `wiki.${BASE_DOMAIN}`;
const ING = "networking.k8s.io/v1";
/** An HTTP backend answering "<who> <path>". */
const backendScript = (who: string, port: number) =>
  `require("node:http").createServer((q,s)=>{s.setHeader("content-type","text/plain");s.end("${who} "+q.url)}).listen(${port},"0.0.0.0",()=>console.log("http up"));`;

describe("Ingress class tailnet on the real tailnet", { timeout: 600_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  const backends: RealProcess[] = [];
  const readyChecks: { flowed: boolean; detail: string }[] = [];

  const ingress = (name: string) => op.mc.get(ING, "Ingress", name, NS);
  const state = () => ingress("portal")?.metadata.labels?.[`${T}/ingress-state`];
  let otherBefore: unknown;

  before(async () => {
    world = await startRealWorld({ id: "ingclass" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    const hosts: Host[] = [];
    for (const [name, port] of [
      ["site", 3000],
      ["wiki", 8080],
    ] as const) {
      const host = await world.net.addHost(name);
      hosts.push(host);
      const p = host.spawn(bins.node, ["-e", backendScript(`hello from ${name}`, port)], { logName: name });
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
        spec: { selector: { app: name }, ports: [{ name: "http", port }] },
      });
    }
    const cert = await world.headscale.pki.issue({ names: [SITE, WIKI] });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "portal-tls", namespace: NS },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
    });
    op.mc.apply({
      apiVersion: ING,
      kind: "IngressClass",
      metadata: { name: "tailnet" },
      spec: { controller: "tailnet.internal/ingress" },
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
  const get = async (name: string, path: string) => {
    const ip = await nodeIp();
    if (!ip) return "error: portal not in the laptop's netmap";
    const got = await httpsVia(world.peers.laptop, ip, 443, name, world.headscale.caPem, path);
    return "status" in got ? `${got.status} ${got.body}` : `error: ${got.error}`;
  };
  const describeWorld = () =>
    [
      `ingress: ${JSON.stringify(ingress("portal")?.metadata)} ${JSON.stringify(ingress("portal")?.status)}`,
      `tailnetingress: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "portal", NS)?.status)}`,
      `hook errors: ${op.failures()}`,
      ...agentPods(pods, NS, "portal").map((p) => p.logs()),
    ].join("\n");
  const drive = async (what: string, done: () => boolean, ms = 180_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await pods.sync();
      pods.check();
      await op.mc.settle(8).catch(() => undefined);
      if (state() === "Ready") {
        // Headscale hands the new node to the laptop's netmap asynchronously: allow 15 s
        const until = Date.now() + 15_000;
        let got = await get(SITE, "/probe");
        while (got !== "200 hello from site /probe" && Date.now() < until) {
          await sleep(500);
          got = await get(SITE, "/probe");
        }
        readyChecks.push({ flowed: got === "200 hello from site /probe", detail: got });
      }
      if (done()) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${describeWorld()}`);
      await sleep(300);
    }
  };

  it("an Ingress of class tailnet with two hosts becomes Ready, never before the laptop's bytes flow; the other class's Ingress is untouched", async () => {
    const other = {
      apiVersion: ING,
      kind: "Ingress",
      metadata: { name: "public", namespace: NS, uid: "uid-ing-public" },
      spec: {
        ingressClassName: "nginx",
        rules: [
          {
            host: "site.example.org",
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: { service: { name: "site", port: { number: 3000 } } } },
              ],
            },
          },
        ],
      },
      status: { loadBalancer: { ingress: [{ ip: "203.0.113.7" }] } },
    };
    op.mc.apply(other);
    otherBefore = structuredClone(ingress("public"));
    op.mc.apply({
      apiVersion: ING,
      kind: "Ingress",
      metadata: {
        name: "portal",
        namespace: NS,
        uid: "uid-ing-portal",
        annotations: { [`${T}/allow-from`]: "group:eng" },
      },
      spec: {
        ingressClassName: "tailnet",
        tls: [{ hosts: [SITE, WIKI], secretName: "portal-tls" }],
        rules: [
          {
            host: SITE,
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: { service: { name: "site", port: { name: "http" } } } },
              ],
            },
          },
          {
            host: "wiki",
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend: { service: { name: "wiki", port: { number: 8080 } } } },
              ],
            },
          },
        ],
      },
    });
    const t0 = Date.now();
    await drive("the Ingress's state Ready", () => state() === "Ready");
    console.log(`# Ingress of class tailnet Ready after ${Date.now() - t0} ms`);
    assert.deepEqual(
      readyChecks.filter((r) => !r.flowed),
      [],
      "Ready on the Ingress while the laptop's bytes did not flow",
    );
    assert.deepEqual(ingress("portal")?.status, {
      loadBalancer: {
        ingress: [
          { hostname: SITE, ports: [{ port: 443, protocol: "TCP" }] },
          { hostname: WIKI, ports: [{ port: 443, protocol: "TCP" }] },
        ],
      },
    });
    assert.deepEqual(ingress("public"), otherBefore, "the nginx Ingress: not a byte changed");
    assert.ok(!op.events.events.some((e) => e.regarding.metadata.name === "public"), "no Event on it");
  });

  it("over https with the spec.tls certificate, each host reaches its own backend, whatever the path", async () => {
    assert.equal(await get(SITE, "/"), "200 hello from site /");
    assert.equal(await get(SITE, "/a/b?c=d"), "200 hello from site /a/b?c=d");
    assert.equal(await get(WIKI, "/page/1"), "200 hello from wiki /page/1");
    // the certificate served is the Secret's, naming the host the client asked for (SNI)
    const ip = await nodeIp();
    assert.ok(ip);
    const got = await httpsVia(world.peers.laptop, ip, 443, WIKI, world.headscale.caPem, "/cert");
    assert.ok("status" in got, JSON.stringify(got));
    assert.ok(got.cert.checkHost(WIKI) && got.cert.checkHost(SITE), "the spec.tls certificate");
    assert.deepEqual(ingress("public"), otherBefore, "the nginx Ingress is still untouched");
  });
  it("one host, two paths, two backends (issue 35): /wiki by path element to wiki, the rest to site; a dot segment is refused", async () => {
    const portal = structuredClone(ingress("portal")) as { spec: { rules: { host: string; http: unknown }[] } };
    portal.spec.rules[0].http = {
      paths: [
        { path: "/", pathType: "Prefix", backend: { service: { name: "site", port: { name: "http" } } } },
        { path: "/wiki", pathType: "Prefix", backend: { service: { name: "wiki", port: { number: 8080 } } } },
      ],
    };
    op.mc.apply(portal as never);
    // the new agent config rolls the replica (its template hash); then the host routes per request
    const deadline = Date.now() + 180_000;
    let got = "";
    while (Date.now() < deadline) {
      await drive("the Ingress Ready again", () => state() === "Ready");
      got = await get(SITE, "/wiki/page");
      if (got === "200 hello from wiki /wiki/page") break;
      await sleep(500);
    }
    assert.equal(got, "200 hello from wiki /wiki/page", describeWorld());
    assert.equal(await get(SITE, "/wiki"), "200 hello from wiki /wiki");
    // by path element, not by string prefix: /wikipedia is site's
    assert.equal(await get(SITE, "/wikipedia"), "200 hello from site /wikipedia");
    assert.equal(await get(SITE, "/a/b?c=d"), "200 hello from site /a/b?c=d");
    // a target a stricter parser behind us would read differently never reaches a backend
    assert.match(await get(SITE, "/wiki/../admin"), /^400 /);
    assert.match(await get(SITE, "/%77iki/x"), /^400 /);
    assert.equal(await get(WIKI, "/page/1"), "200 hello from wiki /page/1", "the other host is unchanged");
  });
});
