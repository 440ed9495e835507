/**
 * buildServer(config, deps): the fastify app with its plugins registered explicitly — metrics,
 * health, hooks (auth lives inside the hooks context, so probes and scrapers stay open).
 * Listening happens in cli.ts.
 */

import type { Server } from "node:http";
import { Readable } from "node:stream";
import Fastify, { type FastifyHttpOptions, type FastifyInstance, LogController } from "fastify";
import type { HookKind } from "../api/schemas.js";
import type { OperatorConfig } from "../config.js";
import { HeadscaleViews } from "../headscale/view.js";
import { kindModules } from "../kinds/composite/index.js";
import { ComposeMemo } from "../kinds/composite/tailnet/compose-memo.js";
import { decoratorModules } from "../kinds/decorators/index.js";
import type { DecoratorModule } from "../kinds/decorators/module.js";
import { exposition } from "../metrics/expose.js";
import { HookActivity } from "../metrics/hook-activity.js";
import { createOperatorMetrics, type OperatorMetrics } from "../metrics/registry.js";
import { sweepStaleResources } from "../metrics/resource.js";
import type { HookDeps, KindModule } from "../pipeline/types.js";
import { registerErrorReplies } from "./error-reply.js";
import { kubeEventRecorder } from "./events.js";
import { countHeadscaleCall, logHookAnswer, rememberReason } from "./hook-log.js";
import { HOOKS, hooksPlugin } from "./hooks.js";
import { type HookLimits, hookLimits } from "./limits.js";
import { httpAgentScraper } from "./scraper.js";

export interface ServerOptions {
  /** Overrides for tests and `render`: any dependency not given is built from config. */
  deps?: Partial<HookDeps>;
  kinds?: ReadonlyMap<HookKind, KindModule>;
  decorators?: ReadonlyMap<string, DecoratorModule>;
  /** pino options or false; tests pass a stream to capture logs. */
  logger?: boolean | Record<string, unknown>;
  /** Slots, byte budget and timeouts; default: hookLimits(config) (from the container's memory). */
  limits?: HookLimits;
}

const KNOWN_HOOKS: ReadonlySet<string> = new Set(HOOKS);

export function buildServer(config: OperatorConfig, options: ServerOptions = {}): FastifyInstance {
  const limits = options.limits ?? hookLimits(config);
  const app = Fastify(fastifyOptions(config, options, limits));
  const metrics = options.deps?.metrics ?? createOperatorMetrics();
  // An object's series is stale after 3 resync periods without its sync, while other hooks flow; a
  // pause of 2 periods with no hook at all is silence, and silence withdraws nothing (resource.ts).
  const staleAfterMs = 3 * config.hooks.resyncSeconds * 1000;
  const hookActivity = new HookActivity(2 * config.hooks.resyncSeconds * 1000);
  const kinds = options.kinds ?? kindModules;
  const decorators = options.decorators ?? decoratorModules;
  // One hook path segment per module: a decorator named like a kind would never be reached (or shadow it).
  const clash = [...decorators.keys()].find((name) => kinds.has(name as never));
  if (clash) throw new Error(`hook path /hooks/${clash} is both a kind and a decorator`);
  zeroHookCounters(metrics, [...kinds.keys(), ...decorators.keys()]);
  const views = options.deps?.views ?? headscaleViews(config, metrics);
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

  registerErrorReplies(app, {
    bodyLimitBytes: limits.bodyLimitBytes,
    retryAfterSeconds: config.hooks.retryAfterSeconds,
  });
  // A stub kind map (tests) still counts a real kind's requests under its own name.
  const countedKinds = new Set<string>([...kinds.keys(), ...kindModules.keys(), ...decorators.keys()]);
  registerHookMetrics(app, { metrics, hookActivity, now: deps.now, countedKinds });
  registerHealthRoutes(app, () => closing);
  registerMetricsRoute(app, { metrics, hookActivity, now: deps.now, staleAfterMs });
  app.register(hooksPlugin, {
    deps,
    kinds,
    decorators,
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

function fastifyOptions(
  config: OperatorConfig,
  options: ServerOptions,
  limits: HookLimits,
): FastifyHttpOptions<Server> {
  return {
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
  };
}

/** Counters exist at 0 from the start: a series that first appears at 1 makes increase() undercount. */
function zeroHookCounters(metrics: OperatorMetrics, kinds: readonly string[]): void {
  for (const kind of kinds) {
    for (const hook of KNOWN_HOOKS)
      for (const code of ["200", "500"]) metrics.hookRequests.inc({ kind, hook, code }, 0);
  }
}

function headscaleViews(config: OperatorConfig, metrics: OperatorMetrics): HeadscaleViews {
  return new HeadscaleViews({
    timeoutMs: config.headscale.timeoutSeconds * 1000,
    cacheTTLSeconds: config.headscale.cacheTTLSeconds,
    slowPartTTLSeconds: config.headscale.slowPartTTLSeconds,
    onRequest: (m) => {
      countHeadscaleCall();
      metrics.headscaleRequests.inc({ method: m.method, path: m.path, code: String(m.code) });
      metrics.headscaleDuration.observe({ method: m.method, path: m.path }, m.seconds);
    },
  });
}

interface HookMetricsOptions {
  metrics: OperatorMetrics;
  hookActivity: HookActivity;
  now: () => Date;
  /** The kinds whose requests are counted under their own name; any other is "unknown". */
  countedKinds: ReadonlySet<string>;
}

/** Every answer is logged when it changes (hook-log.ts) and counted per kind, hook and code. */
function registerHookMetrics(
  app: FastifyInstance,
  { metrics, hookActivity, now, countedKinds }: HookMetricsOptions,
): void {
  app.addHook("onSend", rememberReason);
  app.addHook("onResponse", async (req, reply) => {
    logHookAnswer(req, reply);
    const params = req.params as { kind?: string; hook?: string } | undefined;
    if (!req.url.startsWith("/hooks/") || !params?.kind) return;
    const kind = countedKinds.has(params.kind) ? params.kind : "unknown";
    const hook = KNOWN_HOOKS.has(params.hook ?? "") ? (params.hook as string) : "unknown";
    metrics.hookRequests.inc({ kind, hook, code: String(reply.statusCode) });
    if (reply.statusCode >= 200 && reply.statusCode < 300) {
      const nowMs = now().getTime();
      hookActivity.answered(nowMs);
      metrics.hookLastSuccess.set(nowMs / 1000);
    }
    metrics.hookDuration.observe({ kind, hook }, reply.elapsedTime / 1000);
  });
}

function registerHealthRoutes(app: FastifyInstance, closing: () => boolean): void {
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) =>
    closing() ? reply.code(503).send({ status: "closing" }) : { status: "ready" },
  );
}

interface MetricsRouteOptions {
  metrics: OperatorMetrics;
  hookActivity: HookActivity;
  now: () => Date;
  staleAfterMs: number;
}

function registerMetricsRoute(app: FastifyInstance, { metrics, hookActivity, now, staleAfterMs }: MetricsRouteOptions) {
  app.get("/metrics", async (_req, reply) => {
    const nowMs = now().getTime();
    sweepStaleResources(metrics, nowMs, staleAfterMs, hookActivity.flowingForMs(nowMs));
    reply.header("Content-Type", metrics.registry.contentType);
    // written a chunk at a time: one string of every series was the server's memory peak (expose.ts)
    return reply.send(Readable.from(exposition(metrics.registry)));
  });
}
