/**
 * gRPC through the tailnet (issue 35): grpc-go's own route_guide example (google.golang.org/grpc/examples,
 * built by scripts/real-deps.sh) on both ends. Its server runs as the backend pod, speaking h2c; an Ingress of
 * class `tailnet` sends its host to the Service, whose port says `appProtocol: kubernetes.io/h2c`, so the
 * agent forwards HTTP/2 to it. The route_guide client runs on the laptop and dials the agent node's tailnet
 * address through the laptop's tailscaled (its outbound HTTP proxy as HTTPS_PROXY, which grpc-go honours:
 * google.golang.org/grpc internal/resolver/delegatingresolver uses http.ProxyFromEnvironment), over TLS
 * verified against the test CA for the Ingress's host (-server_host_override, which grpc-go also sends as
 * :authority). The client makes all four call kinds: GetFeature (unary), ListFeatures (server streaming),
 * RecordRoute (client streaming) and RouteChat (bidi); it exits non-zero on any failed call.
 * Everything stays in the test namespaces: the client reaches nothing but the tailnet.
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { agentHostname } from "../../src/kinds/shared/dns-tenancy.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { bins, routeGuideDb } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { RealProcess } from "./net.js";
import { API, agentPods, podRunnerFor, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import type { PodRunner } from "./pods.js";
import { type RealWorld, startRealWorld } from "./world.js";

const NS = "monitoring";
const T = "tailnet.internal";
const GUIDE = `guide.${BASE_DOMAIN}`;
const ING = "networking.k8s.io/v1";
const GRPC_PORT = 50051;
/**
 * The route_guide server listens on localhost only (examples/route_guide/server/server.go:
 * net.Listen("tcp", "localhost:<port>")), so a byte forwarder in its namespace makes it a Service endpoint.
 */
const LOCAL_PORT = 50052;
const FORWARDER = `const net=require("node:net");net.createServer(c=>{const u=net.connect(${LOCAL_PORT},"127.0.0.1");c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())}).listen(${GRPC_PORT},"0.0.0.0",()=>console.log("forwarder up"));`;

describe("gRPC through an Ingress of class tailnet on the real tailnet", {
  timeout: 600_000,
  concurrency: false,
}, () => {
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  const procs: RealProcess[] = [];
  let caFile: string;

  const state = () => op.mc.get(ING, "Ingress", "guide", NS)?.metadata.labels?.[`${T}/ingress-state`];

  before(async () => {
    world = await startRealWorld({ id: "grpc" });
    const base = tailnetSpec(world);
    op = await startOperator(world, { tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } } });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    const host = await world.net.addHost("guide");
    procs.push(
      host.spawn(bins.routeGuideServer, ["-port", String(LOCAL_PORT), "-json_db_file", routeGuideDb], {
        logName: "route_guide_server",
      }),
    );
    const forwarder = host.spawn(bins.node, ["-e", FORWARDER], { logName: "forwarder" });
    procs.push(forwarder);
    const deadline = Date.now() + 10_000;
    while (!forwarder.logs().includes("forwarder up")) {
      if (Date.now() > deadline) throw new Error(`forwarder did not start\n${forwarder.logs()}`);
      await sleep(50);
    }
    pods.addWorkload({ namespace: NS, name: "route-guide", labels: { app: "route-guide" }, host });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "route-guide", namespace: NS },
      spec: {
        selector: { app: "route-guide" },
        ports: [{ name: "grpc", port: GRPC_PORT, appProtocol: "kubernetes.io/h2c" }],
      },
    });
    const cert = await world.headscale.pki.issue({ names: [GUIDE] });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "guide-tls", namespace: NS },
      type: "kubernetes.io/tls",
      data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
    });
    op.mc.apply({
      apiVersion: ING,
      kind: "IngressClass",
      metadata: { name: "tailnet" },
      spec: { controller: "tailnet.internal/ingress" },
    });
    caFile = `${world.peers.laptop.host.dir}/grpc-ca.pem`;
    await writeFile(caFile, world.headscale.caPem);
  });
  after(async () => {
    await pods?.close();
    for (const p of procs) await p.kill("SIGKILL");
    await op?.close();
    await world?.close();
  });

  const nodeIp = async () => {
    const peers = Object.values((await world.peers.laptop.status()).Peer ?? {});
    return peers.find((p) => p.HostName === agentHostname("guide", NS))?.TailscaleIPs?.find((ip) => !ip.includes(":"));
  };
  /** The route_guide client on the laptop, through its tailscaled's HTTP proxy, with TLS for GUIDE. */
  const routeGuide = async () => {
    const ip = await nodeIp();
    if (!ip) return { code: -1, out: "the agent node is not in the laptop's netmap" };
    const r = await world.peers.laptop.host.exec(
      bins.routeGuideClient,
      ["-addr", `${ip}:443`, "-tls", "-ca_file", caFile, "-server_host_override", GUIDE],
      { env: { HTTPS_PROXY: world.peers.laptop.httpProxy }, timeoutMs: 60_000 },
    );
    return { code: r.code, out: `${r.stdout}${r.stderr}` };
  };
  const describeWorld = () =>
    [
      `ingress: ${JSON.stringify(op.mc.get(ING, "Ingress", "guide", NS)?.metadata)}`,
      `tailnetingress: ${JSON.stringify(op.mc.get(API, "TailnetIngress", "guide", NS)?.spec)} ${JSON.stringify(op.mc.get(API, "TailnetIngress", "guide", NS)?.status)}`,
      `hook errors: ${op.failures()}`,
      ...agentPods(pods, NS, "guide").map((p) => p.logs()),
      ...procs.map((p) => p.logs()),
    ].join("\n");

  it("the Ingress's h2c Service port becomes backend.protocol h2c, and the Ingress becomes Ready", async () => {
    op.mc.apply({
      apiVersion: ING,
      kind: "Ingress",
      metadata: {
        name: "guide",
        namespace: NS,
        uid: "uid-ing-guide",
        annotations: { [`${T}/allow-from`]: "group:eng" },
      },
      spec: {
        ingressClassName: "tailnet",
        tls: [{ hosts: [GUIDE], secretName: "guide-tls" }],
        rules: [
          {
            host: GUIDE,
            http: {
              paths: [
                {
                  path: "/",
                  pathType: "Prefix",
                  backend: { service: { name: "route-guide", port: { name: "grpc" } } },
                },
              ],
            },
          },
        ],
      },
    });
    const deadline = Date.now() + 240_000;
    while (state() !== "Ready") {
      if (Date.now() > deadline) throw new Error(`the Ingress is not Ready\n${describeWorld()}`);
      await pods.sync();
      pods.check();
      await op.mc.settle(8).catch(() => undefined);
      await sleep(300);
    }
    const tni = op.mc.get(API, "TailnetIngress", "guide", NS) as { spec: { exposes: { backend: unknown }[] } };
    assert.deepEqual(tni.spec.exposes[0].backend, { service: "route-guide", port: GRPC_PORT, protocol: "h2c" });
  });

  it("grpc-go's route_guide client makes all four call kinds through the tailnet, over TLS verified for the host", async () => {
    // Headscale hands the new node to the laptop's netmap asynchronously: allow a few tries.
    let got = await routeGuide();
    const until = Date.now() + 60_000;
    while (got.code !== 0 && Date.now() < until) {
      await sleep(1000);
      got = await routeGuide();
    }
    assert.equal(got.code, 0, `${got.out}\n${describeWorld()}`);
    // unary: GetFeature for a point the database has (printed as the message's text form)
    assert.match(got.out, /name:\s*"Berkshire Valley Management Area Trail, Jefferson, NJ, USA"\s+location:/);
    // server streaming: ListFeatures streams every feature of the database within the client's rectangle
    // (examples/route_guide/client/client.go: 40°..42° N, 75°..73° W), each one printed
    const db = JSON.parse(await readFile(routeGuideDb, "utf8")) as {
      location: { latitude: number; longitude: number };
    }[];
    const inRect = db.filter(
      ({ location: l }) => l.latitude >= 4e8 && l.latitude <= 4.2e8 && l.longitude >= -7.5e8 && l.longitude <= -7.3e8,
    ).length;
    assert.ok(inRect > 10);
    assert.equal((got.out.match(/Feature: name: /g) ?? []).length, inRect, got.out);
    // client streaming: RecordRoute's summary of the points it sent
    assert.match(got.out, /Route summary: point_count:\s*\d+/);
    // bidi: RouteChat answers each note with the earlier notes at its location, while the client still sends
    assert.match(got.out, /Got message First message at point\(0, 1\)/);
    assert.match(got.out, /Got message Third message at point\(0, 3\)/);
  });
});
