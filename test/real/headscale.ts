/**
 * The real Headscale (v0.29.3, built by scripts/real-deps.sh) in a namespace of its own on the test
 * bridge, serving HTTPS with a certificate from a test CA (the same CA the Tailnet's caSecretRef
 * carries), its embedded DERP and STUN on its bridge address, and no way out: no public DERP map, no
 * update checks, no logtail, no global nameservers. SQLite by default; PostgreSQL from Debian for the
 * fault rows (stopDatabase / startDatabase).
 *
 * Config keys checked against config-example.yaml and hscontrol/types/config.go of v0.29.3:
 * - dns.override_local_dns must be false when dns.nameservers.global is empty (config.go: "Fatal config
 *   error: dns.nameservers.global must be set when dns.override_local_dns is true");
 * - dns.extra_records and dns.extra_records_path are mutually exclusive; we use the path (a JSON list);
 * - database.postgres.host may be a unix socket folder with port left empty;
 * - the CLI talks gRPC over unix_socket (cmd/headscale/cli/utils.go) unless HEADSCALE_CLI_ADDRESS is set.
 */
import { chmod, readFile, writeFile } from "node:fs/promises";
import { Agent, request } from "undici";
import { createTestPki, type TestPki, writeSecretVolume } from "../fakes/agent/pki.js";
import { bins, pgBin, requireBins } from "./bins.js";
import { sleep } from "./echo.js";
import type { Host, RealProcess, TestNet } from "./net.js";

export const HS_PORT = 8443;
export const STUN_PORT = 3478;
export const BASE_DOMAIN = "ts.test";

export interface HeadscaleOptions {
  database?: "sqlite" | "postgres";
  /** Host name on the bridge (default "headscale"). */
  name?: string;
  /**
   * dns.extra_records_path as a plain file someone else writes (the records sidecar's output, issue 33)
   * instead of the ConfigMap-volume layout. It must exist before Headscale starts: juanfont/headscale
   * hscontrol/dns/extrarecords.go NewExtraRecordsManager stats it and Headscale refuses to start without it.
   */
  extraRecordsPath?: string;
}

export interface RealHeadscale {
  host: Host;
  /** https://<ip>:8443 */
  url: string;
  caPem: string;
  /** The test PKI (the CA that signed Headscale's certificate), to issue more certificates. */
  pki: TestPki;
  /** An API key made with `headscale apikeys create --expiration 24h`. */
  apiKey: string;
  /** Path of the extra DNS records file (dns.extra_records_path), a ConfigMap-volume layout. */
  extraRecordsPath: string;
  /** Replaces the records file the way the kubelet updates a ConfigMap volume (atomic ..data swap). */
  writeExtraRecords(json: string): Promise<void>;
  /** Runs the headscale CLI in Headscale's namespace; resolves stdout, throws with stderr on failure. */
  cli(args: string[]): Promise<string>;
  /** `cli([...args, "-o", "json"])` parsed. */
  json<T = unknown>(args: string[]): Promise<T>;
  /** A user's numeric id, creating the user when missing. */
  userId(name: string): Promise<number>;
  /** The server process's last log lines. */
  logs(): string;
  /**
   * Headscale's own request log (every start of the server so far): one entry per HTTP request it
   * served, e.g. to count the operator's PUT /api/v1/policy.
   */
  requests(): Promise<{ method: string; path: string; status: number }[]>;
  restart(): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  stopDatabase(): Promise<void>;
  startDatabase(): Promise<void>;
  /**
   * GET on Headscale's debug server (127.0.0.1:9090 inside its namespace), e.g. "/debug/filter": the
   * filter rules of the policy it serves from memory (hscontrol/debug.go), which may differ from the
   * stored one that `policy get` and GET /api/v1/policy read.
   */
  debug(path: string): Promise<string>;
  /** Runs SQL on Headscale's PostgreSQL database (psql over its unix socket); resolves stdout. */
  sql(query: string): Promise<string>;
  close(): Promise<void>;
}

/** Waits until Headscale's /health answers 200 over TLS with the test CA. */
async function waitHealthy(url: string, caPem: string, proc: () => RealProcess | undefined, ms = 30_000) {
  const dispatcher = new Agent({ connect: { ca: caPem, timeout: 1000 } });
  const deadline = Date.now() + ms;
  let last = "";
  try {
    while (Date.now() < deadline) {
      const p = proc();
      try {
        const r = await request(`${url}/health`, { dispatcher, headersTimeout: 2000, bodyTimeout: 2000 });
        const body = await r.body.text();
        if (r.statusCode === 200) return;
        last = `${r.statusCode} ${body}`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (p && (await Promise.race([p.exited.then(() => true), sleep(200).then(() => false)]))) {
        throw new Error(`headscale exited before it was healthy\n${p.logs()}`);
      }
    }
    throw new Error(`headscale not healthy after ${ms} ms (${last})\n${proc()?.logs() ?? ""}`);
  } finally {
    await dispatcher.close();
  }
}

export async function startHeadscale(net: TestNet, opts: HeadscaleOptions = {}): Promise<RealHeadscale> {
  requireBins(["headscale"]);
  const host = await net.addHost(opts.name ?? "headscale");
  const dir = host.dir;
  const url = `https://${host.ip}:${HS_PORT}`;
  const pki = await createTestPki();
  const cert = await pki.issue({ names: ["headscale.test"], ips: [host.ip] });
  // dns.extra_records_path is laid out as a ConfigMap volume (the operator's docs: mount the records
  // ConfigMap as a volume, not with subPath): records.json -> ..data/records.json, updated by the
  // kubelet's atomic ..data swap. Headscale's watcher (hscontrol/dns/extrarecords.go) re-adds its
  // watch after the Remove/Rename that swap causes.
  const extraRecordsPath =
    opts.extraRecordsPath ?? Object.values(await writeSecretVolume(`${dir}/records`, { "records.json": "[]\n" }))[0];
  await writeFile(`${dir}/ca.crt`, pki.caPem);

  const database = opts.database ?? "sqlite";
  let pg: RealProcess | undefined;
  const pgData = `${dir}/pgdata`;
  const pgSock = `${dir}/pgsock`;
  if (database === "postgres") {
    // The postgres user must reach its folders (the run's folders are 0700 root from mkdtemp).
    await chmod(net.dir, 0o755);
    await chmod(dir, 0o755);
    await host.exec("/usr/bin/install", ["-d", "-o", "postgres", "-m", "700", pgData, pgSock]);
    const init = await host.exec(`${pgBin}/initdb`, ["-D", pgData, "-U", "postgres", "--auth=trust", "-E", "UTF8"], {
      user: "postgres",
      timeoutMs: 120_000,
    });
    if (init.code !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  }
  const startDatabase = async () => {
    if (database !== "postgres") throw new Error("startDatabase: Headscale runs on SQLite here");
    if (pg) return;
    // Unix socket only (listen_addresses empty): nothing listens on the bridge.
    const p = host.spawn(`${pgBin}/postgres`, ["-D", pgData, "-k", pgSock, "-c", "listen_addresses=", "-F"], {
      user: "postgres",
      logName: "postgres",
    });
    pg = p;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const r = await host.exec(`${pgBin}/pg_isready`, ["-h", pgSock, "-U", "postgres"], { user: "postgres" });
      if (r.code === 0) return;
      if (await Promise.race([p.exited.then(() => true), sleep(200).then(() => false)])) break;
    }
    throw new Error(`postgres did not start\n${p.logs()}`);
  };
  const stopDatabase = async () => {
    const p = pg;
    pg = undefined;
    await p?.kill("SIGINT"); // fast shutdown
  };
  if (database === "postgres") await startDatabase();

  const dbConfig =
    database === "postgres"
      ? `database:
  type: postgres
  postgres:
    host: ${pgSock}
    port:
    name: postgres
    user: postgres
    pass: ""
    max_open_conns: 10
    max_idle_conns: 10
    conn_max_idle_time_secs: 3600
    ssl: false`
      : `database:
  type: sqlite
  sqlite:
    path: ${dir}/db.sqlite
    write_ahead_log: true`;
  const config = `# written by test/real/headscale.ts
server_url: ${url}
listen_addr: ${host.ip}:${HS_PORT}
metrics_listen_addr: 127.0.0.1:9090
grpc_listen_addr: 127.0.0.1:50443
grpc_allow_insecure: false
noise:
  private_key_path: ${dir}/noise_private.key
prefixes:
  v4: 100.64.0.0/10
  v6: fd7a:115c:a1e0::/48
  allocation: sequential
derp:
  server:
    enabled: true
    region_id: 999
    region_code: "test"
    region_name: "Test embedded DERP"
    verify_clients: true
    stun_listen_addr: "${host.ip}:${STUN_PORT}"
    private_key_path: ${dir}/derp_server_private.key
    automatically_add_embedded_derp_region: true
    ipv4: ${host.ip}
  urls: []
  paths: []
  auto_update_enabled: false
  update_frequency: 24h
disable_check_updates: true
${dbConfig}
tls_cert_path: ${cert.certFile}
tls_key_path: ${cert.keyFile}
log:
  level: info
  format: text
policy:
  mode: database
dns:
  magic_dns: true
  base_domain: ${BASE_DOMAIN}
  override_local_dns: false
  nameservers:
    global: []
    split: {}
  search_domains: []
  extra_records_path: ${extraRecordsPath}
unix_socket: ${dir}/headscale.sock
unix_socket_permission: "0770"
logtail:
  enabled: false
taildrop:
  enabled: false
`;
  const configPath = `${dir}/config.yaml`;
  await writeFile(configPath, config);

  let proc: RealProcess | undefined;
  const logFiles = new Set<string>();
  const start = async () => {
    if (proc) return;
    proc = host.spawn(bins.headscale, ["serve", "-c", configPath], { logName: "headscale" });
    logFiles.add(proc.logFile);
    await waitHealthy(url, pki.caPem, () => proc);
  };
  const stop = async () => {
    const p = proc;
    proc = undefined;
    await p?.kill("SIGTERM");
  };

  const cli = async (args: string[]): Promise<string> => {
    const r = await host.exec(bins.headscale, ["-c", configPath, ...args], { timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(`headscale ${args.join(" ")} exited ${r.code}: ${r.stderr.trim() || r.stdout}`);
    return r.stdout;
  };
  const json = async <T>(args: string[]): Promise<T> => JSON.parse(await cli([...args, "-o", "json"])) as T;

  try {
    await start();
  } catch (err) {
    await stop();
    await stopDatabase();
    throw err;
  }
  const apiKey = (await cli(["apikeys", "create", "--expiration", "24h"])).trim().split("\n").pop() ?? "";
  if (!apiKey.startsWith("hskey-api-"))
    throw new Error(`headscale apikeys create gave no key: ${apiKey.slice(0, 12)}…`);

  const userId = async (name: string): Promise<number> => {
    type U = { id: number | string; name: string };
    const find = async () => ((await json<U[] | null>(["users", "list"])) ?? []).find((u) => u.name === name);
    let u = await find();
    if (!u) {
      await cli(["users", "create", name]);
      u = await find();
    }
    if (!u) throw new Error(`headscale user ${name} missing after create`);
    return Number(u.id);
  };

  return {
    host,
    url,
    caPem: pki.caPem,
    pki,
    apiKey,
    extraRecordsPath,
    writeExtraRecords: async (text) => {
      if (opts.extraRecordsPath) throw new Error(`writeExtraRecords: ${opts.extraRecordsPath} is written by its owner`);
      await writeSecretVolume(`${dir}/records`, { "records.json": text });
    },
    cli,
    json,
    userId,
    logs: () => proc?.logs() ?? "(headscale not running)",
    requests: async () => {
      // Headscale logs a request as its handler returns, just after the answer: let the line arrive.
      await sleep(150);
      await proc?.flush();
      // "INF http request bytes=18 elapsed=0.13 method=GET path=/health proto=HTTP/1.1 remote=… status=200"
      const out: { method: string; path: string; status: number }[] = [];
      for (const f of logFiles) {
        const text = await readFile(f, "utf8").catch(() => "");
        for (const m of text.matchAll(/http request .*?method=(\S+) path=(\S+) .*?status=(\d+)/g)) {
          out.push({ method: m[1], path: m[2], status: Number(m[3]) });
        }
      }
      return out;
    },
    restart: async () => {
      await stop();
      await start();
    },
    stop,
    start,
    stopDatabase,
    startDatabase,
    debug: async (path) => {
      const script = `fetch("http://127.0.0.1:9090"+process.argv[1],{headers:{accept:"application/json"}}).then(async r=>{process.stdout.write(await r.text());process.exit(r.ok?0:1)},e=>{console.error(e.message);process.exit(2)})`;
      const r = await host.exec(bins.node, ["-e", script, path]);
      if (r.code !== 0) throw new Error(`headscale debug ${path}: ${(r.stderr || r.stdout).trim()}`);
      return r.stdout;
    },
    sql: async (query) => {
      if (database !== "postgres") throw new Error("sql: Headscale runs on SQLite here");
      const r = await host.exec(
        `${pgBin}/psql`,
        ["-h", pgSock, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-At", "-c", query],
        { user: "postgres" },
      );
      if (r.code !== 0) throw new Error(`psql ${query}: ${r.stderr.trim()}`);
      return r.stdout;
    },
    close: async () => {
      await stop();
      await stopDatabase().catch(() => undefined);
      await pki.cleanup();
    },
  };
}
