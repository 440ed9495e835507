/**
 * buildServer(config, deps): the fastify app with its plugins registered explicitly — metrics,
 * health, hooks (auth lives inside the hooks context, so probes and scrapers stay open).
 * Listening happens in cli.ts.
 */
import { Readable } from "node:stream";
import Fastify, { type FastifyError, type FastifyInstance, LogController } from "fastify";
import type { HookKind } from "../api/schemas.js";
import type { OperatorConfig } from "../config.js";
import { HeadscaleViews } from "../headscale/view.js";
import { kindModules } from "../kinds/composite/index.js";
import { ComposeMemo } from "../kinds/composite/tailnet/compose-memo.js";
import { decoratorModules } from "../kinds/decorators/index.js";
import { exposition } from "../metrics/expose.js";
import { HookActivity } from "../metrics/hook-activity.js";
import { createOperatorMetrics } from "../metrics/registry.js";
import { sweepStaleResources } from "../metrics/resource.js";
import type { HookDeps, KindModule } from "../pipeline/types.js";
import { kubeEventRecorder } from "./events.js";
import { countHeadscaleCall, logHookAnswer, rememberReason } from "./hook-log.js";
import { HOOKS, hooksPlugin } from "./hooks.js";
import { type HookLimits, hookLimits } from "./limits.js";
import { httpAgentScraper } from "./scraper.js";

export interface ServerOptions {
  /** Overrides for tests and `render`: any dependency not given is built from config. */
  deps?: Partial<HookDeps>;
  kinds?: ReadonlyMap<HookKind, KindModule>;
  /** pino options or false; tests pass a stream to capture logs. */
  logger?: boolean | Record<string, unknown>;
  /** Slots, byte budget and timeouts; default: hookLimits(config) (from the container's memory). */
  limits?: HookLimits;
}

const KNOWN_HOOKS: ReadonlySet<string> = new Set(HOOKS);

export function buildServer(config: OperatorConfig, options: ServerOptions = {}): FastifyInstance {
  const limits = options.limits ?? hookLimits(config);
  const app = Fastify({
    bodyLimit: limits.bodyLimitBytes,
    // Slow senders: headers within headersTimeoutMs; Node's whole-request timeout backs up the
    // body deadline readBody enforces (408), checked every second instead of every 30 s.
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs + 1000,
    logger:
      options.logger === false
        ? false
        : {
            level: config.logLevel,
            // Secrets never reach the log by construction: no bodies, no auth header.
            redact: {
              paths: ["req.headers.authorization", "*.apiKey", "*.key", "*.data", "*.stringData"],
              censor: "[redacted]",
            },
            serializers: {
              req: (r: { method: string; url: string }) => ({ method: r.method, url: r.url }),
              res: (r: { statusCode: number }) => ({ statusCode: r.statusCode }),
            },
            ...(typeof options.logger === "object" ? options.logger : {}),
          },
    // Per-request lines are noise at 5 workers × every resync; transitions are logged instead.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });

  const metrics = options.deps?.metrics ?? createOperatorMetrics();
  // An object's series is stale after 3 resync periods without its sync, while other hooks flow; a
  // pause of 2 periods with no hook at all is silence, and silence withdraws nothing (resource.ts).
  const staleAfterMs = 3 * config.hooks.resyncSeconds * 1000;
  const hookActivity = new HookActivity(2 * config.hooks.resyncSeconds * 1000);
  // Counters exist at 0 from the start: a series that first appears at 1 makes increase() undercount.
  for (const kind of [...(options.kinds ?? kindModules).keys(), ...decoratorModules.keys()]) {
    for (const hook of KNOWN_HOOKS)
      for (const code of ["200", "500"]) metrics.hookRequests.inc({ kind, hook, code }, 0);
  }
  const views =
    options.deps?.views ??
    new HeadscaleViews({
      timeoutMs: config.headscale.timeoutSeconds * 1000,
      cacheTTLSeconds: config.headscale.cacheTTLSeconds,
      slowPartTTLSeconds: config.headscale.slowPartTTLSeconds,
      onRequest: (m) => {
        countHeadscaleCall();
        metrics.headscaleRequests.inc({ method: m.method, path: m.path, code: String(m.code) });
        metrics.headscaleDuration.observe({ method: m.method, path: m.path }, m.seconds);
      },
    });
  const deps: HookDeps = {
    config,
    views,
    now: options.deps?.now ?? (() => new Date()),
    log: options.deps?.log ?? app.log,
    metrics,
    events: options.deps?.events ?? kubeEventRecorder(app.log),
    scraper: options.deps?.scraper ?? httpAgentScraper(config.agents.scrapeTimeoutMs),
    composeMemo: options.deps?.composeMemo ?? new ComposeMemo(),
  };
  let closing = false;

  app.setErrorHandler((err: FastifyError, req, reply) => {
    // Body parser and limit errors are the client's: say what is wrong in one line.
    const overloaded = err.statusCode === 503 && err.code === "TAILNET_OVERLOADED";
    const code =
      overloaded || (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
        ? (err.statusCode as number)
        : 500;
    // A body cut short is not read further: the connection closes after the answer.
    if (code === 408 || code === 413 || code === 415 || overloaded) reply.header("Connection", "close");
    if (overloaded) reply.header("Retry-After", String(config.hooks.retryAfterSeconds));
    if (code === 500) req.log.error({ err }, "unhandled error");
    const message =
      err.code === "FST_ERR_CTP_BODY_TOO_LARGE"
        ? `body: larger than the limit of ${limits.bodyLimitBytes} bytes`
        : err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE"
          ? "body: Content-Type must be application/json"
          : err.code === "FST_ERR_CTP_EMPTY_JSON_BODY"
            ? "body: empty; expected a JSON object"
            : err.code === "FST_ERR_CTP_INVALID_JSON_BODY" || (code === 400 && err instanceof SyntaxError)
              ? "body: invalid JSON"
              : code < 500 || overloaded
                ? err.message.split("\n")[0]
                : "internal error";
    void reply.code(code).send({ error: message });
  });
  // Outside /hooks no route takes a body: refuse one before reading it (fastify's default
  // parsers would buffer up to bodyLimit per request, outside the slots and the byte budget).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (req, _payload, done) => {
    const err = Object.assign(new Error(`body: ${req.method} ${req.url.split("?")[0].slice(0, 100)} takes no body`), {
      statusCode: 415,
    });
    done(err, undefined);
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ error: `no route ${req.method} ${req.url.split("?")[0].slice(0, 100)}` });
  });

  app.addHook("onSend", rememberReason);
  app.addHook("onResponse", async (req, reply) => {
    logHookAnswer(req, reply);
    const params = req.params as { kind?: string; hook?: string } | undefined;
    if (!req.url.startsWith("/hooks/") || !params?.kind) return;
    const kind =
      options.kinds?.has(params.kind as HookKind) ||
      kindModules.has(params.kind as HookKind) ||
      decoratorModules.has(params.kind)
        ? params.kind
        : "unknown";
    const hook = KNOWN_HOOKS.has(params.hook ?? "") ? (params.hook as string) : "unknown";
    metrics.hookRequests.inc({ kind, hook, code: String(reply.statusCode) });
    if (reply.statusCode >= 200 && reply.statusCode < 300) {
      const nowMs = deps.now().getTime();
      hookActivity.answered(nowMs);
      metrics.hookLastSuccess.set(nowMs / 1000);
    }
    metrics.hookDuration.observe({ kind, hook }, reply.elapsedTime / 1000);
  });

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) =>
    closing ? reply.code(503).send({ status: "closing" }) : { status: "ready" },
  );
  app.get("/metrics", async (_req, reply) => {
    const nowMs = deps.now().getTime();
    sweepStaleResources(metrics, nowMs, staleAfterMs, hookActivity.flowingForMs(nowMs));
    reply.header("Content-Type", metrics.registry.contentType);
    // written a chunk at a time: one string of every series was the server's memory peak (expose.ts)
    return reply.send(Readable.from(exposition(metrics.registry)));
  });

  app.register(hooksPlugin, {
    deps,
    kinds: options.kinds ?? kindModules,
    hookToken: config.hookToken,
    limits,
    retryAfterSeconds: config.hooks.retryAfterSeconds,
  });

  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onClose", async () => {
    if (!options.deps?.views) await views.close();
  });
  return app;
}
