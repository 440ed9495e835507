/** A client wired to a fresh fake Headscale, and the typed rejection of a call, shared by the client tests. */
import assert from "node:assert/strict";
import { createHeadscaleClient, type HeadscaleClient } from "../../src/headscale/client.js";
import { HeadscaleError } from "../../src/headscale/errors.js";
import type { RequestMetric } from "../../src/headscale/http.js";
import { type FakeHeadscale, type FakeHeadscaleOptions, useFakeHeadscale } from "../fakes/headscale/index.js";

export type After = { after: (fn: () => Promise<void> | void) => void };

export async function clientOnFake(
  t: After,
  opts: { fake?: FakeHeadscaleOptions; timeoutMs?: number } = {},
): Promise<{ fake: FakeHeadscale; client: HeadscaleClient; metrics: RequestMetric[] }> {
  const fake = await useFakeHeadscale(t, opts.fake ?? { policy: "{}" });
  const metrics: RequestMetric[] = [];
  const client = createHeadscaleClient({
    url: fake.url,
    apiKey: fake.apiKey,
    timeoutMs: opts.timeoutMs ?? 10_000,
    onRequest: (m) => metrics.push(m),
  });
  t.after(() => client.close());
  return { fake, client, metrics };
}

/** The HeadscaleError a call fails with (fails the test when it succeeds or throws something else). */
export async function rejection(promise: Promise<unknown>): Promise<HeadscaleError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof HeadscaleError, `expected HeadscaleError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected the call to fail");
}
