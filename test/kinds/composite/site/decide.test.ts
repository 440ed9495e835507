import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { conditionsOf } from "../../../../src/conditions/table.js";
import { SITE_REASONS } from "../../../../src/conditions/tables/site.js";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { ApprovalOutcome } from "../../../../src/kinds/composite/site/act.js";
import { decideSite, type SiteDecideInput, type SiteDecision } from "../../../../src/kinds/composite/site/decide.js";
import type { SiteTailnet } from "../../../../src/kinds/composite/site/observe.js";
import { planSite } from "../../../../src/kinds/composite/site/plan.js";
import { readSiteSpec } from "../../../../src/kinds/composite/site/spec.js";
import {
  finalizeConditions,
  liveApprovers,
  planWithdrawal,
  remainingRoutes,
  type WithdrawalInput,
  waitingMessage,
} from "../../../../src/kinds/composite/site/withdraw.js";
import { tailnetSettings } from "../../../../src/kinds/shared/workload.js";
import { invalidSpecConditions } from "../../../../src/pipeline/status.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import { LEFT_OUT_MESSAGE, leftOutText } from "../../shared/left-out-fixture.js";
import { node, site, tailnet } from "./fixtures.js";

const P4 = "192.168.10.0/24";
const P6 = "fd00:1::/64";
const TAG = "tag:router-home";

const lan = (opts: Parameters<typeof site>[1] = {}) =>
  site("lan", { prefixes: [P4, P6], advertiserTags: [TAG], created: "2026-11-02T00:00:00Z", ...opts });
const router = (opts: Parameters<typeof node>[1] = {}) =>
  node("router-1", { id: "1", tags: [TAG], available: [P4, P6], approved: [P4, P6], ...opts });
const laptop = (available: string[]) => node("laptop", { id: "9", available, approved: [] });

/** The Tailnet as observe resolves it: found, with its credentials. */
const onTailnet = (t: K8sObject = tailnet()): SiteTailnet => ({ ok: true, tailnet: t, settings: tailnetSettings(t) });
/** No Tailnet of that name: Headscale is not queried. */
const noTailnet = (message = 'Tailnet "home" not found'): SiteTailnet => ({ ok: false, reason: "NoTailnet", message });
/** The Tailnet exists (its settings are known) but has not published its credentials. */
const noAPIKey = (message = "Secret tailnet-system/tailnet-home-credentials not found yet"): SiteTailnet => ({
  ok: false,
  reason: "NoAPIKey",
  message,
  settings: tailnetSettings(tailnet()),
});

interface World {
  parent?: K8sObject;
  /** Related sites; the parent alone by default. */
  sites?: K8sObject[];
  tailnet?: SiteTailnet;
  /** The node list Headscale answers (a router approved for both prefixes and an unrelated laptop by default). */
  nodes?: HsNode[];
  /** The node list read failed with this message. */
  unobserved?: string;
  outcomes?: ApprovalOutcome[];
}

/**
 * The real decide (and plan) input, as the stages build it: the spec read from the parent, Headscale queried
 * only when the Tailnet and its credentials exist.
 */
function input(w: World = {}): SiteDecideInput {
  const parent = w.parent ?? lan();
  const t = w.tailnet ?? onTailnet();
  const nodes = !t.ok
    ? undefined
    : w.unobserved !== undefined
      ? { ok: false as const, message: w.unobserved }
      : { ok: true as const, value: w.nodes ?? [router(), laptop(["10.1.0.0/16"])] };
  return {
    parent,
    spec: readSiteSpec(parent),
    sites: w.sites ?? [parent],
    tailnet: t,
    nodes,
    outcomes: w.outcomes ?? [],
  };
}

const reasons = (d: SiteDecision) => Object.fromEntries(d.conditions.map((c) => [c.type, c.reason]));
const message = (d: SiteDecision, type: string) => d.conditions.find((c) => c.type === type)?.message;
const statusOf = (d: SiteDecision, type: string) => d.conditions.find((c) => c.type === type)?.status;
const approvals = (w: World = {}) => planSite(input(w)).approvals;
const decide = (w: World = {}) => decideSite(input(w));

/** Every condition list the rows of this file produce, for the coverage check at the end. */
const produced: (readonly ConditionInput[])[] = [];

describe("decideSite: one row per reason (reasons page order)", () => {
  const rows: {
    name: string;
    input: SiteDecideInput;
    expect: { reasons: Record<string, string>; messages?: Record<string, string> };
  }[] = [
    {
      name: "the Tailnet left the site out of the policy (issue 31 item 4)",
      input: input({
        tailnet: onTailnet(
          tailnet(
            "home",
            {},
            {
              policy: {
                leftOut: [
                  {
                    kind: "TailnetSite",
                    namespace: "net",
                    name: "lan",
                    reason: "InvalidContribution",
                    message: LEFT_OUT_MESSAGE,
                  },
                ],
              },
            },
          ),
        ),
      }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "None",
          Advertised: "Advertised",
          Approved: "LeftOutOfPolicy",
          Ready: "LeftOutOfPolicy",
        },
        messages: { Approved: leftOutText(), Ready: leftOutText() },
      },
    },
    {
      name: "a prefix inside a reserved network",
      input: input({ parent: lan({ prefixes: ["10.96.10.0/24"] }) }),
      expect: {
        reasons: {
          RouteConflict: "OverlapsReserved",
          UnmanagedOverlap: "None",
          Advertised: "NotAdvertised",
          Approved: "NotApproved",
          Ready: "OverlapsReserved",
        },
        messages: {
          RouteConflict:
            "prefix 10.96.10.0/24 of TailnetSite net/lan overlaps reserved network 10.96.0.0/12 of Tailnet home",
          Ready: "prefix 10.96.10.0/24 of TailnetSite net/lan overlaps reserved network 10.96.0.0/12 of Tailnet home",
        },
      },
    },
    {
      name: "an older site claims an overlapping prefix",
      input: input({
        sites: [lan(), site("home", { prefixes: ["192.168.0.0/16"], created: "2026-11-01T00:00:00Z" })],
      }),
      expect: {
        reasons: {
          RouteConflict: "OverlapsSite",
          UnmanagedOverlap: "None",
          Advertised: "Advertised",
          Approved: "Approved",
          Ready: "OverlapsSite",
        },
        messages: {
          RouteConflict:
            "prefix 192.168.10.0/24 of TailnetSite net/lan overlaps prefix 192.168.0.0/16 of the older TailnetSite net/home",
          Ready:
            "prefix 192.168.10.0/24 of TailnetSite net/lan overlaps prefix 192.168.0.0/16 of the older TailnetSite net/home",
        },
      },
    },
    {
      name: "a laptop without the advertiser tag announces a nested route",
      input: input({ nodes: [router(), laptop(["192.168.10.0/25"])] }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "Unmanaged",
          Advertised: "Advertised",
          Approved: "Approved",
          Ready: "Ready",
        },
        messages: {
          UnmanagedOverlap:
            "node without an advertiser tag (tag:router-home) advertises an overlapping route: laptop 192.168.10.0/25 (overlaps 192.168.10.0/24)",
        },
      },
    },
    {
      name: "no router announces the prefixes",
      input: input({ nodes: [router({ available: [], approved: [] })] }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "None",
          Advertised: "NotAdvertised",
          Approved: "NotApproved",
          Ready: "NotAdvertised",
        },
        messages: {
          Advertised: "no node tagged tag:router-home advertises 192.168.10.0/24, fd00:1::/64",
          Approved: "not advertised, so not approved: 192.168.10.0/24, fd00:1::/64",
          Ready: "no node tagged tag:router-home advertises 192.168.10.0/24, fd00:1::/64",
        },
      },
    },
    {
      name: "the router announces but nothing is approved",
      input: input({ nodes: [router({ approved: [] })] }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "None",
          Advertised: "Advertised",
          Approved: "NotApproved",
          Ready: "NotApproved",
        },
        messages: { Approved: "advertised but not approved: 192.168.10.0/24, fd00:1::/64 on router-1" },
      },
    },
    {
      name: "Headscale cannot be queried",
      input: input({ unobserved: "Headscale GET /api/v1/node: connection refused" }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "NotObserved",
          Advertised: "NotObserved",
          Approved: "NotObserved",
          Ready: "NotObserved",
        },
        messages: {
          Advertised: "routes not observed: Headscale GET /api/v1/node: connection refused",
          Ready: "routes not observed: Headscale GET /api/v1/node: connection refused",
        },
      },
    },
    {
      name: "the Tailnet does not exist",
      input: input({
        tailnet: noTailnet(),
      }),
      expect: {
        reasons: {
          RouteConflict: "NoTailnet",
          UnmanagedOverlap: "NotObserved",
          Advertised: "NotObserved",
          Approved: "NotObserved",
          Ready: "NoTailnet",
        },
        messages: {
          RouteConflict: 'reservedNetworks unknown: Tailnet "home" not found',
          Ready: 'Tailnet "home" not found',
        },
      },
    },
    {
      name: "the Tailnet's credentials are not published yet",
      input: input({
        tailnet: noAPIKey(),
      }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "NotObserved",
          Advertised: "NotObserved",
          Approved: "NotObserved",
          Ready: "NoAPIKey",
        },
        messages: { Ready: "Secret tailnet-system/tailnet-home-credentials not found yet" },
      },
    },
    {
      name: "its namespace is not selected by the Tailnet's spec.tenancy.namespaceSelector",
      input: input({
        tailnet: {
          ok: false,
          reason: "NamespaceNotAllowed",
          message: "namespace net is not selected by the Tailnet's spec.tenancy.namespaceSelector",
          settings: tailnetSettings(tailnet()),
        },
      }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "NotObserved",
          Advertised: "NotObserved",
          Approved: "NotObserved",
          Ready: "NamespaceNotAllowed",
        },
      },
    },
    {
      name: "an exit-node site: its exit node announces and has approved both exit routes",
      input: input({
        parent: lan({ prefixes: ["0.0.0.0/0", "::/0"], advertiserTags: ["tag:exit"] }),
        nodes: [
          node("exit-1", {
            id: "7",
            tags: ["tag:exit"],
            available: ["0.0.0.0/0", "::/0"],
            approved: ["0.0.0.0/0", "::/0"],
          }),
          laptop(["10.96.1.0/24", "192.168.10.0/24"]),
        ],
      }),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "None",
          Advertised: "Advertised",
          Approved: "Approved",
          Ready: "Ready",
        },
        messages: {
          RouteConflict:
            "exit-node site: exit routes claim no network, so they overlap no reserved network of Tailnet home and no other TailnetSite",
          UnmanagedOverlap:
            "exit-node site: no route competes with exit routes (clients choose an exit node; subnet routes are more specific)",
          Approved: "approved: 0.0.0.0/0, ::/0 on exit-1",
        },
      },
    },
    {
      name: "all healthy",
      input: input(),
      expect: {
        reasons: {
          RouteConflict: "NoConflict",
          UnmanagedOverlap: "None",
          Advertised: "Advertised",
          Approved: "Approved",
          Ready: "Ready",
        },
        messages: {
          RouteConflict: "no prefix overlaps a reserved network of Tailnet home or an older TailnetSite",
          UnmanagedOverlap:
            "no node without an advertiser tag advertises a route overlapping 192.168.10.0/24, fd00:1::/64",
          Advertised: "advertised: 192.168.10.0/24 by router-1; fd00:1::/64 by router-1",
          Approved: "approved: 192.168.10.0/24, fd00:1::/64 on router-1",
          Ready: "every prefix is advertised and approved",
        },
      },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const d = decideSite(row.input);
      produced.push(d.conditions);
      assert.deepEqual(reasons(d), row.expect.reasons);
      for (const [type, text] of Object.entries(row.expect.messages ?? {})) assert.equal(message(d, type), text, type);
      assert.deepEqual(
        d.conditions.map((c) => c.type),
        ["RouteConflict", "UnmanagedOverlap", "Advertised", "Approved", "Ready"],
      );
    });
  }
});

describe("decideSite: Ready staircase", () => {
  it("repeats the next blocker's reason as each one is removed", () => {
    const older = site("home", { prefixes: [P4], created: "2026-11-01T00:00:00Z" });
    const steps: { name: string; input: SiteDecideInput; expect: { ready: string; status: string } }[] = [
      {
        name: "no Tailnet",
        input: input({ sites: [lan(), older], tailnet: noTailnet("x") }),
        expect: { ready: "NoTailnet", status: "False" },
      },
      {
        name: "no API key",
        input: input({ sites: [lan(), older], tailnet: noAPIKey("x") }),
        expect: { ready: "NoAPIKey", status: "False" },
      },
      {
        name: "blocked by an older site, nothing announced",
        input: input({ sites: [lan(), older], nodes: [] }),
        expect: { ready: "OverlapsSite", status: "False" },
      },
      {
        name: "unblocked, nothing announced",
        input: input({ nodes: [] }),
        expect: { ready: "NotAdvertised", status: "False" },
      },
      {
        name: "announced, not approved",
        input: input({ nodes: [router({ approved: [P4] })] }),
        expect: { ready: "NotApproved", status: "False" },
      },
      { name: "announced and approved", input: input(), expect: { ready: "Ready", status: "True" } },
    ];
    for (const step of steps) {
      const d = decideSite(step.input);
      produced.push(d.conditions);
      const ready = d.conditions.find((c) => c.type === "Ready");
      assert.equal(ready?.reason, step.expect.ready, step.name);
      assert.equal(ready?.status, step.expect.status, step.name);
    }
  });
});

describe("decideSite and planSite: exact-prefix matching", () => {
  it("matches IPv6 prefixes by canonical form and approves the route as the node spells it", () => {
    const w: World = {
      parent: lan({ prefixes: ["FD00:1:0::/64"] }),
      nodes: [router({ available: ["fd00:1::/64"], approved: [] })],
    };
    const d = decide(w);
    assert.equal(reasons(d).Advertised, "Advertised");
    assert.deepEqual(approvals(w), [{ nodeId: "1", node: "router-1", add: ["fd00:1::/64"], replays: [] }]);
    assert.deepEqual(d.fields.advertisers, [{ node: "router-1", prefixes: ["FD00:1:0::/64"], approved: false }]);
  });

  it("a nested announcement is not the prefix, and a containing approval does not approve it", () => {
    const nested = decide({ parent: lan({ prefixes: [P4] }), nodes: [router({ available: ["192.168.10.0/25"] })] });
    assert.equal(reasons(nested).Advertised, "NotAdvertised");
    assert.deepEqual(nested.fields.advertisers, []);

    const w: World = {
      parent: lan({ prefixes: [P4] }),
      nodes: [router({ available: [P4], approved: ["192.168.0.0/16"] })],
    };
    const containing = decide(w);
    assert.equal(reasons(containing).Approved, "NotApproved");
    assert.equal(message(containing, "Approved"), "advertised but not approved: 192.168.10.0/24 on router-1");
    assert.deepEqual(approvals(w), [{ nodeId: "1", node: "router-1", add: [P4], replays: [] }]);
  });

  it("a node announcing the prefix without an advertiser tag is neither an advertiser nor approved", () => {
    const w: World = { parent: lan({ prefixes: [P4] }), nodes: [node("nas", { available: [P4], approved: [P4] })] };
    const d = decide(w);
    assert.equal(reasons(d).Advertised, "NotAdvertised");
    assert.equal(reasons(d).UnmanagedOverlap, "Unmanaged");
    assert.equal(
      message(d, "UnmanagedOverlap"),
      "node without an advertiser tag (tag:router-home) advertises an overlapping route: nas 192.168.10.0/24 (overlaps 192.168.10.0/24)",
    );
    assert.deepEqual(approvals(w), []);
  });

  it("lists advertisers sorted by node name with the site prefixes each announces; partial approval is approved: false", () => {
    const d = decide({
      parent: lan({ advertiserTags: ["tag:router-b", TAG] }),
      nodes: [
        node("router-2", { id: "2", tags: ["tag:router-b"], available: [P6, "10.9.0.0/16"], approved: [P6] }),
        router({ approved: [P6] }),
        node("router-0", { id: "3", tags: [TAG], available: ["10.9.0.0/16"] }),
      ],
    });
    assert.deepEqual(d.fields.advertisers, [
      { node: "router-1", prefixes: [P4, P6], approved: false },
      { node: "router-2", prefixes: [P6], approved: true },
    ]);
    assert.equal(
      message(d, "Advertised"),
      "advertised: 192.168.10.0/24 by router-1; fd00:1::/64 by router-1, router-2",
    );
  });

  it("names several tags and several prefixes in NotAdvertised", () => {
    const d = decide({ parent: lan({ advertiserTags: ["tag:b", "tag:a"] }), nodes: [] });
    assert.equal(message(d, "Advertised"), "no node tagged tag:a or tag:b advertises 192.168.10.0/24, fd00:1::/64");
  });
});

describe("decideSite: unmanaged overlaps", () => {
  it("names every node, caps the list, and ignores exit routes and non-overlapping routes", () => {
    const nodes = [
      router(),
      node("exit", { available: ["0.0.0.0/0", "::/0"] }),
      node("far", { available: ["172.16.0.0/12"] }),
      node("a", { available: ["192.168.0.0/16"] }),
      node("b", { available: ["fd00:1::/80", "fd00:1:0:0:1::/80"] }),
      node("c", { available: ["192.168.10.7/32"] }),
      node("d", { available: ["192.168.10.0/24"] }),
      node("e", { available: ["192.168.10.128/25"] }),
    ];
    const d = decide({ nodes });
    assert.equal(
      message(d, "UnmanagedOverlap"),
      "5 nodes without an advertiser tag (tag:router-home) advertise overlapping routes: " +
        "a 192.168.0.0/16 (overlaps 192.168.10.0/24); b fd00:1::/80 (overlaps fd00:1::/64); " +
        "b fd00:1:0:0:1::/80 (overlaps fd00:1::/64); c 192.168.10.7/32 (overlaps 192.168.10.0/24); " +
        "d 192.168.10.0/24 (overlaps 192.168.10.0/24); and 1 more",
    );
    assert.equal(reasons(d).Ready, "Ready");
  });

  it("only exit routes: no overlap reported", () => {
    const d = decide({ nodes: [router(), node("exit", { available: ["0.0.0.0/0", "::/0"] })] });
    assert.equal(reasons(d).UnmanagedOverlap, "None");
  });
});

describe("planSite and decideSite: approvals", () => {
  it("approves only what is announced and missing, per node", () => {
    const w: World = {
      nodes: [
        router({ available: [P4, P6, "10.1.0.0/16"], approved: ["10.1.0.0/16", P6] }),
        node("router-2", { id: "2", tags: [TAG], available: [P4], approved: [] }),
      ],
    };
    assert.deepEqual(approvals(w), [
      { nodeId: "1", node: "router-1", add: [P4], replays: [] },
      { nodeId: "2", node: "router-2", add: [P4], replays: [] },
    ]);
    assert.equal(decide(w).resyncAfterSeconds, 30);
  });

  it("marks re-approvals of prefixes the last status recorded approved (a router re-registered as a new node)", () => {
    const parent = lan({
      status: { advertisers: [{ node: "router-1", prefixes: [P4, P6], approved: true }] },
    });
    assert.deepEqual(
      approvals({ parent, nodes: [node("router-1-1", { id: "7", tags: [TAG], available: [P4, P6], approved: [] })] }),
      [{ nodeId: "7", node: "router-1-1", add: [P4, P6], replays: [P4, P6] }],
    );
  });

  it("a last status with approved: false is no memory of approval", () => {
    const parent = lan({ status: { advertisers: [{ node: "router-1", prefixes: [P4], approved: false }] } });
    assert.deepEqual(approvals({ parent, nodes: [router({ approved: [] })] })[0].replays, []);
  });

  const withheld: { name: string; input: SiteDecideInput; expect: { message: string } }[] = [
    {
      name: "DryRun",
      input: input({
        tailnet: onTailnet(tailnet("home", { policy: { mode: "DryRun" } })),
        nodes: [router({ approved: [] })],
      }),
      expect: {
        message:
          "advertised but not approved: 192.168.10.0/24, fd00:1::/64 on router-1; Tailnet home is in DryRun (spec.policy.mode): the operator approves no routes",
      },
    },
    {
      name: "a blocked site",
      input: input({
        sites: [lan(), site("home", { prefixes: [P6], created: "2026-11-01T00:00:00Z" })],
        nodes: [router({ approved: [] })],
      }),
      expect: {
        message:
          "advertised but not approved: 192.168.10.0/24, fd00:1::/64 on router-1; the site is blocked by RouteConflict: nothing is approved for it",
      },
    },
    {
      name: "an incompatible Headscale",
      input: input({
        tailnet: onTailnet(
          tailnet(
            "home",
            {},
            { conditions: [{ type: "HeadscaleCompatible", status: "False", reason: "Incompatible" }] },
          ),
        ),
        nodes: [router({ approved: [] })],
      }),
      expect: {
        message:
          "advertised but not approved: 192.168.10.0/24, fd00:1::/64 on router-1; Tailnet home reports HeadscaleCompatible=False: the operator does not write to this server",
      },
    },
  ];
  for (const row of withheld) {
    it(`approves nothing for ${row.name}, and says why`, () => {
      const d = decideSite(row.input);
      produced.push(d.conditions);
      assert.deepEqual(planSite(row.input).approvals, []);
      assert.equal(message(d, "Approved"), row.expect.message);
      assert.equal(statusOf(d, "Approved"), "False");
    });
  }

  it("a Headscale without approvedRoutes on nodes (older than 0.26) is not observed, never guessed", () => {
    const w: World = { nodes: [router({ approved: [], shape: { hasTags: false, hasApprovedRoutes: false } })] };
    const d = decide(w);
    assert.equal(reasons(d).Approved, "NotObserved");
    assert.equal(
      message(d, "Ready"),
      "routes not observed: node objects carry no approvedRoutes (Headscale older than 0.26 is not supported)",
    );
    assert.deepEqual(approvals(w), []);
  });

  it("approves nothing when Headscale was not observed, and keeps the last advertisers", () => {
    const last = [{ node: "router-1", prefixes: [P4], approved: true }];
    const w: World = { parent: lan({ status: { advertisers: last } }), unobserved: "down" };
    const d = decide(w);
    assert.deepEqual(approvals(w), []);
    assert.deepEqual(d.fields.advertisers, last);
    assert.equal(d.resyncAfterSeconds, 30);
  });

  it("folds a successful approval back: Approved, advertisers approved, nothing left to wait for", () => {
    const d = decide({
      nodes: [router({ approved: ["10.1.0.0/16"] })],
      outcomes: [{ ok: true, nodeId: "1", node: "router-1", added: [P4, P6], approvedRoutes: ["10.1.0.0/16", P4, P6] }],
    });
    assert.equal(reasons(d).Approved, "Approved");
    assert.equal(reasons(d).Ready, "Ready");
    assert.deepEqual(d.fields.advertisers, [{ node: "router-1", prefixes: [P4, P6], approved: true }]);
    assert.equal(d.resyncAfterSeconds, undefined);
  });

  it("folds a failed approval back into NotApproved naming the operation", () => {
    const error = "Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 fault injected: 500";
    const d = decide({
      nodes: [router({ approved: [] })],
      outcomes: [{ ok: false, nodeId: "1", node: "router-1", error }],
    });
    assert.equal(
      message(d, "Approved"),
      `advertised but not approved: 192.168.10.0/24, fd00:1::/64 on router-1; approving on router-1 failed: ${error}`,
    );
    assert.equal(d.resyncAfterSeconds, 30);
  });

  it("a blocked site does not wait on Headscale (no resync); a healthy one neither", () => {
    assert.equal(decide({ parent: lan({ prefixes: ["10.96.0.0/24"] }) }).resyncAfterSeconds, undefined);
    assert.equal(decide().resyncAfterSeconds, undefined);
    assert.equal(decide({ nodes: [] }).resyncAfterSeconds, 30);
  });
});

describe("finalize: what a deletion withdraws (planWithdrawal), one row per outcome", () => {
  const DELETED = "2026-11-29T12:00:00Z";
  const SOON = new Date("2026-11-29T12:01:00Z");
  const LATE = new Date("2026-11-29T12:10:00Z");
  const gone = (opts: Parameters<typeof site>[1] = {}) => lan({ deleting: true, ...opts });
  const rtr = (approved: string[], opts: Parameters<typeof node>[1] = {}) =>
    node("router-1", { id: "1", tags: [TAG], available: approved, approved, ...opts });
  const live = (routes: Record<string, string[]> = {}, exitNode: string[] = []) => {
    const r = liveApprovers(JSON.stringify({ autoApprovers: { routes, exitNode } }));
    assert.ok(r.ok);
    return r.value;
  };
  const rows: {
    name: string;
    input: Partial<WithdrawalInput>;
    expect: { withdraw?: [string, string[]][]; waiting?: string[]; kept?: string[] };
  }[] = [
    {
      name: "nothing auto-approves the site's prefixes any more: exactly they are withdrawn",
      input: { nodes: [rtr([P4, P6, "10.50.0.0/16", "0.0.0.0/0", "::/0"])] },
      expect: { withdraw: [["router-1", [P4, P6]]] },
    },
    {
      name: "the live policy still carries the site's own entry: wait",
      input: { nodes: [rtr([P4])], live: live({ [P4]: [TAG] }), parent: gone({ prefixes: [P4] }) },
      expect: {
        waiting: [
          `${P4} on router-1 (Tailnet home has not written the policy without this site yet: it still auto-approves it through autoApprovers.routes["${P4}"] for ${TAG})`,
        ],
      },
    },
    {
      name: "the same after the wait: kept, the deletion goes on",
      input: { nodes: [rtr([P4])], live: live({ [P4]: [TAG] }), parent: gone({ prefixes: [P4] }), now: LATE },
      expect: {
        kept: [
          `${P4} on router-1 (the live policy still auto-approves it through autoApprovers.routes["${P4}"] for ${TAG} 600 s after the deletion (the same entry in the base policy, or the Tailnet cannot write))`,
        ],
      },
    },
    {
      name: "a containing routes key (a gateway, the base policy): kept",
      input: { nodes: [rtr([P4])], live: live({ "192.168.0.0/16": [TAG] }), parent: gone({ prefixes: [P4] }) },
      expect: {
        kept: [
          `${P4} on router-1 (the live policy auto-approves it through autoApprovers.routes["192.168.0.0/16"] for ${TAG})`,
        ],
      },
    },
    {
      name: "the exact key for another tag the node carries: kept",
      input: {
        nodes: [rtr([P4], { tags: [TAG, "tag:k8s-gw"] })],
        live: live({ [P4]: ["tag:k8s-gw"] }),
        parent: gone({ prefixes: [P4] }),
      },
      expect: {
        kept: [
          `${P4} on router-1 (the live policy auto-approves it through autoApprovers.routes["${P4}"] for tag:k8s-gw)`,
        ],
      },
    },
    {
      name: "another live site lists the prefix for a tag the node carries: kept",
      input: {
        nodes: [rtr([P4])],
        parent: gone({ prefixes: [P4] }),
        sites: [
          gone({ prefixes: [P4] }),
          site("lan2", { prefixes: [P4], advertiserTags: [TAG], created: "2026-11-03T00:00:00Z" }),
        ],
      },
      expect: { kept: [`${P4} on router-1 (TailnetSite net/lan2 lists it too)`] },
    },
    {
      name: "an older site also being deleted claims the node: it writes first, this one waits",
      input: {
        nodes: [rtr([P4, "192.168.20.0/24"])],
        parent: gone({ prefixes: [P4] }),
        sites: [
          gone({ prefixes: [P4] }),
          site("old", {
            prefixes: ["192.168.20.0/24"],
            advertiserTags: [TAG],
            created: "2026-10-01T00:00:00Z",
            deleting: true,
          }),
        ],
      },
      expect: {
        waiting: [
          `${P4} on router-1 (TailnetSite net/old, also being deleted, writes to this node first (one writer per node))`,
        ],
      },
    },
    {
      name: "a node without an advertiser tag, and routes spelled otherwise: only the tagged node, as it spells them",
      input: {
        nodes: [rtr(["FD00:1::/64"]), node("laptop", { id: "9", available: [P4], approved: [P4] })],
      },
      expect: { withdraw: [["router-1", ["FD00:1::/64"]]] },
    },
    {
      name: "an exit-node site withdraws the pair; a routes key of 0.0.0.0/0 does not count",
      input: {
        nodes: [rtr(["0.0.0.0/0", P4, "::/0"])],
        parent: gone({ prefixes: ["0.0.0.0/0", "::/0"] }),
        live: live({ "0.0.0.0/0": [TAG] }),
      },
      expect: { withdraw: [["router-1", ["0.0.0.0/0", "::/0"]]] },
    },
    {
      name: "an exit-node site while exitNode still lists its tag: wait, once for the pair",
      input: {
        nodes: [rtr(["0.0.0.0/0", "::/0"])],
        parent: gone({ prefixes: ["0.0.0.0/0", "::/0"] }),
        live: live({}, [TAG]),
      },
      expect: {
        waiting: [
          `0.0.0.0/0 + ::/0 on router-1 (Tailnet home has not written the policy without this site yet: it still auto-approves it through autoApprovers.exitNode for ${TAG})`,
        ],
      },
    },
    {
      name: "a default route in an invalid (mixed) site is not the site's: the exit routes stay",
      input: { nodes: [rtr(["0.0.0.0/0", P4, "::/0"])], parent: gone({ prefixes: [P4, "::/0"] }) },
      expect: { withdraw: [["router-1", [P4]]] },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const parent = row.input.parent ?? gone();
      const plan = planWithdrawal({
        parent,
        sites: row.input.sites ?? [parent],
        nodes: row.input.nodes ?? [],
        live: row.input.live ?? live(),
        now: row.input.now ?? SOON,
      });
      assert.deepEqual(
        plan.withdraw.map((w) => [w.node, w.remove]),
        row.expect.withdraw ?? [],
      );
      assert.deepEqual(
        plan.waiting.map((h) => `${h.route} on ${h.node} (${h.why})`),
        row.expect.waiting ?? [],
      );
      assert.deepEqual(
        plan.kept.map((h) => `${h.route} on ${h.node} (${h.why})`),
        row.expect.kept ?? [],
      );
    });
  }
  it(`reason Withdrawing: Ready=False while the deletion waits; the other conditions as they were (deleted at ${DELETED})`, () => {
    const prev = lan({
      deleting: true,
      status: {
        conditions: [
          { type: "RouteConflict", status: "False", reason: "NoConflict", message: "m1" },
          { type: "Approved", status: "True", reason: "Approved", message: "m2" },
          { type: "Ready", status: "True", reason: "Ready", message: "m3" },
        ],
      },
    });
    const message = waitingMessage([{ node: "router-1", route: P4, why: "because" }]);
    assert.equal(message, `withdrawing route approvals: waiting on ${P4} on router-1 (because)`);
    const waiting = finalizeConditions(prev, message);
    produced.push(waiting);
    assert.deepEqual(waiting, [
      { type: "RouteConflict", status: "False", reason: "NoConflict", message: "m1" },
      { type: "Approved", status: "True", reason: "Approved", message: "m2" },
      { type: "Ready", status: "False", reason: "Withdrawing", message },
    ]);
    assert.deepEqual(finalizeConditions(prev).at(-1), {
      type: "Ready",
      status: "True",
      reason: "Ready",
      message: "m3",
    });
  });
  it("remainingRoutes keeps every other route in the node's order; the exit pair goes together", () => {
    assert.deepEqual(remainingRoutes(["10.0.0.0/8", P4, "0.0.0.0/0", "::/0"], ["192.168.10.0/24"]), [
      "10.0.0.0/8",
      "0.0.0.0/0",
      "::/0",
    ]);
    assert.deepEqual(remainingRoutes(["0.0.0.0/0", "10.0.0.0/8", "::/0"], ["::/0"]), ["10.0.0.0/8"]);
  });
  it("liveApprovers reads HuJSON, field names case-insensitively; no policy approves nothing", () => {
    const r = liveApprovers(
      '// live\n{"AutoApprovers": {"Routes": {"10.0.0.0/8": ["tag:a"],}, "ExitNode": ["tag:e"]}}',
    );
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.routes.map((x) => [x.key, x.approvers]),
      [["10.0.0.0/8", ["tag:a"]]],
    );
    assert.deepEqual(r.value.exitNode, ["tag:e"]);
    assert.deepEqual(liveApprovers(null), { ok: true, value: { routes: [], exitNode: [] } });
  });
});

describe("planSite: one writer per node (the oldest live site claiming it)", () => {
  const LAB = "192.168.20.0/24";
  const older = site("lan", { prefixes: [P4], advertiserTags: [TAG], created: "2026-11-01T00:00:00Z" });
  const newer = site("lab", { prefixes: [LAB], advertiserTags: [TAG], created: "2026-11-02T00:00:00Z" });
  const shared = (approved: string[] = []) =>
    node("router-1", { id: "1", tags: [TAG], available: [P4, LAB], approved });
  /** `parent` among `sites`, all claiming router-1 (by default) through the same advertiser tag. */
  const claimed = (parent: K8sObject, sites: K8sObject[], nodes = [shared()]): World => ({ parent, sites, nodes });

  it("the older site approves both sites' prefixes on the shared node in one call", () => {
    const remembered = site("lab", {
      prefixes: [LAB],
      advertiserTags: [TAG],
      created: "2026-11-02T00:00:00Z",
      status: { advertisers: [{ node: "router-1", prefixes: [LAB], approved: true }] },
    });
    assert.deepEqual(approvals(claimed(older, [older, remembered])), [
      {
        nodeId: "1",
        node: "router-1",
        add: [P4, LAB],
        replays: [],
        others: [{ namespace: "net", name: "lab", replays: [LAB] }],
      },
    ]);
  });

  it("the newer site writes nothing there and says who does", () => {
    const w = claimed(newer, [older, newer]);
    const d = decide(w);
    assert.deepEqual(approvals(w), []);
    assert.equal(
      message(d, "Approved"),
      "advertised but not approved: 192.168.20.0/24 on router-1; TailnetSite net/lan approves them on router-1 (one writer per node)",
    );
    assert.equal(d.resyncAfterSeconds, 30);
  });

  it("a site being deleted that claims the node writes to it alone until it is gone", () => {
    const leaving = site("old", {
      prefixes: ["192.168.30.0/24"],
      advertiserTags: [TAG],
      created: "2026-10-01T00:00:00Z",
      deleting: true,
    });
    const w = claimed(older, [older, newer, leaving]);
    assert.deepEqual(approvals(w), []);
    assert.match(
      message(decide(w), "Approved") ?? "",
      /TailnetSite net\/old is being deleted and alone writes to router-1 until it is gone \(one writer per node\)$/,
    );
  });

  it("an older site that is blocked or has an invalid spec is no writer: the next one writes", () => {
    const blocked = site("dup", { prefixes: ["10.96.1.0/24"], advertiserTags: [TAG], created: "2026-10-01T00:00:00Z" });
    const invalid = site("bad", {
      prefixes: ["192.168.40.0/24", "192.168.40.0/25"],
      advertiserTags: [TAG],
      created: "2026-10-02T00:00:00Z",
    });
    assert.deepEqual(
      approvals(claimed(older, [blocked, invalid, older, newer])).map((a) => a.add),
      [[P4, LAB]],
    );
  });

  it("nodes the older site does not claim are the newer site's own", () => {
    const lab = site("lab", { prefixes: [LAB], advertiserTags: ["tag:router-lab"], created: "2026-11-02T00:00:00Z" });
    const labRouter = node("router-lab", { id: "2", tags: ["tag:router-lab"], available: [LAB] });
    assert.deepEqual(approvals(claimed(lab, [older, lab], [shared(), labRouter])), [
      { nodeId: "2", node: "router-lab", add: [LAB], replays: [] },
    ]);
  });
});

describe("TailnetSite reasons", () => {
  it("the rows above and the InvalidSpec answer produce exactly the (condition, reason, status) triples of SITE_REASONS", () => {
    // The module's `invalid` answers with these conditions (invalidSpecResult), the spec message on Ready.
    const invalid = invalidSpecConditions(
      lan(),
      "Ready",
      conditionsOf(SITE_REASONS).types,
      "spec.prefixes[1]: 192.168.10.0/25 overlaps spec.prefixes[0] 192.168.10.0/24",
    );
    assertCoversTable(SITE_REASONS, [...produced, invalid]);
  });
});
