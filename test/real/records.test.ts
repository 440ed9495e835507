/**
 * Records for a Headscale anywhere (issue 33): the real Headscale 0.29.3 runs outside the operator's namespace
 * and reads its dns.extra_records_path from the records sidecar (`tailnet-operator records`, the real process
 * on its own host), which reads two clusters' records ConfigMaps through their Kubernetes APIs with a token
 * whose Role allows `get` on that one ConfigMap. Cluster A is the real operator (its hook server renders
 * `tailnet-home-dns-records` from a TailnetIngress whose agent node is a real tailscaled); cluster B is a second
 * API whose ConfigMap holds one good record and the records a compromised cluster would try (another
 * cluster's name, a node's name, an address outside the tailnet, a name outside the base domain). A real
 * tailscaled (the laptop) resolves both clusters' names through MagicDNS and none of B's attacks; when B's API
 * goes away its name stays while A's changes still arrive. The sidecar starts before Headscale, which refuses
 * to start without the file (juanfont/headscale hscontrol/dns/extrarecords.go), as the chart's native sidecar does.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { dnsRecordsConfigMap } from "../../src/kinds/composite/tailnet/children.js";
import { find, renderChart } from "../chart/helm.js";
import { ingress } from "../kinds/composite/tailnet/fixtures.js";
import { bins, REPO } from "./bins.js";
import { sleep } from "./echo.js";
import { BASE_DOMAIN } from "./headscale.js";
import type { Host, RealProcess, TestNet } from "./net.js";
import { API, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import { startPeer, waitFor } from "./peers.js";
import { PodApi } from "./pod-api.js";
import { type RealWorld, startRealWorld } from "./world.js";

const OPS = "tailnet-system";
const RECORDS_CM = "tailnet-home-dns-records";
const GRAFANA = `grafana.${BASE_DOMAIN}`;
const API_B = `api.b.${BASE_DOMAIN}`;
const CLUSTER_B_PORT = 6443;

/**
 * What each cluster's administrator installs for the sidecar: the chart's Role and RoleBinding (values
 * `records`, rendered by helm: get on the one ConfigMap by name), and the sidecar's ServiceAccount.
 */
function readerRbac(): Obj[] {
  const objects = renderChart({
    records: { tailnets: ["home"], readers: [{ kind: "ServiceAccount", name: "headscale", namespace: "headscale" }] },
  });
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "headscale", namespace: "headscale" } },
    find(objects, "Role", "tailnet-operator-records-reader") as Obj,
    find(objects, "RoleBinding", "tailnet-operator-records-reader") as Obj,
  ];
}

function kubeconfig(server: string, caPem: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}", certificate-authority-data: ${Buffer.from(caPem).toString("base64")} } }]
users: [{ name: records, user: { token: ${token} } }]
contexts: [{ name: c, context: { cluster: c, user: records } }]
current-context: c
`;
}

/** One GET with a bearer token against a test API (the CA its certificate chains to); resolves the status code. */
function getStatus(url: string, caPem: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: caPem, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("records sidecar: a Headscale outside the operator's namespace gets two clusters' names", {
  timeout: 600_000,
  concurrency: false,
}, () => {
  let dir: string;
  let world: RealWorld;
  let op: RealOperator;
  let clusterB: MetacontrollerLoop;
  let apiB: PodApi;
  let sidecar: RealProcess;
  let spawnSidecar: () => RealProcess;
  let sidecarHost: Host;
  let tokenA = "";
  let tokenB = "";
  let out = "";
  const timings: Record<string, number> = {};

  const metrics = async () => {
    const r = await fetch(`http://${sidecarHost.ip}:9091/metrics`);
    return r.text();
  };
  const fileNames = async () =>
    (JSON.parse(await readFile(out, "utf8")) as { name: string; value: string }[]).map((r) => `${r.name} ${r.value}`);
  const query = (name: string) => () => world.peers.laptop.tailscale(["dns", "query", name, "A"]);
  const resolves = async (name: string, ip: string, ms = 30_000) =>
    waitFor(
      `the laptop resolves ${name} to ${ip}`,
      async () => (await query(name)()).includes(ip),
      ms,
      async () => {
        return `${await query(name)().catch((e: Error) => e.message)}\nfile: ${await readFile(out, "utf8")}\n${sidecar.logs()}`;
      },
    );

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "records-real-"));
    out = join(dir, "headscale-records", "records.json");
    await mkdir(join(dir, "headscale-records"));
    await mkdir(join(dir, "a"));
    await mkdir(join(dir, "b"));
    const startSidecar = async (net: TestNet) => {
      // Cluster B: its own API (own CA) on the test leg, the sidecar's RBAC and the ConfigMap its operator
      // writes (built with the operator's own builder), with one good record and a compromised cluster's tries.
      clusterB = new MetacontrollerLoop({ app: {} as FastifyInstance });
      apiB = await PodApi.start(clusterB, { host: net.rootIp, port: CLUSTER_B_PORT });
      for (const o of readerRbac()) clusterB.apply(o);
      tokenB = apiB.mintToken("headscale", "headscale", "headscale-0");
      await writeFile(
        join(dir, "b", "kubeconfig"),
        kubeconfig(`https://${net.rootIp}:${CLUSTER_B_PORT}`, apiB.caPem, tokenB),
      );
      sidecarHost = await net.addHost("headscale-records");
      const config = join(dir, "records.yaml");
      await writeFile(
        config,
        `output: ${out}
baseDomain: ${BASE_DOMAIN}
interval: 1s
timeout: 3s
port: 9091
sources:
  - name: cluster-a
    names: ["${GRAFANA}", "*.a.${BASE_DOMAIN}"]
    kubernetes: { kubeconfig: ${join(dir, "a", "kubeconfig")}, namespace: ${OPS}, tailnet: home }
  - name: cluster-b
    names: ["*.b.${BASE_DOMAIN}"]
    kubernetes: { kubeconfig: ${join(dir, "b", "kubeconfig")}, namespace: ${OPS}, tailnet: home }
`,
      );
      spawnSidecar = () =>
        sidecarHost.spawn(
          bins.node,
          [
            "--import",
            join(REPO, "node_modules", "tsx", "dist", "esm", "index.mjs"),
            join(REPO, "src", "cli.ts"),
            "records",
            "--config",
            config,
          ],
          { logName: "records", env: { TSX_DISABLE_CACHE: "1" } },
        );
      sidecar = spawnSidecar();
      // Cluster A's kubeconfig is not there yet (its operator starts after Headscale): the sidecar writes
      // what it has and is ready, so Headscale can start.
      await waitFor(
        "the sidecar's /readyz",
        async () => (await fetch(`http://${sidecarHost.ip}:9091/readyz`)).status === 200,
        30_000,
        () => sidecar.logs(),
      );
    };
    // B's records go in before the sidecar starts; the laptop's address is not known yet, so B points at
    // db-1 once the world is up (below). Until then it publishes nothing.
    world = await startRealWorld({ id: "records", extraRecordsPath: out, beforeHeadscale: startSidecar });
    const [dbIp] = (await world.peers.db1.ips()).filter((a) => a.includes("."));
    const [routerIp] = (await world.peers.router.ips()).filter((a) => a.includes("."));
    const cm = dnsRecordsConfigMap({ tailnet: "home", namespace: OPS, records: [] });
    const hostile = [
      { name: API_B, type: "A", value: dbIp },
      { name: GRAFANA, type: "A", value: routerIp }, // cluster A's name
      { name: `db-1.${BASE_DOMAIN}`, type: "A", value: routerIp }, // a node's MagicDNS name
      { name: `web.b.${BASE_DOMAIN}`, type: "A", value: "192.168.10.5" }, // not a tailnet address
      { name: "login.example.org", type: "A", value: routerIp }, // outside the base domain
    ];
    clusterB.apply({ ...cm, data: { "records.json": `${JSON.stringify(hostile)}\n` } } as Obj);

    const base = tailnetSpec(world);
    op = await startOperator(world, {
      tailnet: { policy: { ...base.policy, tagOwners: ["group:eng"] } },
      stubKinds: ["ingress"],
    });
    for (const o of readerRbac()) op.mc.apply(o);
    tokenA = op.kubeApi.mintToken("headscale", "headscale", "headscale-0");
    await writeFile(
      join(dir, "a", "kubeconfig"),
      kubeconfig(`https://${world.net.rootIp}:443`, world.headscale.caPem, tokenA),
    );
  });

  after(async () => {
    await sidecar?.kill("SIGTERM");
    await op?.close();
    await apiB?.close().catch(() => undefined);
    await world?.close();
    await rm(dir, { recursive: true, force: true });
    console.log(`records sidecar timings (ms): ${JSON.stringify(timings)}`);
  });

  it("both clusters' names reach the laptop through MagicDNS; none of cluster B's other records do", async () => {
    const tag = "tag:k8s-monitoring-grafana";
    op.mc.apply(ingress());
    await op.mc.settle(6).catch(() => undefined);
    await waitFor("the ingress's tag owned in the live policy", async () =>
      (await world.headscale.cli(["policy", "get"])).includes(`"${tag}"`),
    );
    const agent = await startPeer(world.net, world.headscale, "ingress-grafana", { tags: [tag] });
    const [agentIp] = (await agent.ips()).filter((a) => a.includes("."));
    type Row = { name?: string; pre_auth_key?: { id?: string | number } };
    const rows = (await world.headscale.json<Row[] | null>(["nodes", "list"])) ?? [];
    const keyId = String(rows.find((r) => r.name === "ingress-grafana")?.pre_auth_key?.id);
    // the ingress's status records the key its agent registered with, as its own sync would (node-owners.ts)
    op.mc.apply({ ...ingress(), status: { preAuthKeyIds: [keyId] } });
    const t0 = Date.now();
    await op.mc.settle(6).catch(() => undefined);
    const text = String(op.mc.get("v1", "ConfigMap", RECORDS_CM, OPS)?.data?.["records.json"]);
    assert.deepEqual(JSON.parse(text), [{ name: GRAFANA, type: "A", value: agentIp }]);
    const [dbIp] = (await world.peers.db1.ips()).filter((a) => a.includes("."));
    const [routerIp] = (await world.peers.router.ips()).filter((a) => a.includes("."));
    await resolves(GRAFANA, agentIp);
    timings.clusterAToLaptop = Date.now() - t0;
    await resolves(API_B, dbIp);
    assert.deepEqual(await fileNames(), [`${API_B} ${dbIp}`, `${GRAFANA} ${agentIp}`]);
    // cluster B's tries: A's name answers A's agent only, db-1 answers db-1 only
    const grafana = await query(GRAFANA)();
    assert.ok(!grafana.includes(routerIp), grafana);
    const db1 = await query(`db-1.${BASE_DOMAIN}`)();
    assert.ok(db1.includes(dbIp) && !db1.includes(routerIp), db1);
    const m = await metrics();
    assert.match(m, /^tailnet_records_refused\{source="cluster-b",reason="outside_claim"\} 2$/m);
    assert.match(m, /^tailnet_records_refused\{source="cluster-b",reason="outside_base_domain"\} 1$/m);
    assert.match(m, /^tailnet_records_refused\{source="cluster-b",reason="not_tailnet_address"\} 1$/m);
    assert.match(m, /^tailnet_records_source_up\{source="cluster-a"\} 1$/m);
    assert.match(m, /^tailnet_records_source_up\{source="cluster-b"\} 1$/m);
    await agent.close();
  });

  it("the sidecar's tokens read the one ConfigMap and nothing else", async () => {
    const get = (port: number, ca: string, token: string, path: string) =>
      getStatus(`https://${world.net.rootIp}:${port}${path}`, ca, token);
    const cmPath = `/api/v1/namespaces/${OPS}/configmaps/${RECORDS_CM}`;
    assert.equal(await get(CLUSTER_B_PORT, apiB.caPem, tokenB, cmPath), 200);
    assert.equal(
      await get(CLUSTER_B_PORT, apiB.caPem, tokenB, `/api/v1/namespaces/${OPS}/configmaps/tailnet-home-policy`),
      403,
    );
    assert.equal(
      await get(443, world.headscale.caPem, tokenA, `/api/v1/namespaces/${OPS}/secrets/headscale-api-key`),
      403,
    );
    assert.equal(await get(443, world.headscale.caPem, tokenA, `/api/v1/namespaces/${OPS}/configmaps`), 403);
    // everything the sidecar asked cluster A for was that one GET
    const sidecarCalls = op.kubeApi.log.filter((e) => e.user === "system:serviceaccount:headscale:headscale");
    assert.ok(sidecarCalls.length > 0);
    const own = sidecarCalls.filter((e) => e.code === 200);
    assert.ok(
      own.every((e) => e.method === "GET" && e.path === cmPath),
      JSON.stringify(own.slice(0, 3)),
    );
  });

  it("cluster B's API gone: its name stays, cluster A's changes still arrive, and no log carries a token", async () => {
    const [dbIp] = (await world.peers.db1.ips()).filter((a) => a.includes("."));
    await apiB.close();
    await waitFor("the sidecar sees cluster B fail", async () =>
      /^tailnet_records_source_up\{source="cluster-b"\} 0$/m.test(await metrics()),
    );
    op.mc.delete(API, "TailnetIngress", "grafana", "monitoring");
    const t0 = Date.now();
    await op.mc.settle(6).catch(() => undefined);
    assert.deepEqual(JSON.parse(String(op.mc.get("v1", "ConfigMap", RECORDS_CM, OPS)?.data?.["records.json"])), []);
    await waitFor(
      `${GRAFANA} withdrawn`,
      async () => !(await fileNames()).some((l) => l.startsWith(GRAFANA)),
      20_000,
      async () => (await fileNames()).join("\n"),
    );
    await waitFor(
      "the laptop stops resolving grafana",
      async () => !/\d+\.\d+\.\d+\.\d+/.test(await query(GRAFANA)().catch((e: Error) => e.message)),
      30_000,
      query(GRAFANA),
    );
    timings.withdrawnAtLaptop = Date.now() - t0;
    assert.deepEqual(await fileNames(), [`${API_B} ${dbIp}`]);
    assert.ok((await query(API_B)()).includes(dbIp), "cluster B's name still answers");
    await sleep(1500);
    await sidecar.flush();
    const logs = await readFile(sidecar.logFile, "utf8");
    assert.match(logs, /"msg":"source read failed; its last good records stay","source":"cluster-b"/);
    assert.ok(!logs.includes(tokenA) && !logs.includes(tokenB), "a token in the sidecar's log");
    assert.doesNotMatch(logs, /pod-api\./);

    // The sidecar restarts while cluster B is still down: B's name comes from the state file, so the file
    // Headscale reads is neither emptied nor rewritten.
    const text = await readFile(out, "utf8");
    const inode = (await stat(out)).ino;
    await sidecar.kill("SIGTERM");
    const t1 = Date.now();
    sidecar = spawnSidecar();
    await waitFor(
      "the restarted sidecar's /readyz",
      async () => (await fetch(`http://${sidecarHost.ip}:9091/readyz`)).status === 200,
      30_000,
      () => sidecar.logs(),
    );
    timings.sidecarRestartReady = Date.now() - t1;
    await sleep(2500); // two more rounds
    assert.equal(await readFile(out, "utf8"), text);
    assert.equal((await stat(out)).ino, inode, "an unchanged file is not rewritten");
    assert.match(await metrics(), /^tailnet_records_source_up\{source="cluster-b"\} 0$/m);
    assert.ok((await query(API_B)()).includes(dbIp), "cluster B's name still answers after the restart");
    await sidecar.flush();
    assert.ok(!(await readFile(sidecar.logFile, "utf8")).includes(tokenB));
  });
});
