/**
 * POST /hooks/<kind>/{customize,sync,finalize}: the route only composes — validate the envelope,
 * pick the kind module, let it observe → decide → act, serialize a closed response.
 */

import { setImmediate } from "node:timers/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type HookKind, type KindInfo, kindInfo } from "../api/schemas.js";
import { validateSpec } from "../api/validate.js";
import { qualifiedName } from "../k8s/objects.js";
import type { DecoratorModule } from "../kinds/decorators/module.js";
import { namespaceTerminating, observedOnly } from "../pipeline/status.js";
import type { HookDeps, KindModule } from "../pipeline/types.js";
import { bearerAuth } from "./auth.js";
import type { RelatedStatusReads } from "./body.js";
import { answerDecoratorHook, DECORATOR_RESPONSE_SCHEMAS } from "./decorator.js";
import { EnvelopeError, parseCustomizeRequest, parseSyncRequest } from "./envelope.js";
import { parentOf, withCallCount } from "./hook-log.js";
import { ByteBudget, type HookLimits, type Lease } from "./limits.js";
import { readHookBody } from "./read-body.js";

/** The hook names of every kind (/hooks/<kind>/<hook>); the app counts requests per name. */
export const HOOKS = ["customize", "sync", "finalize"] as const;
type HookName = (typeof HOOKS)[number];

// v2 hooks are decoded strictly by Metacontroller (kjson.UnmarshalStrict, pkg/hooks/webhook.go):
// an unknown top-level key, or an unknown key in a related rule, fails the whole call. Each hook
// has its own closed schema, serialized per hook (not one anyOf, which validates instead of
// serializing and answers 500 for any extra key): keys outside it are dropped, never sent.
// children items and status stay open (additionalProperties) so nothing inside them is dropped;
// Metacontroller decodes children as Unstructured and status as a plain map.
const syncResponseSchema = {
  type: "object",
  additionalProperties: false,
  required: ["status", "children"],
  properties: {
    status: { type: "object", additionalProperties: true },
    children: { type: "array", items: { type: "object", additionalProperties: true } },
    resyncAfterSeconds: { type: "number" },
  },
} as const;
const finalizeResponseSchema = {
  ...syncResponseSchema,
  properties: { ...syncResponseSchema.properties, finalized: { type: "boolean" } },
} as const;
// metav1.LabelSelector and v1alpha1.RelatedResourceRule, closed as the strict decoder reads them.
const labelSelectorSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    matchLabels: { type: "object", additionalProperties: { type: "string" } },
    matchExpressions: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          key: { type: "string" },
          operator: { type: "string" },
          values: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
} as const;
const customizeResponseSchema = {
  type: "object",
  additionalProperties: false,
  required: ["relatedResources"],
  properties: {
    relatedResources: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          apiVersion: { type: "string" },
          resource: { type: "string" },
          labelSelector: labelSelectorSchema,
          namespaceSelector: labelSelectorSchema,
          namespace: { type: "string" },
          names: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
} as const;
const RESPONSE_SCHEMAS: Record<HookName, Record<string, unknown>> = {
  customize: customizeResponseSchema,
  sync: syncResponseSchema,
  finalize: finalizeResponseSchema,
};
const errorSchema = { type: "object", properties: { error: { type: "string" } } } as const;

export interface HooksOptions {
  deps: HookDeps;
  kinds: ReadonlyMap<HookKind, KindModule>;
  /** The DecoratorController kinds by hook path segment (src/kinds/decorators/index.ts unless a test injects others). */
  decorators: ReadonlyMap<string, DecoratorModule>;
  hookToken?: string;
  limits: HookLimits;
  retryAfterSeconds: number;
}

export async function hooksPlugin(app: FastifyInstance, opts: HooksOptions) {
  if (opts.hookToken) app.addHook("onRequest", bearerAuth(opts.hookToken));
  const leases = registerSlots(app, opts.limits, opts.retryAfterSeconds);
  registerHookBodyParser(app, opts.kinds, opts.limits, leases);
  registerHookRoute(app, opts);
}

/**
 * The slot is taken before a byte of the body is read (after the token check), and held with
 * the request's lease of body bytes until the response is done or the connection is gone.
 * Answers the leases by raw request, for the body parser.
 */
function registerSlots(app: FastifyInstance, limits: HookLimits, retryAfterSeconds: number): WeakMap<object, Lease> {
  const budget = new ByteBudget(limits.bodyBudgetBytes, limits.maxInFlight);
  const leases = new WeakMap<object, Lease>();
  const releases = new WeakMap<object, () => void>();
  let inFlight = 0;
  app.addHook("onRequest", async (req, reply) => {
    if (inFlight >= limits.maxInFlight) {
      reply.header("Retry-After", String(retryAfterSeconds));
      reply.header("Connection", "close");
      return reply.code(429).send({ error: `overloaded: ${inFlight} hooks in flight (limit ${limits.maxInFlight})` });
    }
    inFlight++;
    const lease = budget.lease();
    leases.set(req.raw, lease);
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      inFlight--;
      lease.close();
    };
    releases.set(req.raw, release);
    reply.raw.once("close", release);
  });
  // 'close' covers a dropped connection; onResponse covers injected requests too.
  app.addHook("onResponse", async (req) => releases.get(req.raw)?.());
  return leases;
}

/**
 * Our own JSON parser in this context (src/server/body.ts): the limit of the kind in the path,
 * managedFields and kubectl's last-applied annotation never parsed.
 */
function registerHookBodyParser(
  app: FastifyInstance,
  kinds: ReadonlyMap<HookKind, KindModule>,
  limits: HookLimits,
  leases: WeakMap<object, Lease>,
): void {
  const unreadStatus = new Map<HookKind, RelatedStatusReads>();
  for (const [k, m] of kinds) {
    const reads = Object.entries(m.relatedStatusReads ?? {});
    if (reads.length) unreadStatus.set(k, new Map(reads));
  }
  // Only this parser in the hooks context: fastify's text/plain one would buffer a body outside
  // the budget; any other type is 415 before a byte is read.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", async (req: FastifyRequest, payload: NodeJS.ReadableStream) => {
    const kind = (req.params as { kind?: string } | undefined)?.kind;
    const tailnet = kind === "tailnet";
    const limit = tailnet ? limits.tailnetBodyLimitBytes : limits.bodyLimitBytes;
    const info = kind ? kindInfo(kind) : undefined;
    // parsed as it arrives when large (src/server/stream-body.ts): the raw body is never held whole
    return readHookBody(req.headers, payload, limit, tailnet ? "Tailnet hooks" : "hooks of this kind", {
      drop: { relatedStatus: info ? unreadStatus.get(info.hookKind) : undefined },
      lease: leases.get(req.raw),
      timeoutMs: limits.bodyTimeoutMs,
    });
  });
}

type HookRequest = FastifyRequest<{ Params: { kind: string; hook: string } }>;

function registerHookRoute(app: FastifyInstance, opts: HooksOptions): void {
  app.post<{ Params: { kind: string; hook: string } }>(
    "/hooks/:kind/:hook",
    { schema: { response: { "4xx": errorSchema, "5xx": errorSchema } } },
    async (req, reply) => {
      const { kind, hook } = req.params;
      const info = kindInfo(kind);
      const module = info ? opts.kinds.get(info.hookKind) : undefined;
      // DecoratorControllers (annotated Services): their own envelope and answer (src/server/decorator.ts).
      const decorator = opts.decorators.get(kind);
      if (!decorator && (!info || !module))
        return reply.code(404).send({ error: `unknown kind "${kind.slice(0, 40)}" in path` });
      if (!HOOKS.includes(hook as HookName))
        return reply.code(404).send({ error: `unknown hook "${hook.slice(0, 40)}"` });
      try {
        const started = performance.now();
        const run = withCallCount(() =>
          decorator
            ? answerDecoratorHook(hook as HookName, decorator, req.body, opts.deps)
            : answerHook(hook as HookName, info as KindInfo, module as KindModule, req.body, opts.deps),
        );
        const answer = await run.result;
        logAnswered(req, answer, started, run.count());
        // The hook's own closed schema (RESPONSE_SCHEMAS): keys Metacontroller's strict decoder
        // refuses are dropped here, never sent.
        const schema =
          decorator && hook !== "customize"
            ? DECORATOR_RESPONSE_SCHEMAS[hook as "sync" | "finalize"]
            : RESPONSE_SCHEMAS[hook as HookName];
        const text = reply.serializeInput(answer, schema);
        return reply.type("application/json; charset=utf-8").send(text);
      } catch (e) {
        if (e instanceof EnvelopeError) return reply.code(e.statusCode).send({ error: e.message });
        // Internal failure: non-200 so Metacontroller changes nothing and retries; one line, no stack.
        const what = decorator ? decorator.name : (info as KindInfo).kind;
        const who = failedParentName(req.body, decorator !== undefined);
        req.log.error({ err: e, kind: what, hook, parent: who }, "hook failed");
        return reply.code(500).send({ error: `${hook} ${what} ${who} failed: ${(e as Error).message}`.split("\n")[0] });
      }
    },
  );
}

/** At debug level, one line per sync or finalize: how long, how many Headscale calls, how many children. */
function logAnswered(req: HookRequest, answer: Record<string, unknown>, started: number, headscaleCalls: number): void {
  const { hook } = req.params;
  if (hook === "customize" || !["debug", "trace"].includes(req.log.level)) return;
  const ms = Math.round((performance.now() - started) * 10) / 10;
  const children = Array.isArray(answer.children) ? answer.children.length : 0;
  req.log.debug(
    { hook, ...parentOf(req), ms, headscaleCalls, children },
    `${hook} answered in ${ms} ms with ${headscaleCalls} Headscale calls`,
  );
}

/** namespace/name of the object a failed hook was about ("?" if the body names none). */
function failedParentName(body: unknown, decorator: boolean): string {
  type Named = { metadata?: { name?: string; namespace?: string } };
  const named = body as { parent?: Named; object?: Named } | undefined;
  const parent = decorator ? (named?.object ?? named?.parent) : named?.parent;
  return parent?.metadata?.name ? qualifiedName({ metadata: parent.metadata as { name: string } }) : "?";
}

async function answerHook(
  hook: HookName,
  info: KindInfo,
  module: KindModule,
  body: unknown,
  deps: HookDeps,
): Promise<Record<string, unknown>> {
  if (hook === "customize") {
    const creq = parseCustomizeRequest(body, info);
    return { relatedResources: module.customize(creq, deps) };
  }
  const sreq = parseSyncRequest(body, info, hook);
  if (hook === "finalize") {
    const r = await module.finalize(sreq, deps);
    // a finalize creates nothing, whatever a kind answers (common.ts observedOnly)
    const children = observedOnly(r.children, sreq);
    return { status: r.status, children, resyncAfterSeconds: r.resyncAfterSeconds, finalized: r.finalized };
  }
  // One path to InvalidSpec: the CRD schema first, then what only the kind can judge (its spec.ts).
  const invalid = validateSpec(info.hookKind, sreq.parent.spec) ?? module.specProblem?.(sreq.parent);
  // Big syncs (a Tailnet with thousands of related objects) parse, decide and serialize for
  // tens of milliseconds; yielding between the phases keeps other hooks' latency bounded.
  await setImmediate();
  const r = invalid ? module.invalid(sreq, invalid, deps) : await module.sync(sreq, deps);
  await setImmediate();
  // nothing can be created in a namespace being deleted: only observed children are kept (common.ts)
  const children = namespaceTerminating(sreq) ? observedOnly(r.children, sreq) : r.children;
  return { status: r.status, children, resyncAfterSeconds: r.resyncAfterSeconds };
}
