/**
 * `kubectl describe` shows Events for every kind (issue 33). One object of each kind with hooks lives in a
 * real kube-apiserver; the real hook server syncs them through the Metacontroller loop (test/real/kube/loop.ts,
 * with the fake Headscale), and records its Events with the production recorder (src/server/events.ts)
 * against that server, authenticated as the operator's own ServiceAccount bound to the ClusterRole of
 * manifests/base/rbac.yaml — so the install's RBAC is what lets the Events through. Each object's describe
 * output must list an Event from tailnet-operator whose reason is its current Ready reason (PolicyApplied for
 * a Tailnet, which has no Ready) and whose message names the condition.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import type { FastifyBaseLogger } from "fastify";
import { KINDS } from "../../../src/api/schemas.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { b64 } from "../../../src/kinds/shared/secrets.js";
import { eventTypeOf } from "../../../src/pipeline/condition-events.js";
import { kubeEventRecorder } from "../../../src/server/events.js";
import { type FakeHeadscale, useFakeHeadscale } from "../../fakes/headscale/index.js";
import { build } from "../../helpers/server.js";
import { REPO } from "../bins.js";
import { applyClean, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";
import { collectionPath, KubeLoop } from "./loop.js";

const API = "tailnet.internal/v1alpha1";
const NS = "shop";
let cluster: Cluster;
let fake: FakeHeadscale;
let loop: KubeLoop;
const cleanups: (() => Promise<void> | void)[] = [];
/** What the recorder logged as not recorded (a refusal by the API server, RBAC included). */
const refusals: unknown[] = [];

const object = (kind: string, name: string, spec: Record<string, unknown>, namespaced = true) => ({
  apiVersion: API,
  kind,
  metadata: { name, ...(namespaced ? { namespace: NS } : {}) },
  spec,
});

/** The operator's ServiceAccount token, as its pod would hold one. */
function operatorKubeConfig(): KubeConfig {
  const token = cluster.kubectl(["-n", "tailnet-system", "create", "token", "tailnet-operator"]).trim();
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "real", server: cluster.server, caFile: join(cluster.dir, "ca.crt"), skipTLSVerify: false }],
    users: [{ name: "operator", token }],
    contexts: [{ name: "operator", cluster: "real", user: "operator" }],
    currentContext: "operator",
  });
  return kc;
}

function recorderLog(): FastifyBaseLogger {
  const log = {
    info: () => undefined,
    warn: (...args: unknown[]) => void refusals.push(args),
    child: () => log,
  };
  return log as unknown as FastifyBaseLogger;
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

describe("Events for every kind, on a real API server", { timeout: 600_000 }, () => {
  before(async () => {
    const tt = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) };
    cluster = await startCluster();
    applyClean(cluster, cluster.kubectl(["kustomize", "manifests/crds"]));
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    ensureNamespace(cluster, "tailnet-system");
    ensureNamespace(cluster, NS);
    // the operator's ServiceAccount and ClusterRole as the install has them
    cluster.kubectl(["apply", "--server-side", "-f", join(REPO, "manifests", "base", "rbac.yaml")]);
    fake = await useFakeHeadscale(tt);
    const events = kubeEventRecorder(recorderLog(), { kubeConfig: operatorKubeConfig() });
    const { app } = await build(tt, { server: { deps: { events } } });
    loop = new KubeLoop(cluster, { app });
    applyClean(cluster, [
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "hs", namespace: "tailnet-system" },
        data: { apiKey: b64(fake.apiKey) },
      },
      object(
        "Tailnet",
        "home",
        {
          headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
          dns: { baseDomain: "ts.example.com" },
        },
        false,
      ),
      object("TailnetEgress", "db", {
        tailnetRef: { name: "home" },
        targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432 }] }],
      }),
      object("TailnetIngress", "web", {
        tailnetRef: { name: "home" },
        hostname: "web",
        exposes: [{ name: "http", port: 80, backend: { service: "web", port: 8080 } }],
      }),
      object("TailnetSite", "lan", {
        tailnetRef: { name: "home" },
        prefixes: ["192.168.10.0/24"],
        advertiserTags: ["tag:router"],
      }),
      object("TailnetGateway", "gw", { tailnetRef: { name: "home" }, routes: ["10.96.0.0/12"] }),
      object("TailnetUser", "alice", { tailnetRef: { name: "home" }, name: "alice", authKeyNamespaces: [NS] }, false),
      object("TailnetAuthKey", "ci", { tailnetRef: { name: "home" }, user: { name: "alice" }, secretName: "ci-key" }),
    ] as never);
    fake.addNode({ name: "db-1" });
    await loop.settle();
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
    await cluster?.stop();
  });

  for (const info of KINDS) {
    it(`kubectl describe ${info.kind} shows the Event of its current condition, from tailnet-operator`, async () => {
      const namespaced = info.scope === "Namespaced";
      const r = await loop.kube.send("GET", collectionPath(API, info.plural, namespaced ? NS : undefined));
      const items = (r.json as { items: (K8sObject & { status?: { conditions?: Record<string, string>[] } })[] }).items;
      assert.equal(items.length, 1, `one ${info.kind}`);
      const live = items[0];
      const type = info.kind === "Tailnet" ? "PolicyApplied" : "Ready";
      const condition = live.status?.conditions?.find((c) => c.type === type);
      assert.ok(condition, `${info.kind} has ${type}: ${JSON.stringify(live.status)}`);
      const args = ["describe", info.plural, live.metadata.name, ...(namespaced ? ["-n", NS] : [])];
      let out = "";
      // Events are recorded best effort, after the answer: wait for the server to list this one
      await until(`${info.kind}: Event ${condition.reason}`, () => {
        out = cluster.kubectl(args);
        return new RegExp(`\\n\\s+\\w+\\s+${condition.reason}\\s+\\S+\\s+tailnet-operator\\s+${type}: `).test(out);
      }).catch((e) => assert.fail(`${(e as Error).message}\n${out.slice(out.indexOf("Events:"))}`));
      const expectedType = eventTypeOf(condition as Parameters<typeof eventTypeOf>[0]);
      assert.match(
        out,
        new RegExp(`\\n\\s+${expectedType}\\s+${condition.reason}\\s`),
        out.slice(out.indexOf("Events:")),
      );
    });
  }

  it("every Event went through with the operator's own RBAC; a repeat sync records none", async () => {
    assert.deepEqual(refusals, []);
    const count = () =>
      (
        JSON.parse(cluster.kubectl(["get", "events", "-A", "-o", "json"])) as {
          items: { source?: { component?: string } }[];
        }
      ).items.filter((e) => e.source?.component === "tailnet-operator").length;
    const before = count();
    assert.ok(before >= KINDS.length, `${before} Events`);
    for (const p of loop.parents()) await loop.syncParent(p);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(count(), before, "nothing changed, nothing recorded");
  });
});
