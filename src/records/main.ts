/**
 * `tailnet-operator records --config <file>`: the sidecar next to Headscale that delivers every cluster's
 * DNS records to its dns.extra_records_path (docs/OPERATIONS.md, "Headscale outside the operator's namespace
 * or cluster"). startRecords is the same without the process around it, for tests (port 0 → ephemeral).
 * /healthz answers while the process runs; /readyz once the records file is in place (a native sidecar's
 * startupProbe, so Headscale, which refuses to start without the file, starts after it); /metrics.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Command } from "../args.js";
import { loadRecordsConfig, type RecordsConfig } from "./config.js";
import { isLogLevel, jsonLogger, type RecordsLogger } from "./log.js";
import { createRecordsMetrics, type RecordsMetrics } from "./metrics.js";
import { createRunner, type RecordsRunner, type RunnerDeps } from "./runner.js";

export const RECORDS: Command = {
  name: "records",
  usage: `usage: tailnet-operator records --config <file>

Runs next to Headscale: reads each cluster's DNS records (the ConfigMap tailnet-<name>-dns-records
through that cluster's Kubernetes API, or a file), keeps only the records each source may publish
(names in its claim under the base domain, A/AAAA values inside Headscale's prefixes), merges them
(a name two sources publish stays with the one that held it first) and replaces Headscale's
dns.extra_records_path atomically when it changed. A source that fails keeps its last good records.
Serves /healthz, /readyz (the file is in place) and /metrics on the config's port (default 9091).

options:
  --config <file>   the records config (YAML; docs/OPERATIONS.md)
  -h, --help        print this help and exit
  --version         print the version and exit

environment:
  LOG_LEVEL         info (default), debug, warn, error
`,
  options: { config: { type: "string" } },
};

export interface RunningRecords {
  readonly port: number;
  readonly runner: RecordsRunner;
  readonly metrics: RecordsMetrics;
  close(): Promise<void>;
}

export interface StartRecordsOptions extends Partial<Omit<RunnerDeps, "metrics">> {
  /** Run rounds on the config's interval (default true); tests may call runner.round() instead. */
  timers?: boolean;
  defaultMetrics?: boolean;
  host?: string;
}

function route(req: IncomingMessage, res: ServerResponse, running: () => RunningRecords): Promise<void> | void {
  const send = (code: number, type: string, body: string) => {
    res.writeHead(code, { "content-type": type });
    res.end(body);
  };
  const text = "text/plain; charset=utf-8";
  if (req.method !== "GET") return send(405, text, "GET only\n");
  switch ((req.url ?? "/").split("?")[0]) {
    case "/healthz":
      return send(200, text, "ok\n");
    case "/readyz":
      return running().runner.ready() ? send(200, text, "ok\n") : send(503, text, "records file not written yet\n");
    case "/metrics": {
      const { registry } = running().metrics;
      return registry.metrics().then((body) => send(200, registry.contentType, body));
    }
    default:
      return send(404, text, "not found\n");
  }
}

export async function startRecords(config: RecordsConfig, opts: StartRecordsOptions = {}): Promise<RunningRecords> {
  const log = opts.log ?? jsonLogger("info");
  const metrics = createRecordsMetrics(
    config.sources.map((s) => s.name),
    opts.defaultMetrics ?? true,
  );
  const runner = await createRunner(config, { ...opts, log, metrics });
  let running: RunningRecords | undefined;
  const server: Server = createServer((req, res) => {
    Promise.resolve(route(req, res, () => running as RunningRecords)).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  server.headersTimeout = 5000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      reject(new Error(`listen :${config.port}: ${e.code ?? e.message}`)),
    );
    server.listen(config.port, opts.host ?? "::", () => resolve());
  });
  const address = server.address();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let current: Promise<unknown> = Promise.resolve();
  const loop = () => {
    current = runner
      .round()
      .catch((e: Error) => log.error("round failed", { error: e.message }))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, config.intervalMs);
      });
  };
  if (opts.timers ?? true) loop();
  running = {
    port: typeof address === "object" && address ? address.port : config.port,
    runner,
    metrics,
    close: async () => {
      stopped = true;
      clearTimeout(timer);
      await current;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  log.info("records sidecar started", {
    output: config.output,
    sources: config.sources.map((s) => s.name).join(","),
    port: running.port,
  });
  return running;
}

/** The process: config from --config, JSON logs, SIGTERM/SIGINT close the server after the current round. */
export async function runRecords(configPath: string): Promise<void> {
  const config = loadRecordsConfig(configPath);
  const level = process.env.LOG_LEVEL ?? "info";
  const log: RecordsLogger = jsonLogger(isLogLevel(level) ? level : "info");
  const running = await startRecords(config, { log });
  const stop = async () => {
    await running.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
}
