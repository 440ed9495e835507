/** Hook dependencies for tests that call a kind module directly (no server). */
import Fastify from "fastify";
import { DEFAULT_CONFIG } from "../../src/config.js";
import { HeadscaleViews } from "../../src/headscale/view.js";
import { ComposeMemo } from "../../src/kinds/composite/tailnet/compose-memo.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import type { HookDeps } from "../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../src/server/events.js";

/** Real hook dependencies that reach nothing: a silent logger, fresh metrics, views that are never used. */
export function quietDeps(now: Date): HookDeps {
  return {
    config: DEFAULT_CONFIG,
    views: new HeadscaleViews({ timeoutMs: 1000, cacheTTLSeconds: 1 }),
    now: () => now,
    log: Fastify({ logger: false }).log,
    metrics: createOperatorMetrics({ defaultMetrics: false }),
    events: memoryEventRecorder(),
    scraper: { scrape: async () => [] },
    composeMemo: new ComposeMemo(),
  };
}
