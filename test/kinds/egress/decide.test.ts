import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { decideEgress, decideWithoutTailnet, type EgressDecision } from "../../../src/kinds/egress/decide.js";
import { toMaps } from "../../fixtures/hooks.js";
import {
  config,
  decisionInput,
  egressParent,
  healthyWorld,
  KEY_EXPIRES,
  settings,
  TAG,
  UID,
  type World,
} from "./fixtures.js";

type Ctx = "ok" | "NoTailnet" | "NoAPIKey";

function decide(w: World, ctx: Ctx = "ok"): EgressDecision {
  if (ctx === "ok") return decideEgress(decisionInput(w));
  return decideWithoutTailnet({
    parent: w.parent,
    children: toMaps(w.children),
    related: toMaps(w.related),
    reason: ctx,
    message:
      ctx === "NoTailnet" ? 'Tailnet "home" not found' : "Secret tailnet-system/tailnet-home-credentials not found yet",
    settings: ctx === "NoAPIKey" ? settings : undefined,
  });
}

const reasons = (d: EgressDecision) => Object.fromEntries(d.conditions.map((c) => [c.type, c.reason]));
const targetReasons = (d: EgressDecision) =>
  Object.fromEntries((d.fields.targets ?? []).map((t) => [t.name, t.reason]));

function foreignService(name: string, extra: Partial<K8sObject["metadata"]> = {}): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "shop", uid: `svc-${name}`, ...extra },
    spec: { ports: [{ port: 80 }] },
  };
}

interface Row {
  name: string;
  ctx?: Ctx;
  change?: (w: World) => void;
  want: Record<string, string>;
  targets?: Record<string, string>;
}

const HEALTHY = {
  TagKnown: "Known",
  Registered: "Registered",
  RoutesGranted: "RoutesGranted",
  TargetsReachable: "Reachable",
  ServiceConflict: "NoConflict",
  Ready: "Ready",
};

// One row per reason, in the order of the reasons page (TagKnown, Registered, RoutesGranted /
// TargetsReachable, ServiceConflict, Ready, then the per-target reasons), plus the healthy row.
const rows: Row[] = [
  { name: "all healthy", want: HEALTHY, targets: { postgres: "", printer: "" } },
  {
    name: "live policy unreadable",
    change: (w) => (w.policy = "fail"),
    want: { ...HEALTHY, TagKnown: "Unknown", Ready: "TagUnknown" },
  },
  {
    name: "tag not in the live policy yet",
    change: (w) => (w.tagOwners = { "tag:other": [] }),
    want: { ...HEALTHY, TagKnown: "PolicyPending", Ready: "TagUnknown" },
  },
  {
    name: "no policy stored in Headscale yet",
    change: (w) => (w.policy = "none"),
    want: { ...HEALTHY, TagKnown: "PolicyPending", Ready: "TagUnknown" },
  },
  {
    name: "no node carries the tag",
    change: (w) =>
      (w.nodes = (w.nodes as { tags?: string[] }[]).filter((n) => !n.tags?.includes(TAG)) as World["nodes"]),
    want: { ...HEALTHY, Registered: "NotRegistered", Ready: "NotRegistered" },
  },
  {
    name: "node list unreadable (the netmap still proves the routes)",
    change: (w) => (w.nodes = "fail"),
    want: { ...HEALTHY, Registered: "Unknown", Ready: "Unknown" },
    targets: { postgres: "", printer: "" },
  },
  {
    name: "a target's node is not granted",
    change: (w) => (w.peers = w.peers.filter((p) => p.hostName !== "db-1")),
    want: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
    targets: { postgres: "NoGrant", printer: "" },
  },
  {
    name: "a target does not answer",
    change: (w) => (w.probes.postgres = { reachable: false, error: "dial 100.64.0.7:5432: ECONNREFUSED" }),
    want: { ...HEALTHY, TargetsReachable: "Unreachable", Ready: "Unreachable" },
    targets: { postgres: "Unreachable", printer: "" },
  },
  {
    name: "agent not scraped",
    change: (w) => (w.agents = { ok: false, message: "agent pod db-agent-0 (GET /status: ECONNREFUSED) not scraped" }),
    want: { ...HEALTHY, RoutesGranted: "ProbeFailed", TargetsReachable: "ProbeFailed", Ready: "ProbeFailed" },
    targets: { postgres: "ProbeFailed", printer: "ProbeFailed" },
  },
  {
    name: "target name taken by a foreign Service",
    change: (w) => (w.related = [foreignService("postgres")]),
    want: { ...HEALTHY, ServiceConflict: "Conflict", Ready: "Conflict" },
  },
  {
    name: "no Tailnet",
    ctx: "NoTailnet",
    want: {
      TagKnown: "NoTailnet",
      Registered: "NoTailnet",
      RoutesGranted: "NoTailnet",
      TargetsReachable: "NoTailnet",
      ServiceConflict: "NoConflict",
      Ready: "NoTailnet",
    },
  },
  {
    name: "no API key (credentials Secret missing)",
    ctx: "NoAPIKey",
    want: {
      TagKnown: "NoAPIKey",
      Registered: "NoAPIKey",
      RoutesGranted: "NoAPIKey",
      TargetsReachable: "NoAPIKey",
      ServiceConflict: "NoConflict",
      Ready: "NoAPIKey",
    },
  },
  {
    name: "target NotAdvertised: no router for its subnet",
    change: (w) => {
      w.nodes = (w.nodes as { name: string }[]).filter((n) => n.name !== "router") as World["nodes"];
      w.peers = w.peers.filter((p) => p.hostName !== "router");
    },
    want: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
    targets: { postgres: "", printer: "NotAdvertised" },
  },
  {
    name: "target NotApproved: the router's route is not approved",
    change: (w) => {
      for (const n of w.nodes as { name: string; approvedRoutes?: string[] }[])
        if (n.name === "router") n.approvedRoutes = [];
      w.peers = w.peers.filter((p) => p.hostName !== "router");
    },
    want: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
    targets: { postgres: "", printer: "NotApproved" },
  },
  {
    name: "target NoGrant: the route is approved but not in the netmap",
    change: (w) => (w.peers = w.peers.map((p) => ({ ...p, primaryRoutes: [] }))),
    want: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
    targets: { postgres: "", printer: "NoGrant" },
  },
  {
    name: "target ProbeFailed: the agent does not know it yet",
    change: (w) => delete w.probes.printer,
    want: { ...HEALTHY, TargetsReachable: "ProbeFailed", Ready: "ProbeFailed" },
    targets: { postgres: "", printer: "ProbeFailed" },
  },
  {
    name: "target OutsideTailnet: the dial went through the pod network (routes not accepted)",
    change: (w) => (w.probes.printer = { reachable: true, via: "outside" }),
    want: { ...HEALTHY, TargetsReachable: "OutsideTailnet", Ready: "OutsideTailnet" },
    targets: { postgres: "", printer: "OutsideTailnet" },
  },
  {
    name: "an agent that does not report the dial path (older image): reachable as before",
    change: (w) => (w.probes.printer = { reachable: true, via: "unknown" }),
    want: HEALTHY,
    targets: { postgres: "", printer: "" },
  },
  {
    name: "target Unreachable",
    change: (w) => (w.probes.printer = { reachable: false, error: "dial 192.168.1.10:631: SOCKS5 HostUnreachable" }),
    want: { ...HEALTHY, TargetsReachable: "Unreachable", Ready: "Unreachable" },
    targets: { postgres: "", printer: "Unreachable" },
  },
];

describe("decideEgress: one row per reason", () => {
  for (const r of rows) {
    it(r.name, () => {
      const w = healthyWorld();
      r.change?.(w);
      const d = decide(w, r.ctx);
      assert.deepEqual(reasons(d), r.want);
      if (r.targets) assert.deepEqual(targetReasons(d), r.targets);
    });
  }
});

describe("Ready staircase: each step removes the first blocker", () => {
  it("NoTailnet → NoAPIKey → TagUnknown → NotRegistered → RoutesMissing → ProbeFailed → Unreachable → Conflict → Ready", () => {
    const w = healthyWorld();
    w.tagOwners = {};
    w.nodes = (w.nodes as { tags?: string[] }[]).filter((n) => !n.tags?.includes(TAG)) as World["nodes"];
    const savedPeers = w.peers;
    w.peers = [];
    w.probes.printer = { reachable: false, error: "dial 192.168.1.10:9100: SOCKS5 HostUnreachable" };
    w.related = [foreignService("printer")];
    const steps: [string, Ctx, (() => void) | undefined][] = [
      ["NoTailnet", "NoTailnet", undefined],
      ["NoAPIKey", "NoAPIKey", undefined],
      ["TagUnknown", "ok", undefined],
      ["NotRegistered", "ok", () => (w.tagOwners = { [TAG]: [] })],
      ["RoutesMissing", "ok", () => (w.nodes = healthyWorld().nodes)],
      [
        "ProbeFailed",
        "ok",
        () => {
          w.peers = savedPeers;
          delete w.probes.printer; // the agent does not serve printer yet: its dial is unknown
        },
      ],
      [
        "Unreachable",
        "ok",
        () => (w.probes.printer = { reachable: false, error: "dial 192.168.1.10:9100: timed out after 5s" }),
      ],
      ["Conflict", "ok", () => (w.probes.printer = { reachable: true })],
      ["Ready", "ok", () => (w.related = [])],
    ];
    const seen: string[] = [];
    for (const [want, ctx, fix] of steps) {
      fix?.();
      const ready = decide(w, ctx).conditions.find((c) => c.type === "Ready");
      seen.push(ready?.reason ?? "");
      assert.equal(ready?.reason, want, `step ${want}`);
      assert.equal(ready?.status, want === "Ready" ? "True" : "False");
    }
    assert.equal(seen.length, 9);
  });

  it("Ready repeats the blocker's message verbatim", () => {
    const w = healthyWorld();
    w.peers = w.peers.filter((p) => p.hostName !== "db-1");
    const d = decide(w);
    const routes = d.conditions.find((c) => c.type === "RoutesGranted");
    const ready = d.conditions.find((c) => c.type === "Ready");
    assert.equal(
      routes?.message,
      "postgres NoGrant: db-1 (100.64.0.7) is not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to it",
    );
    assert.deepEqual([ready?.status, ready?.reason, ready?.message], ["False", "RoutesMissing", routes?.message]);
  });
});

describe("status fields and messages", () => {
  it("healthy: status.targets, the tag and the condition messages", () => {
    const d = decide(healthyWorld());
    assert.deepEqual(d.fields, {
      tag: "tag:k8s-shop-db",
      targets: [
        { name: "postgres", host: "db-1", address: "100.64.0.7", service: "postgres", state: "Ready", reason: "" },
        {
          name: "printer",
          host: "192.168.1.10",
          address: "192.168.1.10",
          service: "printer",
          state: "Ready",
          reason: "",
        },
      ],
    });
    assert.deepEqual(
      d.conditions.map((c) => [c.type, c.status, c.message]),
      [
        ["TagKnown", "True", "tag:k8s-shop-db is in the live policy's tagOwners"],
        ["Registered", "True", "1 node carries tag:k8s-shop-db: shop-db"],
        ["RoutesGranted", "True", "2 targets are in the agent's netmap"],
        ["TargetsReachable", "True", "2 targets answer the agent's probe"],
        ["ServiceConflict", "False", ""],
        ["Ready", "True", "every target is reachable through the agent"],
      ],
    );
  });

  it("a foreign Service: the target keeps its state, gets no Service, and the condition names the Service", () => {
    const w = healthyWorld();
    w.related = [foreignService("postgres")];
    const d = decide(w);
    assert.equal(d.fields.targets?.[0].service, "");
    assert.equal(
      d.conditions.find((c) => c.type === "ServiceConflict")?.message,
      "Service shop/postgres exists and is not owned by this TailnetEgress: target postgres gets no Service",
    );
    assert.equal(d.children.filter((c) => c.kind === "Service" && c.metadata.name === "postgres").length, 0);
    w.related = [foreignService("postgres"), foreignService("printer")];
    assert.equal(
      decide(w).conditions.find((c) => c.type === "ServiceConflict")?.message,
      "Services shop/postgres, shop/printer exist and are not owned by this TailnetEgress: their targets get no Service",
    );
  });

  const ownership: [string, Partial<K8sObject["metadata"]>, boolean][] = [
    [
      "owner reference to this egress",
      { ownerReferences: [{ apiVersion: "x", kind: "TailnetEgress", name: "db", uid: UID, controller: true }] },
      false,
    ],
    ["our owner-uid label and no controller", { labels: { "tailnet.internal/owner-uid": UID } }, false],
    [
      "our label but another controller",
      {
        labels: { "tailnet.internal/owner-uid": UID },
        ownerReferences: [{ apiVersion: "x", kind: "Other", name: "o", uid: "other", controller: true }],
      },
      true,
    ],
    ["another egress's label", { labels: { "tailnet.internal/owner-uid": "someone-else" } }, true],
  ];
  for (const [name, meta, conflict] of ownership) {
    it(`Service ownership: ${name} → ${conflict ? "Conflict" : "NoConflict"}`, () => {
      const w = healthyWorld();
      w.related = [foreignService("postgres", meta)];
      assert.equal(reasons(decide(w)).ServiceConflict, conflict ? "Conflict" : "NoConflict");
    });
  }

  it("a Service among the observed children is ours even without a label", () => {
    const w = healthyWorld();
    w.related = [foreignService("postgres")];
    w.children = [foreignService("postgres")];
    assert.equal(reasons(decide(w)).ServiceConflict, "NoConflict");
  });

  it("no key and Headscale refused one: Registered says so", () => {
    const w = healthyWorld();
    w.key = "none";
    w.nodes = (w.nodes as { tags?: string[] }[]).filter((n) => !n.tags?.includes(TAG)) as World["nodes"];
    const d = decide(w);
    assert.equal(
      d.conditions.find((c) => c.type === "Registered")?.message,
      "no Headscale node carries tag:k8s-shop-db yet; no pre-auth key yet: Headscale POST /api/v1/preauthkey: 500 fault injected: 500",
    );
    assert.equal(d.children.filter((c) => c.kind === "Secret").length, 0);
    // never a tailscale container without its key: no Deployment yet (containerboot would log a login URL)
    assert.equal(d.children.filter((c) => c.kind === "Deployment").length, 0);
    assert.deepEqual(
      d.children.map((c) => c.kind),
      ["ServiceAccount", "ConfigMap", "Service", "Service", "NetworkPolicy"],
      "everything else is returned",
    );
    // a Deployment that already runs is never dropped because a key could not be minted
    const running = decide(healthyWorld()).children.find((c) => c.kind === "Deployment") as K8sObject;
    w.children = [{ ...running, status: { readyReplicas: 1 } }];
    const kept = decide(w).children.find((c) => c.kind === "Deployment");
    assert.deepStrictEqual(kept, running);
  });
});

describe("children and observations", () => {
  it("Headscale unreachable: the Deployment and the key Secret come out byte-equal", () => {
    const healthy = decide(healthyWorld());
    const w = healthyWorld();
    w.policy = "fail";
    w.nodes = "fail";
    const down = decide(w);
    assert.deepStrictEqual(down.children, healthy.children);
  });

  it("without a Tailnet every observed child is kept as it was applied", () => {
    const w = healthyWorld();
    const applied = decide(healthyWorld()).children;
    w.children = applied.map((c) => ({
      ...c,
      metadata: {
        ...c.metadata,
        uid: "u",
        resourceVersion: "5",
        annotations: {
          ...(c.metadata.annotations ?? {}),
          "metacontroller.k8s.io/last-applied-configuration": JSON.stringify(c),
        },
      },
    }));
    const without = decide(w, "NoTailnet");
    assert.deepEqual(without.metrics, { authKeyExpiresAt: KEY_EXPIRES }, "the kept key's expiry is still exported");
    const kept = without.children;
    const byKey = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
    assert.deepStrictEqual(
      [...kept].sort((a, b) => byKey(a).localeCompare(byKey(b))),
      [...applied].sort((a, b) => byKey(a).localeCompare(byKey(b))),
    );
  });

  it("resync: 30 s while not Ready; when Ready, the key's half-life", () => {
    const w = healthyWorld();
    assert.equal(decide(w).resyncAfterSeconds, 10 * 3600, "10:00 → rotation at 20:00");
    w.probes.postgres = { reachable: false, error: "x" };
    assert.equal(decide(w).resyncAfterSeconds, 30);
    const late = healthyWorld();
    late.now = new Date("2026-11-29T19:59:50Z");
    assert.equal(decide(late).resyncAfterSeconds, 10);
  });

  it("metric values come from the same verdicts", () => {
    const w = healthyWorld();
    w.peers = w.peers.filter((p) => p.hostName !== "db-1");
    assert.deepEqual(decide(w).metrics, {
      targets: [
        { name: "postgres", state: "NoGrant" },
        { name: "printer", state: "Ready" },
      ],
      routesMissing: 1,
      authKeyExpiresAt: new Date("2026-11-30T08:00:00Z"),
    });
    w.agents = { ok: false, message: "x" };
    assert.equal(decide(w).metrics.routesMissing, undefined, "nothing claimed without a scrape");
    const input = decisionInput(healthyWorld());
    input.observations.authKey = { secret: input.observations.authKey.secret, error: "rotation failed" };
    assert.deepEqual(
      decideEgress(input).metrics.authKeyExpiresAt,
      KEY_EXPIRES,
      "an expired kept key still exports its expiry",
    );
  });

  it("the decision depends only on its input (same input, same output)", () => {
    assert.deepStrictEqual(decide(healthyWorld()), decide(healthyWorld()));
    assert.equal(config.images.agent, "registry.example/tailnet-operator:1.0.0");
    assert.equal(egressParent().metadata.uid, UID);
  });
});
