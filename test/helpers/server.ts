/** build(t): a real hook server in process, closed after the test (demo's test/helper.ts). */

import { Writable } from "node:stream";
import type { TestContext } from "node:test";
import { configFrom, type OperatorConfig } from "../../src/config.js";
import { buildServer, type ServerOptions } from "../../src/server/app.js";

export interface Built {
  app: ReturnType<typeof buildServer>;
  logs: string[];
  config: OperatorConfig;
}

export async function build(
  t: TestContext | { after: (fn: () => Promise<void> | void) => void },
  opts: { config?: Record<string, unknown>; env?: NodeJS.ProcessEnv; server?: ServerOptions } = {},
): Promise<Built> {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const config = configFrom({ logLevel: "debug", ...(opts.config ?? {}) }, opts.env ?? {});
  const app = buildServer(config, { logger: { stream }, ...(opts.server ?? {}) });
  await app.ready();
  t.after(() => app.close());
  return { app, logs, config };
}

/**
 * A hook server for a whole suite (a `before` hook has no TestContext): `post` answers a hook's JSON and fails on
 * anything but 200, `close` stops the server (call it from `after`).
 */
export async function suiteHooks(): Promise<{
  post: (path: string, payload: unknown) => Promise<Record<string, unknown>>;
  close: () => Promise<void> | void;
}> {
  let close: () => Promise<void> | void = () => undefined;
  const built = await build({
    after: (fn: () => Promise<void> | void) => {
      close = fn;
    },
  });
  const post = async (path: string, payload: unknown) => {
    const r = await built.app.inject({ method: "POST", url: path, payload: payload as object });
    if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode} ${r.body}`);
    return JSON.parse(r.body) as Record<string, unknown>;
  };
  return { post, close: () => close() };
}
