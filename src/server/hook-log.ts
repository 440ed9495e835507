/**
 * What the operator's log says about hook answers, so a user debugging Metacontroller's retries
 * sees why without reading metrics:
 *  - one line per non-200 answer on /hooks/*: method, path, status, the one-line reason the body
 *    carried, and the parent's kind/namespace/name when the body got that far (a 401 or 413 is
 *    answered before the body is read). Never a header, a body or a query string, so never a secret.
 *  - at LOG_LEVEL=debug, one line per sync/finalize: its duration and how many Headscale requests
 *    it caused (counted through an AsyncLocalStorage, so concurrent hooks do not mix their counts;
 *    a request served from the shared snapshot cache costs the hook nothing and counts 0).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { FastifyReply, FastifyRequest } from "fastify";
import { kindInfo } from "../api/schemas.js";

const calls = new AsyncLocalStorage<{ headscaleCalls: number }>();

/** Runs one hook with its own Headscale request counter. */
export function withCallCount<T>(fn: () => Promise<T>): { result: Promise<T>; count: () => number } {
  const store = { headscaleCalls: 0 };
  return { result: calls.run(store, fn), count: () => store.headscaleCalls };
}

/** Called for every Headscale request (HeadscaleViews' onRequest); counts it against the current hook. */
export function countHeadscaleCall(): void {
  const store = calls.getStore();
  if (store) store.headscaleCalls++;
}

type Meta = { name?: unknown; namespace?: unknown };

/** "TailnetEgress shop/db", or the kind alone when the body carried no usable parent. */
export function parentOf(req: FastifyRequest): { kind?: string; namespace?: string; name?: string } {
  const params = req.params as { kind?: string } | undefined;
  const kind = params?.kind ? kindInfo(params.kind)?.kind : undefined;
  const body = req.body as { parent?: { metadata?: Meta } } | undefined;
  const meta = body && typeof body === "object" ? body.parent?.metadata : undefined;
  const str = (v: unknown) => (typeof v === "string" && v.length <= 253 ? v : undefined);
  return {
    ...(kind ? { kind } : {}),
    ...(str(meta?.namespace) ? { namespace: str(meta?.namespace) } : {}),
    ...(str(meta?.name) ? { name: str(meta?.name) } : {}),
  };
}

const REASON = Symbol("hookAnswerReason");
type WithReason = FastifyRequest & { [REASON]?: string };

/** onSend: remember the `error` line of a non-200 JSON answer for the onResponse log line. */
export async function rememberReason(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode !== 200 && typeof payload === "string" && payload.startsWith("{")) {
    try {
      const error = (JSON.parse(payload) as { error?: unknown }).error;
      if (typeof error === "string") (req as WithReason)[REASON] = error.split("\n")[0].slice(0, 300);
    } catch {
      // not JSON: no reason to report
    }
  }
  return payload;
}

/** onResponse: the one line for a non-200 hook answer. */
export function logHookAnswer(req: FastifyRequest, reply: FastifyReply): void {
  if (reply.statusCode === 200 || !req.url.startsWith("/hooks/")) return;
  const line = {
    method: req.method,
    path: req.url.split("?")[0].slice(0, 200),
    status: reply.statusCode,
    reason: (req as WithReason)[REASON] ?? "",
    ...parentOf(req),
  };
  const msg = `hook answered ${reply.statusCode}: ${line.reason}`;
  if (reply.statusCode >= 500) req.log.error(line, msg);
  else req.log.warn(line, msg);
}
