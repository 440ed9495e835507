import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { EGRESS_REASONS } from "../../../../src/conditions/tables/egress.js";
import type { HsPreAuthKey } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import {
  decideEgress,
  type EgressDecideInput,
  type EgressDecision,
} from "../../../../src/kinds/composite/egress/decide.js";
import { egressModule } from "../../../../src/kinds/composite/egress/index.js";
import { parentObject, toMaps } from "../../../fixtures/hooks.js";
import { quietDeps } from "../../../helpers/deps.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import { AT, hsNode, ok, policy } from "../../shared/fixtures.js";
import { leftOutText, tailnetLeavingOut } from "../../shared/left-out-fixture.js";
import {
  AGENT_RECORD,
  config,
  egressParent,
  failedNodes,
  failedPolicy,
  input,
  KEY_EXPIRES,
  keySecret,
  NO_API_KEY,
  NO_TAILNET,
  NODES,
  nodes,
  PEERS,
  probes,
  scraped,
  stableReplicas,
  TAG,
  tailnetRead,
  UID,
} from "./fixtures.js";
import { identityRows } from "./identity-rows.js";

// NodeIdentity has its own rows (decide-identity.test.ts): these rows plan no replicas
const reasons = (d: EgressDecision) =>
  Object.fromEntries(d.conditions.filter((c) => c.type !== "NodeIdentity").map((c) => [c.type, c.reason]));
const targetReasons = (d: EgressDecision) =>
  Object.fromEntries((d.fields.targets ?? []).map((t) => [t.name, t.reason]));
const condition = (d: EgressDecision, type: string) => d.conditions.find((c) => c.type === type);

function foreignService(name: string, extra: Partial<K8sObject["metadata"]> = {}): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "shop", uid: `svc-${name}`, ...extra },
    spec: { ports: [{ port: 80 }] },
  };
}

/** NODES without the agent's own node (nothing carries the tag). */
const agentKey = (id: string): HsPreAuthKey => ({
  user: null,
  id,
  key: `hskey-auth-${id}-***`,
  reusable: true,
  ephemeral: true,
  used: true,
  expiration: null,
  createdAt: null,
  aclTags: [],
});

const unregistered = () => nodes(NODES.filter((n) => !n.tags?.includes(TAG)));

interface Row {
  name: string;
  input: EgressDecideInput;
  expect: { reasons: Record<string, string>; targets?: Record<string, string> };
}

const HEALTHY = {
  TagKnown: "Known",
  Registered: "Registered",
  RoutesGranted: "RoutesGranted",
  TargetsReachable: "Reachable",
  ServiceConflict: "NoConflict",
  Ready: "Ready",
};
const NOT_EVALUATED = (reason: string) => ({
  TagKnown: reason,
  Registered: reason,
  RoutesGranted: reason,
  TargetsReachable: reason,
  ServiceConflict: "NoConflict",
  Ready: reason,
});

// One row per reason, in the order of the reasons page (TagKnown, Registered, RoutesGranted /
// TargetsReachable, ServiceConflict, Ready, then the per-target reasons), plus the healthy row.
const rows: Row[] = [
  { name: "all healthy", input: input(), expect: { reasons: HEALTHY, targets: { postgres: "", printer: "" } } },
  {
    name: "live policy unreadable",
    input: input({ tailnet: tailnetRead({ policy: failedPolicy() }) }),
    expect: { reasons: { ...HEALTHY, TagKnown: "Unknown", Ready: "TagUnknown" } },
  },
  {
    name: "tag not in the live policy yet",
    input: input({ tailnet: tailnetRead({ policy: ok(policy({ "tag:other": [] })) }) }),
    expect: { reasons: { ...HEALTHY, TagKnown: "PolicyPending", Ready: "TagUnknown" } },
  },
  {
    name: "no policy stored in Headscale yet",
    input: input({ tailnet: tailnetRead({ policy: ok(null) }) }),
    expect: { reasons: { ...HEALTHY, TagKnown: "PolicyPending", Ready: "TagUnknown" } },
  },
  {
    name: "no node carries the tag",
    input: input({ tailnet: tailnetRead({ nodes: unregistered() }) }),
    expect: { reasons: { ...HEALTHY, Registered: "NotRegistered", Ready: "NotRegistered" } },
  },
  {
    name: "node list unreadable (the netmap still proves the routes)",
    input: input({ tailnet: tailnetRead({ nodes: failedNodes() }) }),
    expect: {
      reasons: { ...HEALTHY, Registered: "Unknown", Ready: "Unknown" },
      targets: { postgres: "", printer: "" },
    },
  },
  {
    name: "node list unreadable and the netmap does not prove a target",
    input: input({
      tailnet: tailnetRead({
        nodes: failedNodes(),
        agents: scraped({ peers: PEERS.filter((p) => p.hostName !== "db-1") }),
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, Registered: "Unknown", RoutesGranted: "ProbeFailed", Ready: "Unknown" },
      targets: { postgres: "ProbeFailed", printer: "" },
    },
  },
  {
    name: "the Tailnet left the egress out of the policy (issue 31 item 4)",
    input: input({ related: [tailnetLeavingOut("TailnetEgress", "shop", "db")] }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "LeftOutOfPolicy", Ready: "LeftOutOfPolicy" },
      targets: { postgres: "", printer: "" },
    },
  },
  {
    name: "a target's node is not granted",
    input: input({ tailnet: tailnetRead({ agents: scraped({ peers: PEERS.filter((p) => p.hostName !== "db-1") }) }) }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
      targets: { postgres: "NoGrant", printer: "" },
    },
  },
  {
    name: "a target does not answer",
    input: input({
      tailnet: tailnetRead({
        agents: scraped({
          probes: probes({ postgres: { reachable: false, error: "dial 100.64.0.7:5432: ECONNREFUSED" } }),
        }),
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, TargetsReachable: "Unreachable", Ready: "Unreachable" },
      targets: { postgres: "Unreachable", printer: "" },
    },
  },
  {
    name: "agent not scraped",
    input: input({
      tailnet: tailnetRead({
        agents: { ok: false, message: "agent pod db-agent-0 (GET /status: ECONNREFUSED) not scraped" },
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "ProbeFailed", TargetsReachable: "ProbeFailed", Ready: "ProbeFailed" },
      targets: { postgres: "ProbeFailed", printer: "ProbeFailed" },
    },
  },
  {
    name: "target name taken by a foreign Service",
    input: input({ related: [foreignService("postgres")] }),
    expect: { reasons: { ...HEALTHY, ServiceConflict: "Conflict", Ready: "Conflict" } },
  },
  { name: "no Tailnet", input: input({ tailnet: NO_TAILNET }), expect: { reasons: NOT_EVALUATED("NoTailnet") } },
  {
    name: "no API key (credentials Secret missing)",
    input: input({ tailnet: NO_API_KEY }),
    expect: { reasons: NOT_EVALUATED("NoAPIKey") },
  },
  {
    name: "its TailnetProxyClass does not exist",
    input: input({
      tailnet: {
        ok: false,
        reason: "ProxyClassMissing",
        message: "TailnetProxyClass edge does not exist; the agent pods keep their current settings until it does",
        tag: TAG,
      },
    }),
    expect: { reasons: NOT_EVALUATED("ProxyClassMissing") },
  },
  ...(["NamespaceNotAllowed", "TagNotGranted", "TagInUse"] as const).map((reason) => ({
    name: `refused by the Tailnet's tenancy: ${reason}`,
    input: input({ tailnet: { ok: false as const, reason, message: `refused: ${reason}`, tag: TAG } }),
    expect: { reasons: NOT_EVALUATED(reason) },
  })),
  {
    name: "target NotAdvertised: no router for its subnet",
    input: input({
      tailnet: tailnetRead({
        nodes: nodes(NODES.filter((n) => n.name !== "router")),
        agents: scraped({ peers: PEERS.filter((p) => p.hostName !== "router") }),
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
      targets: { postgres: "", printer: "NotAdvertised" },
    },
  },
  {
    name: "target NotApproved: the router's route is not approved",
    input: input({
      tailnet: tailnetRead({
        nodes: nodes(NODES.map((n) => (n.name === "router" ? { ...n, approvedRoutes: [] } : n))),
        agents: scraped({ peers: PEERS.filter((p) => p.hostName !== "router") }),
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
      targets: { postgres: "", printer: "NotApproved" },
    },
  },
  {
    name: "target NoGrant: the route is approved but not in the netmap",
    input: input({
      tailnet: tailnetRead({ agents: scraped({ peers: PEERS.map((p) => ({ ...p, primaryRoutes: [] })) }) }),
    }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
      targets: { postgres: "", printer: "NoGrant" },
    },
  },
  {
    name: "target ProbeFailed: the agent does not know it yet",
    input: input({ tailnet: tailnetRead({ agents: scraped({ probes: probes({ printer: undefined }) }) }) }),
    expect: {
      reasons: { ...HEALTHY, TargetsReachable: "ProbeFailed", Ready: "ProbeFailed" },
      targets: { postgres: "", printer: "ProbeFailed" },
    },
  },
  {
    name: "target OutsideTailnet: the dial went through the pod network (routes not accepted)",
    input: input({
      tailnet: tailnetRead({ agents: scraped({ probes: probes({ printer: { reachable: true, via: "outside" } }) }) }),
    }),
    expect: {
      reasons: { ...HEALTHY, TargetsReachable: "OutsideTailnet", Ready: "OutsideTailnet" },
      targets: { postgres: "", printer: "OutsideTailnet" },
    },
  },
  {
    name: "an agent that does not report the dial path (older image): reachable as before",
    input: input({
      tailnet: tailnetRead({ agents: scraped({ probes: probes({ printer: { reachable: true, via: "unknown" } }) }) }),
    }),
    expect: { reasons: HEALTHY, targets: { postgres: "", printer: "" } },
  },
  {
    name: "target Unreachable",
    input: input({
      tailnet: tailnetRead({
        agents: scraped({
          probes: probes({ printer: { reachable: false, error: "dial 192.168.1.10:631: SOCKS5 HostUnreachable" } }),
        }),
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, TargetsReachable: "Unreachable", Ready: "Unreachable" },
      targets: { postgres: "", printer: "Unreachable" },
    },
  },

  {
    // db-1 is the agent of an ingress whose allowFrom does not name the egress's tag (node-owners.ts)
    name: "target TargetNotAllowed",
    input: input({
      related: [
        parentObject(
          "TailnetIngress",
          "db",
          { tailnetRef: { name: "home" }, hostname: "db-1", allowFrom: ["group:eng"], exposes: [] },
          { namespace: "data", status: { preAuthKeyIds: ["70"] } },
        ),
      ],
      tailnet: tailnetRead({
        nodes: ok(
          NODES.map(hsNode).map((n) =>
            n.id === "7" ? { ...n, preAuthKey: { ...agentKey("70"), aclTags: ["tag:k8s-data-db"] } } : n,
          ),
        ),
      }),
    }),
    expect: {
      reasons: { ...HEALTHY, RoutesGranted: "TargetNotAllowed", Ready: "TargetNotAllowed" },
      targets: { postgres: "TargetNotAllowed", printer: "" },
    },
  },
];

describe("decideEgress: one row per reason", () => {
  for (const r of rows) {
    it(r.name, () => {
      const d = decideEgress(r.input);
      assert.deepEqual(reasons(d), r.expect.reasons);
      if (r.expect.targets) assert.deepEqual(targetReasons(d), r.expect.targets);
    });
  }
});

// Each step removes the first blocker of the one before.
const tagless = ok(policy({}));
const unreachablePrinter = probes({
  printer: { reachable: false, error: "dial 192.168.1.10:9100: SOCKS5 HostUnreachable" },
});
const foreignPrinter = [foreignService("printer")];
const staircase: { want: string; input: EgressDecideInput }[] = [
  { want: "NoTailnet", input: input({ tailnet: NO_TAILNET, related: foreignPrinter }) },
  { want: "NoAPIKey", input: input({ tailnet: NO_API_KEY, related: foreignPrinter }) },
  {
    want: "TagUnknown",
    input: input({
      related: foreignPrinter,
      tailnet: tailnetRead({
        policy: tagless,
        nodes: unregistered(),
        agents: scraped({ peers: [], probes: unreachablePrinter }),
      }),
    }),
  },
  {
    want: "NotRegistered",
    input: input({
      related: foreignPrinter,
      tailnet: tailnetRead({ nodes: unregistered(), agents: scraped({ peers: [], probes: unreachablePrinter }) }),
    }),
  },
  {
    want: "RoutesMissing",
    input: input({
      related: foreignPrinter,
      tailnet: tailnetRead({ agents: scraped({ peers: [], probes: unreachablePrinter }) }),
    }),
  },
  {
    // the agent does not serve printer yet: its dial is unknown
    want: "ProbeFailed",
    input: input({
      related: foreignPrinter,
      tailnet: tailnetRead({ agents: scraped({ probes: probes({ printer: undefined }) }) }),
    }),
  },
  {
    want: "Unreachable",
    input: input({
      related: foreignPrinter,
      tailnet: tailnetRead({
        agents: scraped({
          probes: probes({ printer: { reachable: false, error: "dial 192.168.1.10:9100: timed out after 5s" } }),
        }),
      }),
    }),
  },
  { want: "Conflict", input: input({ related: foreignPrinter }) },
  { want: "Ready", input: input() },
];

describe("Ready staircase: each step removes the first blocker", () => {
  it("NoTailnet → NoAPIKey → TagUnknown → NotRegistered → RoutesMissing → ProbeFailed → Unreachable → Conflict → Ready", () => {
    const seen = staircase.map((s) => condition(decideEgress(s.input), "Ready"));
    assert.deepEqual(
      seen.map((c) => c?.reason),
      staircase.map((s) => s.want),
    );
    assert.deepEqual(
      seen.map((c) => c?.status),
      staircase.map((s) => (s.want === "Ready" ? "True" : "False")),
    );
  });

  it("Ready repeats the blocker's message verbatim", () => {
    const d = decideEgress(
      input({ tailnet: tailnetRead({ agents: scraped({ peers: PEERS.filter((p) => p.hostName !== "db-1") }) }) }),
    );
    const routes = condition(d, "RoutesGranted");
    const ready = condition(d, "Ready");
    assert.equal(
      routes?.message,
      "postgres NoGrant: db-1 (100.64.0.7) is not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to it",
    );
    assert.deepEqual([ready?.status, ready?.reason, ready?.message], ["False", "RoutesMissing", routes?.message]);
  });
});

describe("status fields and messages", () => {
  it("healthy: status.targets, the tag and the condition messages", () => {
    const d = decideEgress(input());
    assert.deepEqual(d.fields, {
      tag: "tag:k8s-shop-db",
      // the key in use is recorded: finalize and rollouts act only on what the egress minted
      preAuthKeyIds: ["7"],
      nodes: [AGENT_RECORD],
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
        ["NodeIdentity", "True", "every replica keeps its node (0=9)"],
        ["Ready", "True", "every target is reachable through the agent"],
      ],
    );
  });

  it("without a Tailnet: not evaluated, with the reason's message; the tag once the Tailnet is known", () => {
    const none = decideEgress(input({ tailnet: NO_TAILNET }));
    assert.deepEqual(
      none.conditions.map((c) => [c.type, c.status, c.message]),
      [
        ["TagKnown", "Unknown", 'not evaluated: Tailnet "home" not found'],
        ["Registered", "Unknown", 'not evaluated: Tailnet "home" not found'],
        ["RoutesGranted", "Unknown", 'not evaluated: Tailnet "home" not found'],
        ["TargetsReachable", "Unknown", 'not evaluated: Tailnet "home" not found'],
        ["ServiceConflict", "False", ""],
        ["NodeIdentity", "Unknown", 'not evaluated: Tailnet "home" not found'],
        ["Ready", "False", 'Tailnet "home" not found'],
      ],
    );
    assert.deepEqual(none.fields, {});
    assert.equal(none.resyncAfterSeconds, 30);
    assert.deepEqual(decideEgress(input({ tailnet: NO_API_KEY })).fields, { tag: TAG });
  });

  it("a foreign Service: the target keeps its state, gets no Service, and the condition names the Service", () => {
    const d = decideEgress(input({ related: [foreignService("postgres")] }));
    assert.equal(d.fields.targets?.[0].service, "");
    assert.equal(
      condition(d, "ServiceConflict")?.message,
      "Service shop/postgres exists and is not owned by this TailnetEgress: target postgres gets no Service",
    );
    assert.equal(d.children.filter((c) => c.kind === "Service" && c.metadata.name === "postgres").length, 0);
    const both = decideEgress(input({ related: [foreignService("postgres"), foreignService("printer")] }));
    assert.equal(
      condition(both, "ServiceConflict")?.message,
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
      const d = decideEgress(input({ related: [foreignService("postgres", meta)] }));
      assert.equal(reasons(d).ServiceConflict, conflict ? "Conflict" : "NoConflict");
    });
  }

  it("a Service among the observed children is ours even without a label", () => {
    const d = decideEgress(
      input({ related: [foreignService("postgres")], children: [keySecret(), foreignService("postgres")] }),
    );
    assert.equal(reasons(d).ServiceConflict, "NoConflict");
  });

  it("no key and Headscale refused one: Registered says so", () => {
    const refused = { error: "Headscale POST /api/v1/preauthkey: 500 fault injected: 500" };
    const d = decideEgress(input({ children: [], tailnet: tailnetRead({ nodes: unregistered(), authKey: refused }) }));
    assert.equal(
      condition(d, "Registered")?.message,
      "no Headscale node carries tag:k8s-shop-db yet; no pre-auth key yet: Headscale POST /api/v1/preauthkey: 500 fault injected: 500",
    );
    assert.equal(d.children.filter((c) => c.metadata.name === "db-authkey").length, 0);
    // never a tailscale container without its key: no StatefulSet yet (containerboot would log a login URL)
    assert.equal(d.children.filter((c) => c.kind === "StatefulSet").length, 0);
    assert.deepEqual(
      d.children.map((c) => c.kind),
      ["ConfigMap", "ServiceAccount", "Role", "RoleBinding", "Secret", "Service", "Service", "NetworkPolicy"],
      "everything else is returned",
    );
    // a StatefulSet that already runs is never dropped because a key could not be minted
    const running = decideEgress(input()).children.find((c) => c.kind === "StatefulSet");
    assert.ok(running);
    const live = { ...running, status: { readyReplicas: 1 } };
    const replicas = stableReplicas();
    replicas.observed.statefulSets.set(0, live);
    const kept = decideEgress(
      input({
        children: [live],
        tailnet: tailnetRead({ nodes: unregistered(), authKey: refused, replicas }),
      }),
    ).children.find((c) => c.kind === "StatefulSet");
    assert.deepStrictEqual(kept, running);
  });
});

describe("children and observations", () => {
  it("Headscale unreachable: the StatefulSet and the key Secret come out byte-equal", () => {
    const healthy = decideEgress(input());
    const down = decideEgress(input({ tailnet: tailnetRead({ policy: failedPolicy(), nodes: failedNodes() }) }));
    assert.deepStrictEqual(down.children, healthy.children);
  });

  it("without a Tailnet every observed child is kept as it was applied", () => {
    const applied = decideEgress(input()).children;
    const observed = applied.map((c) => ({
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
    const without = decideEgress(input({ children: observed, tailnet: NO_TAILNET }));
    assert.deepEqual(without.metrics, { authKeyExpiresAt: KEY_EXPIRES }, "the kept key's expiry is still exported");
    const byKey = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
    assert.deepStrictEqual(
      [...without.children].sort((a, b) => byKey(a).localeCompare(byKey(b))),
      [...applied].sort((a, b) => byKey(a).localeCompare(byKey(b))),
    );
  });

  it("resync: 30 s while not Ready; when Ready, the key's half-life", () => {
    assert.equal(decideEgress(input()).resyncAfterSeconds, 10 * 3600, "10:00 → rotation at 20:00");
    const down = probes({ postgres: { reachable: false, error: "x" } });
    assert.equal(
      decideEgress(input({ tailnet: tailnetRead({ agents: scraped({ probes: down }) }) })).resyncAfterSeconds,
      30,
    );
    assert.equal(decideEgress(input({ now: new Date("2026-11-29T19:59:50Z") })).resyncAfterSeconds, 10);
  });

  it("a key minted in this sync: its half-life counts from now", () => {
    const minted = keySecret(egressParent(), "8");
    const d = decideEgress(
      input({
        tailnet: tailnetRead({
          authKey: { secret: minted, keyId: "8", expiresAt: new Date(AT.getTime() + 24 * 3600_000) },
        }),
      }),
    );
    assert.equal(d.resyncAfterSeconds, 12 * 3600);
  });

  it("metric values come from the same verdicts", () => {
    const ungranted = tailnetRead({ agents: scraped({ peers: PEERS.filter((p) => p.hostName !== "db-1") }) });
    assert.deepEqual(decideEgress(input({ tailnet: ungranted })).metrics, {
      targets: [
        { name: "postgres", state: "NoGrant" },
        { name: "printer", state: "Ready" },
      ],
      routesMissing: 1,
      authKeyExpiresAt: new Date("2026-11-30T08:00:00Z"),
    });
    const unscraped = tailnetRead({ agents: { ok: false, message: "x" } });
    assert.equal(
      decideEgress(input({ tailnet: unscraped })).metrics.routesMissing,
      undefined,
      "nothing claimed without a scrape",
    );
    const failedRotation = tailnetRead({ authKey: { secret: keySecret(), error: "rotation failed" } });
    assert.deepEqual(
      decideEgress(input({ tailnet: failedRotation })).metrics.authKeyExpiresAt,
      KEY_EXPIRES,
      "an expired kept key still exports its expiry",
    );
  });

  it("the decision depends only on its input (same input, same output)", () => {
    assert.deepStrictEqual(decideEgress(input()), decideEgress(input()));
    assert.equal(config.images.agent, "registry.example/tailnet-operator:1.0.0");
    assert.equal(egressParent().metadata.uid, UID);
  });
});

describe("left out of the policy (issue 31 item 4)", () => {
  it("RoutesGranted and Ready quote the Tailnet's status.policy.leftOut entry; another object's entry is not ours", () => {
    const d = decideEgress(input({ related: [tailnetLeavingOut("TailnetEgress", "shop", "db")] }));
    const routes = d.conditions.find((c) => c.type === "RoutesGranted");
    assert.deepEqual([routes?.status, routes?.reason, routes?.message], ["False", "LeftOutOfPolicy", leftOutText()]);
    for (const other of [
      tailnetLeavingOut("TailnetEgress", "shop", "web"),
      tailnetLeavingOut("TailnetIngress", "shop", "db"),
      tailnetLeavingOut("TailnetEgress", "other", "db"),
    ]) {
      const ok = decideEgress(input({ related: [other] }));
      assert.equal(ok.conditions.find((c) => c.type === "RoutesGranted")?.reason, "RoutesGranted");
    }
  });
});

describe("the reasons table", () => {
  it("the rows, the staircase and an invalid spec produce exactly the (condition, reason, status) triples of EGRESS_REASONS", () => {
    // InvalidSpec: the module's answer for a spec the kind's specProblem refused (nothing evaluated before)
    const invalid = egressModule.invalid(
      { controller: {}, parent: egressParent(), children: toMaps([]), related: toMaps([]), finalizing: false },
      'spec.targets[1].name: duplicate name "postgres"',
      quietDeps(AT),
    );
    const invalidConditions = invalid.status.conditions as ConditionInput[];
    assert.equal(invalidConditions.find((c) => c.type === "Ready")?.reason, "InvalidSpec");
    assertCoversTable(EGRESS_REASONS, [
      ...rows.map((r) => decideEgress(r.input).conditions),
      ...staircase.map((s) => decideEgress(s.input).conditions),
      ...identityRows().map((r) => decideEgress(r.input).conditions),
      invalidConditions,
    ]);
  });
});
