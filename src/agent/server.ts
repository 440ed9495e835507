// The agent's HTTP port (9080): /healthz (liveness) and /readyz (readiness) for the kubelet, /status for the
// operator's scrape, /metrics for Prometheus. It is its own small listener, separate from the data path, so a flood of client connections
// (which the data listeners cap and close) does not take the probes down with it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { AgentStatus, NameAnswer } from "../contract/agent-status.js";
import { invalidNames } from "./dns-query.js";
import type { AgentLogger } from "./log.js";

export interface MetricsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  status(): AgentStatus;
  /** What quad-100 answers for each name (`/status?names=`, dns-query.ts). */
  resolveNames(names: readonly string[]): Promise<NameAnswer[]>;
  /** True while the data listeners are up. */
  healthy(): boolean;
  log: AgentLogger;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    "content-type": contentType,
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
  });
  res.end(body);
}

/**
 * Why the agent does not serve, or "" when it does: /status `ready` (listeners up, tailscaled Running) and
 * every expose's backend reachable in the last probe. An ingress pod's readiness probe, so a replica whose
 * backend or tailnet is down is not Ready (a rollout waits for it, the PodDisruptionBudget counts it out).
 */
export function notServing(status: AgentStatus): string {
  if (!status.ready) return "not ready: listeners down or tailscaled not Running";
  const down = status.exposes.filter((e) => !e.backendReachable).map((e) => e.name);
  return down.length ? `backend unreachable: ${down.join(", ")}` : "";
}

/** /status, and with `?names=a,b` what the node's resolver answers for each (the operator's DNSServed). */
async function sendStatus(req: IncomingMessage, res: ServerResponse, opts: MetricsServerOptions): Promise<void> {
  const query = new URLSearchParams((req.url ?? "").split("?")[1] ?? "");
  const asked = query.get("names");
  if (asked === null) return send(res, 200, "application/json", `${JSON.stringify(opts.status())}\n`);
  const names = asked.split(",").filter((n) => n !== "");
  const invalid = invalidNames(names);
  if (invalid) return send(res, 400, "text/plain; charset=utf-8", `${invalid}\n`);
  const answers = await opts.resolveNames(names);
  return send(res, 200, "application/json", `${JSON.stringify({ ...opts.status(), names: answers })}\n`);
}

async function route(req: IncomingMessage, res: ServerResponse, opts: MetricsServerOptions): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    return send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
  }
  const path = (req.url ?? "/").split("?")[0];
  switch (path) {
    case "/healthz":
      return opts.healthy()
        ? send(res, 200, "text/plain; charset=utf-8", "ok\n")
        : send(res, 503, "text/plain; charset=utf-8", "listeners down\n");
    case "/readyz": {
      // serving: the node is up on the tailnet and every expose reaches its backend (ingress replicas)
      const why = notServing(opts.status());
      return why
        ? send(res, 503, "text/plain; charset=utf-8", `${why}\n`)
        : send(res, 200, "text/plain; charset=utf-8", "ok\n");
    }
    case "/status":
      return sendStatus(req, res, opts);
    case "/metrics":
      return send(res, 200, opts.registry.contentType, await opts.registry.metrics());
    default:
      return send(res, 404, "text/plain; charset=utf-8", "not found\n");
  }
}

export async function startMetricsServer(opts: MetricsServerOptions): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    route(req, res, opts).catch((err: Error) => {
      opts.log.error("metrics server error", { path: req.url, error: err.message });
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  });
  // Scrapers and probes only: a handful of connections, short timeouts.
  server.maxConnections = 256;
  server.headersTimeout = 5000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(new Error(`listen ${opts.host}:${opts.port} for metrics: ${err.code ?? err.message}`)),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : opts.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
