/**
 * What the end-to-end worlds of several kinds share: the world of the identity kinds (TailnetUser and
 * TailnetAuthKey, which both write Headscale's users and pre-auth keys), the credentials Secret a Tailnet
 * publishes, and re-pointing agent pods at a metrics port.
 */
import type { TestContext } from "node:test";
import { API_VERSION } from "../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../src/headscale/view.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { kindModules } from "../../../src/kinds/composite/index.js";
import { b64 } from "../../../src/kinds/shared/secrets.js";
import { createOperatorMetrics, type OperatorMetrics } from "../../../src/metrics/registry.js";
import { memoryEventRecorder } from "../../../src/server/events.js";
import { type FakeHeadscale, useFakeHeadscale } from "../../fakes/headscale/index.js";
import { skeletonTailnet } from "../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../fakes/metacontroller.js";
import { parentObject } from "../../fixtures/hooks.js";
import { build } from "../../helpers/server.js";

export const API = API_VERSION;
export const T0 = new Date("2026-11-29T10:00:00Z");

/**
 * The Secret a Tailnet publishes for the workload kinds (tailnet-system/tailnet-home-credentials): the URL
 * and API key the operator reaches Headscale with, and a private CA when the Tailnet names one.
 */
export function credentialsSecret(fake: FakeHeadscale, ca?: string): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "tailnet-home-credentials", namespace: "tailnet-system" },
    data: { url: b64(fake.url), apiKey: b64(fake.apiKey), ...(ca ? { "ca.crt": b64(ca) } : {}) },
  };
}

/** Points every agent pod the emulator holds at `port` for its metrics (its /status). */
export function pointPodsAt(mc: FakeMetacontroller, port: number): void {
  for (const pod of mc.list("Pod")) {
    const copy = structuredClone(pod);
    const containers = (copy.spec as { containers: { ports?: { name?: string; containerPort: number }[] }[] })
      .containers;
    for (const c of containers) for (const p of c.ports ?? []) if (p.name === "metrics") p.containerPort = port;
    mc.apply(copy);
  }
}

/** A key of a Secret's data, decoded (undefined when the Secret or the key is missing). */
export const secretText = (s: K8sObject | undefined, key: string) => {
  const v = (s?.data as Record<string, string> | undefined)?.[key];
  return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
};

export interface IdentityWorld {
  fake: FakeHeadscale;
  mc: FakeMetacontroller;
  clock: { now: Date };
  metrics: OperatorMetrics;
  logs: string[];
  events: ReturnType<typeof memoryEventRecorder>;
  /** Advance the clock by seconds. */
  tick(seconds: number): void;
  get(kind: string, name: string, namespace?: string): (K8sObject & { status?: Record<string, unknown> }) | undefined;
  reasons(kind: string, name: string, namespace?: string): Record<string, string>;
  secret(name: string, namespace?: string): K8sObject | undefined;
}

export interface IdentityWorldOptions {
  tenancy?: Record<string, unknown>;
  namespaceLabels?: Record<string, string>;
  parentCacheLag?: boolean;
  /** More Tailnet spec fields (e.g. maxAuthKeyLifetime). */
  tailnetSpec?: Record<string, unknown>;
}

/**
 * The end-to-end world for TailnetAuthKey and TailnetUser: the real hook server driven by the Metacontroller
 * emulator against the fake Headscale. The Tailnet kind is a no-op here (it would write the policy), so only
 * the key and user kinds write to Headscale. The clock is the test's.
 */
export async function identityWorld(t: TestContext, opts: IdentityWorldOptions = {}): Promise<IdentityWorld> {
  const clock = { now: T0 };
  const now = () => clock.now;
  const fake = await useFakeHeadscale(t, { now });
  const views = new HeadscaleViews({ timeoutMs: 500, cacheTTLSeconds: 0, retries: 0, now });
  t.after(() => views.close());
  const kinds = new Map(kindModules);
  kinds.set("tailnet", skeletonTailnet());
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const events = memoryEventRecorder();
  const { app, logs } = await build(t, { server: { deps: { views, now, metrics, events }, kinds } });
  const mc = new FakeMetacontroller({ app, parentCacheLag: opts.parentCacheLag });
  mc.apply(
    parentObject("Tailnet", "home", {
      // the URL machines log in to; the operator reaches the server at the credentials Secret's url
      headscale: { url: "https://headscale.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      ...(opts.tenancy ? { tenancy: opts.tenancy } : {}),
      ...(opts.tailnetSpec ?? {}),
    }),
  );
  mc.apply(credentialsSecret(fake, "-----BEGIN CERTIFICATE-----\nfake\n"));
  mc.apply({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "ci", labels: { "kubernetes.io/metadata.name": "ci", ...(opts.namespaceLabels ?? {}) } },
  });
  const get = (kind: string, name: string, namespace?: string) => mc.get(API, kind, name, namespace);
  return {
    fake,
    mc,
    clock,
    metrics,
    logs,
    events,
    tick(seconds) {
      clock.now = new Date(clock.now.getTime() + seconds * 1000);
    },
    get,
    reasons(kind, name, namespace) {
      const conds = (get(kind, name, namespace)?.status?.conditions ?? []) as { type: string; reason: string }[];
      return Object.fromEntries(conds.map((c) => [c.type, c.reason]));
    },
    secret: (name, namespace = "ci") => mc.get("v1", "Secret", name, namespace),
  };
}
