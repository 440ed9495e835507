/**
 * The records sidecar as it runs: a cluster's records ConfigMap read through an HTTPS Kubernetes API with a
 * kubeconfig's bearer token and CA (the one GET the docs' Role allows), the API's refusals reported without
 * the token, kubeconfigs that would hand the token to anyone refused; then the real process
 * (`tailnet-operator records --config`) writing the file and serving /readyz and /metrics.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parseRecordsConfig } from "../../src/records/config.js";
import { jsonLogger } from "../../src/records/log.js";
import { createRecordsMetrics } from "../../src/records/metrics.js";
import { createRunner } from "../../src/records/runner.js";
import { sourceReader } from "../../src/records/sources.js";
import { createTestPki, type TestPki } from "../fakes/agent/pki.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const TOKEN = "secret-token-9f8e7d6c5b4a";
const RECORDS = '[\n  {"name":"grafana.a.ts.test","type":"A","value":"100.64.0.5"}\n]\n';

let dir: string;
let pki: TestPki;
let server: Server;
let port: number;
/** What the API answers for the ConfigMap: 200 with the records, or a Status. */
let answer: { code: number; body: unknown };
const requests: { path: string; auth: string | undefined }[] = [];

function kubeconfig(server: string, extra: { cluster?: string; user?: string } = {}): string {
  const ca = Buffer.from(pki.caPem).toString("base64");
  return `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster:
    server: ${server}
    certificate-authority-data: ${ca}
${extra.cluster ?? ""}
users:
- name: records
  user:
    token: ${TOKEN}
${extra.user ?? ""}
contexts:
- name: a
  context: { cluster: a, user: records }
current-context: a
`;
}

async function reader(config: string) {
  const path = join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
  await writeFile(path, config);
  const cfg = parseRecordsConfig({
    output: join(dir, "records.json"),
    baseDomain: "ts.test",
    sources: [{ name: "a", kubernetes: { kubeconfig: path, tailnet: "home" } }],
  });
  return { cfg, source: cfg.sources[0] };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "records-sidecar-"));
  pki = await createTestPki();
  const cert = await pki.issue({ names: ["localhost"], ips: ["127.0.0.1"] });
  server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    requests.push({ path: req.url ?? "", auth: req.headers.authorization });
    res.writeHead(answer.code, { "content-type": "application/json" });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  server.close();
  await pki.cleanup();
  await rm(dir, { recursive: true, force: true });
});

describe("kubernetes source", () => {
  it("GETs the one ConfigMap with the kubeconfig's token and CA and returns its records", async () => {
    answer = { code: 200, body: { kind: "ConfigMap", data: { "records.json": RECORDS } } };
    const { cfg, source } = await reader(kubeconfig(`https://127.0.0.1:${port}`));
    const list = await (await sourceReader(source, cfg.timeoutMs)).read();
    assert.deepEqual(list, JSON.parse(RECORDS));
    assert.deepEqual(requests.at(-1), {
      path: "/api/v1/namespaces/tailnet-system/configmaps/tailnet-home-dns-records",
      auth: `Bearer ${TOKEN}`,
    });
  });

  it("reads the kubeconfig again for every read: a rotated token is the next request's", async () => {
    answer = { code: 200, body: { kind: "ConfigMap", data: { "records.json": RECORDS } } };
    const { cfg, source } = await reader(kubeconfig(`https://127.0.0.1:${port}`));
    const r = await sourceReader(source, cfg.timeoutMs);
    await r.read();
    const path = (source.spec as { kubeconfig: string }).kubeconfig;
    await writeFile(path, kubeconfig(`https://127.0.0.1:${port}`).replace(TOKEN, `${TOKEN}-rotated`));
    await r.read();
    assert.deepEqual(
      requests.slice(-2).map((q) => q.auth),
      [`Bearer ${TOKEN}`, `Bearer ${TOKEN}-rotated`],
    );
  });

  it("a 403 is reported with the API's message, and no log line carries the token", async () => {
    answer = {
      code: 403,
      body: {
        kind: "Status",
        status: "Failure",
        reason: "Forbidden",
        code: 403,
        message:
          'configmaps "tailnet-home-dns-records" is forbidden: User "system:serviceaccount:headscale:records" cannot get resource "configmaps"',
      },
    };
    const { cfg } = await reader(kubeconfig(`https://127.0.0.1:${port}`));
    const lines: string[] = [];
    const runner = await createRunner(cfg, {
      log: jsonLogger("debug", (l) => lines.push(l)),
      metrics: createRecordsMetrics(["a"], false),
    });
    const r = await runner.round();
    assert.deepEqual(r.failed, ["a"]);
    const failed = lines
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === "source read failed; its last good records stay");
    assert.equal(
      failed?.error,
      'GET configmap tailnet-system/tailnet-home-dns-records: HTTP 403: configmaps "tailnet-home-dns-records" is forbidden: User "system:serviceaccount:headscale:records" cannot get resource "configmaps"',
    );
    assert.ok(!lines.join("").includes(TOKEN));
  });

  it("a server whose certificate the kubeconfig's CA did not sign is an error, not a read", async () => {
    answer = { code: 200, body: { data: { "records.json": RECORDS } } };
    const other = await createTestPki();
    try {
      const config = kubeconfig(`https://127.0.0.1:${port}`).replace(
        Buffer.from(pki.caPem).toString("base64"),
        Buffer.from(other.caPem).toString("base64"),
      );
      const { cfg, source } = await reader(config);
      const before = requests.length;
      await assert.rejects(
        (await sourceReader(source, cfg.timeoutMs)).read(),
        /GET configmap .*: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|DEPTH_ZERO|unable to verify)/,
      );
      assert.equal(requests.length, before, "no request reached the server");
    } finally {
      await other.cleanup();
    }
  });

  it("refuses a kubeconfig that skips TLS verification or talks plain HTTP", async () => {
    const skip = await reader(
      kubeconfig(`https://127.0.0.1:${port}`, { cluster: "    insecure-skip-tls-verify: true" }),
    );
    await assert.rejects(sourceReader(skip.source, 1000), /insecure-skip-tls-verify: refused/);
    const plain = await reader(kubeconfig(`http://127.0.0.1:${port}`));
    await assert.rejects(sourceReader(plain.source, 1000), /the kubeconfig's server is http:\/\/ \(https only\)/);
  });

  it("a ConfigMap without the key, or a key that is not a JSON list, is a failed read", async () => {
    const { cfg, source } = await reader(kubeconfig(`https://127.0.0.1:${port}`));
    const r = await sourceReader(source, cfg.timeoutMs);
    answer = { code: 200, body: { data: {} } };
    await assert.rejects(
      r.read(),
      /^Error: configmap tailnet-system\/tailnet-home-dns-records has no key records\.json$/,
    );
    answer = { code: 200, body: { data: { "records.json": '{"name":"x"}' } } };
    await assert.rejects(r.read(), /is not a JSON list$/);
  });
});

describe("the records process", () => {
  it("writes the file from its sources, answers /readyz once it has, and exports its metrics", async () => {
    const a = join(dir, "a.json");
    const b = join(dir, "b.json");
    await writeFile(a, RECORDS);
    await writeFile(
      b,
      '[{"name":"api.b.ts.test","type":"A","value":"100.64.0.6"},{"name":"grafana.a.ts.test","type":"A","value":"100.64.0.66"}]',
    );
    const out = join(dir, "proc", "records.json");
    await rm(join(dir, "proc"), { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(join(dir, "proc")));
    const config = join(dir, "records.yaml");
    await writeFile(
      config,
      `output: ${out}\nbaseDomain: ts.test\ninterval: 1s\nport: 0\nsources:\n  - { name: a, names: ["*.a.ts.test"], file: ${a} }\n  - { name: b, names: ["*.b.ts.test"], file: ${b} }\n`,
    );
    // port 0 is not known outside: read it from the start line
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(root, "src/cli.ts"), "records", "--config", config],
      {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let logs = "";
    child.stdout.on("data", (d) => {
      logs += d;
    });
    child.stderr.on("data", (d) => {
      logs += d;
    });
    try {
      const deadline = Date.now() + 20_000;
      let listen = 0;
      while (!listen && Date.now() < deadline) {
        listen = Number(/"port":(\d+)/.exec(logs)?.[1] ?? 0);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(listen, logs);
      let ready = 0;
      while (ready !== 200 && Date.now() < deadline) {
        ready = (await fetch(`http://127.0.0.1:${listen}/readyz`).catch(() => ({ status: 0 }))).status;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(ready, 200, logs);
      assert.deepEqual(JSON.parse(await readFile(out, "utf8")), [
        { name: "api.b.ts.test", type: "A", value: "100.64.0.6" },
        { name: "grafana.a.ts.test", type: "A", value: "100.64.0.5" },
      ]);
      const metrics = await (await fetch(`http://127.0.0.1:${listen}/metrics`)).text();
      assert.match(metrics, /^tailnet_records_refused\{source="b",reason="outside_claim"\} 1$/m);
      assert.match(metrics, /^tailnet_records_file_records 2$/m);
      assert.match(metrics, /^tailnet_records_source_up\{source="a"\} 1$/m);
      assert.match(logs, /"msg":"source records refused","source":"b","refused":1/);
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
