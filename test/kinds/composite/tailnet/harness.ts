/**
 * End-to-end harness for the Tailnet: the real hook server, the Metacontroller emulator and the fake
 * Headscale, with a settable clock shared by the view cache, the server and the fake. The workload
 * kinds are stubbed (their own e2e tests cover them) so only the Tailnet talks to Headscale here;
 * their objects still reach the Tailnet through `related`, exactly as in a cluster.
 */
import type { Dispatcher } from "undici";
import type { HookKind } from "../../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import type { KindModule } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { type FakeHeadscale, type FakeHeadscaleOptions, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { build } from "../../../helpers/server.js";
import { apiKeySecret, baseConfigMap, NOW, tailnet, tailnetSpec } from "./fixtures.js";

type After = { after: (fn: () => Promise<void> | void) => void };

export const API = "tailnet.internal/v1alpha1";
export const LIVE = '{"acls": [{"action": "accept", "src": ["*"], "dst": ["*:*"]}]}';

/**
 * Workload kinds answer with their status untouched (a gateway keeps its dnsServiceIP, an object its kept
 * tag and recorded key ids) and no children.
 */
function stub(base: KindModule): KindModule {
  const kept = (parent: K8sObject) => {
    const s = (parent.status ?? {}) as { dnsServiceIP?: unknown; tag?: unknown; preAuthKeyIds?: unknown };
    return {
      ...(typeof s.dnsServiceIP === "string" ? { dnsServiceIP: s.dnsServiceIP } : {}),
      ...(typeof s.tag === "string" ? { tag: s.tag } : {}),
      ...(Array.isArray(s.preAuthKeyIds) ? { preAuthKeyIds: s.preAuthKeyIds } : {}),
    };
  };
  return {
    ...base,
    sync: async (req) => ({ status: kept(req.parent), children: [] }),
    finalize: async () => ({ status: {}, children: [], finalized: true }),
  };
}

export function tailnetOnlyKinds(real: readonly HookKind[] = []): Map<HookKind, KindModule> {
  const kinds = new Map(kindModules);
  for (const k of ["egress", "ingress", "site", "gateway"] as const) {
    if (real.includes(k)) continue;
    const m = kinds.get(k);
    if (m) kinds.set(k, stub(m));
  }
  return kinds;
}

export interface HarnessOptions {
  fake?: FakeHeadscaleOptions;
  /** Tailnet spec overrides (headscale.url is always the fake's). */
  spec?: Record<string, unknown>;
  /** Objects applied before the Tailnet; default: the API key Secret and the base ConfigMap. */
  objects?: (fake: FakeHeadscale) => K8sObject[];
  dispatcherFactory?: (conn: { url: string; ca?: string }) => Dispatcher;
  /** Client timeout per request (default 3000 ms: a cold fake answers its first request slowly). */
  timeoutMs?: number;
  /** The emulator serves the Tailnet from an informer cache one status write behind (src/emulator/metacontroller/loop.ts). */
  parentCacheLag?: boolean;
  /** Workload kinds that run for real (their syncs write to the fake Headscale too); the rest are stubbed. */
  realKinds?: HookKind[];
}

export async function harness(t: After, opts: HarnessOptions = {}) {
  let ms = NOW.getTime();
  const now = () => new Date(ms);
  const fake = await useFakeHeadscale(t, { policy: LIVE, now, ...opts.fake });
  const views = new HeadscaleViews({
    timeoutMs: opts.timeoutMs ?? 3000,
    cacheTTLSeconds: 10,
    now,
    retries: 0,
    dispatcherFactory: opts.dispatcherFactory,
  });
  t.after(() => views.close());
  const events = memoryEventRecorder();
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const { app, logs } = await build(t, {
    server: { deps: { views, now, events, metrics }, kinds: tailnetOnlyKinds(opts.realKinds) },
  });
  const mc = new FakeMetacontroller({ app, parentCacheLag: opts.parentCacheLag });
  for (const o of opts.objects?.(fake) ?? [apiKeySecret(fake.apiKey), baseConfigMap()]) mc.apply(o);
  const spec = tailnetSpec(opts.spec ?? {});
  spec.headscale = { ...(spec.headscale as Record<string, unknown>), url: fake.url };
  mc.apply(tailnet(spec));

  const status = () => mc.status(API, "Tailnet", "home") as Record<string, unknown>;
  const condition = (type: string) => {
    const c = mc.condition("Tailnet", "home", type);
    if (!c) throw new Error(`Tailnet home has no ${type} condition`);
    return c;
  };
  const reason = (type: string) => condition(type).reason;
  /** The child objects of the Tailnet, as "Kind namespace/name". */
  const children = () => {
    const parent = mc.get(API, "Tailnet", "home");
    return parent
      ? mc
          .childrenOf(parent)
          .map((c) => `${c.kind} ${c.metadata.namespace}/${c.metadata.name}`)
          .sort()
      : [];
  };
  const child = (kind: string, name: string) => mc.get("v1", kind, name, "tailnet-system");
  /** Replaces the Tailnet's spec (kubectl apply). */
  const respec = (extra: Record<string, unknown>) => {
    const s = tailnetSpec(extra);
    s.headscale = { ...(s.headscale as Record<string, unknown>), url: fake.url };
    mc.apply(tailnet(s));
  };
  const metricsText = async () => (await app.inject({ method: "GET", url: "/metrics" })).body;
  /** Responses of every Tailnet sync so far (to see transient reasons such as Applied). */
  const syncReasons = (type: string) =>
    mc.calls
      .filter((c) => c.kind === "Tailnet" && c.hook === "sync")
      .map((c) => {
        const s = (c.response as { status?: { conditions?: { type: string; reason: string }[] } }).status;
        return s?.conditions?.find((x) => x.type === type)?.reason;
      });
  return {
    fake,
    mc,
    app,
    /** Every log line the hook server wrote. */
    logs,
    views,
    events,
    metrics,
    now,
    advance: (deltaMs: number) => {
      ms += deltaMs;
    },
    status,
    condition,
    reason,
    children,
    child,
    respec,
    metricsText,
    syncReasons,
  };
}

export type Harness = Awaited<ReturnType<typeof harness>>;

/** Settles, then checks the invariants of every e2e test: no hook error, and a repeat sync changes nothing. */
export async function settleStable(h: Harness): Promise<number> {
  const rounds = await h.mc.settle();
  const before = JSON.stringify(h.status());
  const puts = h.fake.count("PUT", /^\/api\/v1\/policy$/);
  if ((await h.mc.settle()) !== 1) throw new Error("a repeat sync changed something");
  if (JSON.stringify(h.status()) !== before) throw new Error("status changed on a repeat sync");
  if (h.fake.count("PUT", /^\/api\/v1\/policy$/) !== puts) throw new Error("a repeat sync wrote the policy again");
  if (h.mc.errors.length) throw new Error(`hook errors: ${h.mc.errors.join(" | ")}`);
  return rounds;
}

/**
 * A node registered the way an object's agent registers: with an agent-shaped key of its tag (reusable,
 * ephemeral, no user, minted after the fixtures' objects), which an object without status.preAuthKeyIds
 * adopts (tenancy.ts ownKeyIds) — only such nodes answer for an ingress's names (node-owners.ts).
 */
export function addAgentNode(fake: FakeHeadscale, input: Parameters<FakeHeadscale["addNode"]>[0] & { tags: string[] }) {
  const node = fake.addNode(input);
  const id = String(900 + fake.state.preAuthKeys.size);
  fake.state.preAuthKeys.set(id, {
    id,
    prefix: `agent${id}`,
    key: `hskey-auth-agent${id}-${"0".repeat(64)}`,
    userId: null,
    reusable: true,
    ephemeral: true,
    used: true,
    expiration: new Date("2027-01-01T00:00:00Z"),
    createdAt: new Date("2026-11-29T00:00:00Z"),
    aclTags: input.tags,
  });
  node.preAuthKeyId = id;
  return node;
}

/**
 * The Events the Tailnet recorded for something it did (PolicyDriftOverwritten), without the Events of its
 * condition changes (src/pipeline/condition-events.ts), which every first sync records.
 */
export function writeEvents(h: Harness) {
  return h.events.events.filter((e) => !e.condition);
}
