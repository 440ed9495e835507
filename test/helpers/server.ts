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
