/**
 * Certificates through cert-manager in the real world (issue 35): the real cert-manager controllers (v1.21.2, built
 * from its module by scripts/real-deps.sh) against the real kube-apiserver of kube/cluster.ts, with a CA
 * ClusterIssuer bootstrapped from a self-signed one; the operator's hooks (with the cert-manager component) return
 * the Certificate for exactly the name the TailnetIngress publishes; cert-manager issues it; the agent pod (real
 * containerboot + tailscaled against the real Headscale) serves it; the laptop's tailscaled client verifies it over
 * https against cert-manager's CA. A forced renewal (what `cmctl renew` does: the Issuing condition set on the
 * Certificate's status) is served without an agent restart, and a keep-alive connection held by the laptop across
 * it keeps working. A ClusterIssuer the Tailnet does not allow gets no Certificate. The Certificate and its Secret
 * travel between the operator loop's store and the API server through cert-manager.ts's bridge.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { parentObject } from "../fixtures/hooks.js";
import { bins, certManagerController } from "./bins.js";
import { CA_ISSUER, CertificateBridge, caIssuer, type RealCertManager, startCertManager } from "./cert-manager.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import { httpsVia } from "./https.js";
import { type Cluster, startCluster } from "./kube/cluster.js";
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

const NS = "monitoring";
const HTTP_PORT = 3000;
const DASH = `dash.${BASE_DOMAIN}`;
const BACKEND = `require("node:http").createServer((q,s)=>{s.setHeader("content-type","text/plain");s.end("hello from web "+q.url)}).listen(${HTTP_PORT},"0.0.0.0",()=>console.log("http up"));`;
type Cond = { type: string; status: string; reason: string; message: string };

/** A keep-alive HTTPS connection from the laptop, held across the renewal. */
async function heldConnection(world: RealWorld, ip: string, ca: string): Promise<TLSSocket> {
  const raw = await socksConnect(world.peers.laptop, ip, 443);
  const tls = tlsConnect({ socket: raw, servername: DASH, ca, rejectUnauthorized: true });
  await new Promise<void>((resolve, reject) => {
    tls.once("secureConnect", resolve);
    tls.once("error", reject);
  });
  return tls;
}

/** One request on the held connection (Content-Length framed): the status and body. */
function ask(tls: TLSSocket, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let raw = "";
    const timer = setTimeout(() => reject(new Error(`no answer on the held connection: ${JSON.stringify(raw)}`)), 8000);
    const onData = (d: Buffer) => {
      raw += d.toString();
      const end = raw.indexOf("\r\n\r\n");
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(raw)?.[1] ?? -1);
      if (end < 0 || length < 0 || raw.length < end + 4 + length) return;
      clearTimeout(timer);
      tls.off("data", onData);
      resolve({ status: Number(raw.slice(9, 12)), body: raw.slice(end + 4, end + 4 + length) });
    };
    tls.on("data", onData);
    tls.write(`GET ${path} HTTP/1.1\r\nHost: ${DASH}\r\nConnection: keep-alive\r\n\r\n`);
  });
}

describe("certificates from the real cert-manager on the real tailnet", {
  timeout: 900_000,
  concurrency: false,
}, () => {
  let cluster: Cluster;
  let cm: RealCertManager;
  let caPem: string;
  let world: RealWorld;
  let op: RealOperator;
  let pods: PodRunner;
  let web: Host;
  let backend: RealProcess;
  let bridge: CertificateBridge;

  before(async () => {
    try {
      accessSync(certManagerController, constants.X_OK);
    } catch {
      throw new Error(`real-world tests: missing ${certManagerController}: run: bash scripts/real-deps.sh`);
    }
    const t0 = Date.now();
    cluster = await startCluster();
    cm = await startCertManager(cluster);
    caPem = await caIssuer(cluster, cm);
    cluster.kubectl(["create", "namespace", NS]);
    console.log(`# kube-apiserver, cert-manager and its CA issuer ready after ${Date.now() - t0} ms`);
    world = await startRealWorld({ id: "certs" });
    const base = tailnetSpec(world);
    op = await startOperator(world, {
      components: ["cert-manager"],
      tailnet: {
        policy: { ...base.policy, tagOwners: ["group:eng"] },
        certificates: { allowedClusterIssuers: [{ name: CA_ISSUER }] },
      },
    });
    op.mc.deploymentsAvailable = false;
    pods = podRunnerFor(world, op);
    web = await world.net.addHost("web");
    backend = web.spawn(bins.node, ["-e", BACKEND], { logName: "backend" });
    while (!backend.logs().includes("http up")) await sleep(50);
    pods.addWorkload({ namespace: NS, name: "web", labels: { app: "web" }, host: web });
    op.mc.apply({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: NS },
      spec: { selector: { app: "web" }, ports: [{ name: "http", port: HTTP_PORT }] },
    });
    bridge = new CertificateBridge(op.mc, cm.kube);
  });
  after(async () => {
    await pods?.close();
    await backend?.kill("SIGKILL");
    await op?.close();
    await world?.close();
    await cm?.stop();
    await cluster?.stop();
  });

  const cond = (name: string, type: string) =>
    (
      (op.mc.get(API, "TailnetIngress", name, NS)?.status as { conditions?: Cond[] } | undefined)?.conditions ?? []
    ).find((c) => c.type === type);
  const nodeIp = async () => {
    const peers = Object.values((await world.peers.laptop.status()).Peer ?? {});
    return peers.find((p) => p.HostName === `dash-${NS}`)?.TailscaleIPs?.find((ip) => !ip.includes(":"));
  };
  const httpsFromLaptop = async (ca = caPem) => {
    const ip = await nodeIp();
    return ip ? httpsVia(world.peers.laptop, ip, 443, DASH, ca, "/grafana") : { error: "dash not in the netmap" };
  };
  const realCertificate = async (name: string) =>
    (await cm.kube.send("GET", `/apis/cert-manager.io/v1/namespaces/${NS}/certificates/${name}`)).json;
  const step = async () => {
    await pods.sync();
    pods.check();
    await bridge.sync();
    await op.mc.settle(6).catch(() => undefined);
  };
  const drive = async (what: string, done: () => boolean | Promise<boolean>, ms = 180_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await step();
      if (await done()) return;
      if (Date.now() > deadline) {
        const status = JSON.stringify(op.mc.get(API, "TailnetIngress", "dash", NS)?.status);
        const cert = JSON.stringify((await realCertificate("dash.web-tls")).status);
        throw new Error(
          `timed out after ${ms} ms waiting for ${what}\ndash: ${status}\ncertificate: ${cert}\n${cm.logs()}`,
        );
      }
      await sleep(300);
    }
  };
  const ingress = (name: string, issuer: string) =>
    op.mc.apply(
      parentObject(
        "TailnetIngress",
        name,
        {
          tailnetRef: { name: "home" },
          allowFrom: ["group:eng"],
          hostname: name,
          mode: "http",
          exposes: [
            {
              name: "web",
              port: 443,
              backend: { service: "web", port: HTTP_PORT },
              tls: { issuerRef: { name: issuer, kind: "ClusterIssuer" } },
            },
          ],
        },
        { namespace: NS },
      ),
    );

  it("cert-manager issues the Certificate for the published name; the laptop verifies it over https", async () => {
    const t0 = Date.now();
    ingress("dash", CA_ISSUER);
    await drive("dash Ready=True", () => cond("dash", "Ready")?.status === "True");
    console.log(`# dash Ready (Certificate issued, TLSReady Valid) after ${Date.now() - t0} ms`);
    assert.equal(cond("dash", "TLSReady")?.reason, "Valid");
    const real = await realCertificate("dash.web-tls");
    assert.deepEqual((real.spec as { dnsNames: string[] }).dnsNames, [DASH], "exactly the published name");
    assert.deepEqual((real.spec as { issuerRef: unknown }).issuerRef, {
      name: CA_ISSUER,
      kind: "ClusterIssuer",
      group: "cert-manager.io",
    });
    let got = await httpsFromLaptop();
    // the kubelet's part: the pod's Secret volume follows the Secret (the pod runner writes it on each pass)
    for (let i = 0; i < 30 && !("status" in got); i++) {
      await step();
      await sleep(500);
      got = await httpsFromLaptop();
    }
    const agentLogs = () =>
      agentPods(pods, NS, "dash")
        .map((p) => {
          const pid = p.container("agent").pid;
          const seen = (args: string[]) => {
            try {
              return execFileSync(args[0], args.slice(1), { encoding: "utf8" });
            } catch (e) {
              return String(e);
            }
          };
          return [
            seen(["find", join(p.dir, "volumes"), "-maxdepth", "3"]),
            pid ? seen(["nsenter", "-m", "-t", String(pid), "ls", "-la", "/etc/tailnet-tls/dash.web-tls/"]) : "no pid",
            p.logs(),
          ].join("\n");
        })
        .join("\n");
    assert.ok("status" in got, `${JSON.stringify(got)}\n${agentLogs()}`);
    console.log(`# the laptop verified it over https ${Date.now() - t0} ms after the TailnetIngress was applied`);
    assert.equal(got.status, 200);
    assert.equal(got.body, "hello from web /grafana");
    assert.ok(got.cert.checkHost(DASH));
    assert.ok(got.cert.checkIssued(new X509Certificate(caPem)), "signed by cert-manager's CA issuer");
    const untrusted = await httpsFromLaptop((await world.headscale.pki.issue({ names: ["x.invalid"] })).certPem);
    assert.ok("error" in untrusted, "a client without cert-manager's CA refuses the handshake");
  });

  it("a forced renewal is served without an agent restart; a held keep-alive connection survives it", async () => {
    const ip = await nodeIp();
    assert.ok(ip);
    const held = await heldConnection(world, ip, caPem);
    const oldSerial = held.getPeerX509Certificate()?.serialNumber;
    assert.deepEqual(await ask(held, "/before"), { status: 200, body: "hello from web /before" });
    const [pod] = agentPods(pods, NS, "dash");
    const agent = pod.container("agent");
    const before = { pid: agent.pid, restarts: agent.restartCount };

    // cmctl renew: the Issuing condition on the Certificate's status (cert-manager/cmctl pkg/renew)
    const cert = await realCertificate("dash.web-tls");
    const status = cert.status as { conditions: Cond[]; revision?: number };
    const oldRevision = status.revision;
    const conditions = [
      ...status.conditions.filter((c) => c.type !== "Issuing"),
      {
        type: "Issuing",
        status: "True",
        reason: "ManuallyTriggered",
        message: "Certificate re-issuance manually triggered",
      },
    ];
    const put = await cm.kube.send(
      "PUT",
      `/apis/cert-manager.io/v1/namespaces/${NS}/certificates/dash.web-tls/status`,
      {
        ...cert,
        status: { ...status, conditions },
      },
    );
    assert.equal(put.code, 200, JSON.stringify(put.json));
    const t0 = Date.now();
    // the held connection keeps asking (a request a second, so no idle timeout ends it) while the renewal happens
    let stop = false;
    let answers = 0;
    let broken: unknown;
    const asking = (async () => {
      while (!stop) {
        try {
          const r = await ask(held, `/during-${answers}`);
          if (r.status !== 200) throw new Error(`status ${r.status}`);
          answers++;
        } catch (err) {
          broken = err;
          return;
        }
        await sleep(1000);
      }
    })();
    type Answer = Awaited<ReturnType<typeof httpsFromLaptop>>;
    let fresh = { error: "not asked" } as Answer;
    await drive("a new handshake gets the renewed certificate", async () => {
      fresh = await httpsFromLaptop();
      return "status" in fresh && fresh.cert.serialNumber !== oldSerial;
    });
    const renewedAfter = Date.now() - t0;
    console.log(`# renewal triggered → served on new connections after ${renewedAfter} ms`);
    stop = true;
    await asking;
    const renewed = fresh as Answer;
    assert.ok("status" in renewed && renewed.status === 200, JSON.stringify(renewed));
    assert.ok(renewed.cert.checkIssued(new X509Certificate(caPem)));
    assert.notEqual(((await realCertificate("dash.web-tls")).status as { revision?: number }).revision, oldRevision);
    // the held connection was served throughout, on its old certificate, and still is
    assert.equal(broken, undefined, `the held connection broke after ${answers} answers: ${String(broken)}`);
    assert.ok(answers >= Math.floor(renewedAfter / 1500), `${answers} answers in ${renewedAfter} ms`);
    console.log(`# the held connection answered ${answers} requests across the renewal`);
    assert.deepEqual(await ask(held, "/after"), { status: 200, body: "hello from web /after" });
    held.destroy();
    assert.deepEqual({ pid: agent.pid, restarts: agent.restartCount }, before, "the agent was not restarted");
    await drive(
      "TLSReady Valid for the renewed certificate",
      () => cond("dash", "TLSReady")?.reason === "Valid",
      60_000,
    );
  });

  it("a ClusterIssuer the Tailnet does not allow: IssuerNotAllowed, and no Certificate reaches the cluster", async () => {
    ingress("wiki", "selfsigned");
    await drive(
      "wiki TLSReady=IssuerNotAllowed",
      () => cond("wiki", "TLSReady")?.reason === "IssuerNotAllowed",
      60_000,
    );
    const list = await cm.kube.send("GET", `/apis/cert-manager.io/v1/namespaces/${NS}/certificates`);
    const names = ((list.json.items as { metadata: { name: string } }[]) ?? []).map((c) => c.metadata.name);
    assert.deepEqual(names, ["dash.web-tls"]);
  });
});
