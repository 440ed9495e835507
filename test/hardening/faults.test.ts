/**
 * The fault matrix over the world with every real kind (world.ts): each Headscale fault × each kind
 * gives the reasons in the table below, every hook still answers 200, no child is dropped, nothing is
 * written to Headscale, and clearing the fault brings every object back to Ready. Then the write
 * guards on a healthy server: an empty render, duplicate users, DryRun, file mode and an unchanged
 * policy never PUT (DryRun approves no route either).
 *
 * The Headscale client timeout is 500 ms (views built by the world): `headscale.timeoutSeconds` cannot
 * go below 1 s, and a "timeout" or "slow" fault costs one timeout per read per sync.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import type { FaultSpec } from "../fakes/headscale/index.js";
import { CERT_NAMES, READY, type Reasons, toReady, type World, type WorldOptions, world } from "./world.js";

const TIMEOUT_MS = 500;

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({
    names: CERT_NAMES,
    notBefore: new Date("2026-11-01T00:00:00Z"),
    notAfter: new Date("2027-01-01T00:00:00Z"),
  });
});
after(() => pki.cleanup());

/**
 * What each kind reports while Headscale cannot be read at all, whatever the fault: nothing is
 * guessed True, agent-side conditions keep what the agents report, Ready names the first blocker.
 */
const NOT_OBSERVED: Reasons = {
  Tailnet: {
    ...READY.Tailnet,
    HeadscaleCompatible: "CannotVerify",
    PolicyMode: "CannotVerify",
    UsersUnique: "CannotVerify",
    PolicyRendered: "CannotVerify",
    PolicyApplied: "ApplyFailed",
    SharedPolicy: "CannotVerify",
  },
  TailnetEgress: {
    ...READY.TailnetEgress,
    TagKnown: "Unknown",
    Registered: "Unknown",
    NodeIdentity: "NotObserved",
    Ready: "TagUnknown",
  },
  TailnetIngress: {
    ...READY.TailnetIngress,
    TagKnown: "Unknown",
    Registered: "Unknown",
    NodeIdentity: "NotObserved",
    Ready: "TagUnknown",
  },
  TailnetSite: {
    ...READY.TailnetSite,
    UnmanagedOverlap: "NotObserved",
    Advertised: "NotObserved",
    Approved: "NotObserved",
    Ready: "NotObserved",
  },
  TailnetGateway: {
    ...READY.TailnetGateway,
    Registered: "NotObserved",
    RoutesInSync: "NotObserved",
    StaleNodes: "NotObserved",
    NodeIdentity: "NotObserved",
    Ready: "NotObserved",
  },
};

interface FaultRow {
  fault: string;
  spec: FaultSpec;
  /** The Tailnet's verdict on the connection and the key (reasons page, ApiReachable/ApiKeyValid). */
  apiReachable: string;
  apiKeyValid: string;
  /** How the client names the failure after "Headscale GET <path>: ". */
  says: string;
}

const FAULTS: FaultRow[] = [
  {
    fault: "refused",
    spec: { kind: "refused" },
    apiReachable: "Unreachable",
    apiKeyValid: "Error",
    says: "connection refused",
  },
  {
    fault: "reset",
    spec: { kind: "reset" },
    apiReachable: "Unreachable",
    apiKeyValid: "Error",
    says: "connection reset",
  },
  {
    fault: "timeout",
    spec: { kind: "timeout" },
    apiReachable: "Unreachable",
    apiKeyValid: "Error",
    says: `timed out after ${TIMEOUT_MS}ms`,
  },
  // Headscale itself answering 500 on /api/v1/health is its database check failing.
  {
    fault: "HTTP 500",
    spec: { kind: "status", status: 500 },
    apiReachable: "Unhealthy",
    apiKeyValid: "Error",
    says: "500 fault injected: 500",
  },
  // 502/503/504 come from a proxy in front: Headscale itself was not reached.
  {
    fault: "HTTP 503",
    spec: { kind: "status", status: 503 },
    apiReachable: "Unreachable",
    apiKeyValid: "Error",
    says: "503 fault injected: 503",
  },
  // Headscale answered, so it is reachable; it refused the key.
  {
    fault: "401",
    spec: { kind: "unauthorized" },
    apiReachable: "Reachable",
    apiKeyValid: "Rejected",
    says: "401 Unauthorized",
  },
  // Something answered 200 with a body that is not Headscale's: answering but not healthy.
  {
    fault: "malformed JSON",
    spec: { kind: "malformed" },
    apiReachable: "Unhealthy",
    apiKeyValid: "Error",
    says: "invalid JSON in response",
  },
  {
    fault: "slow",
    spec: { kind: "slow", delayMs: TIMEOUT_MS * 3 },
    apiReachable: "Unreachable",
    apiKeyValid: "Error",
    says: `timed out after ${TIMEOUT_MS}ms`,
  },
];

const expected = (row: FaultRow): Reasons => ({
  ...NOT_OBSERVED,
  Tailnet: { ...NOT_OBSERVED.Tailnet, ApiReachable: row.apiReachable, ApiKeyValid: row.apiKeyValid },
});

/** Every child seen before is still there, unchanged. */
function assertChildrenKept(w: World, before: Map<string, string[]>, what: string) {
  const now = w.children();
  for (const [kind, list] of before) {
    const kept = new Set(now.get(kind));
    for (const child of list)
      assert.ok(kept.has(child), `${what}: a child of ${kind} was dropped or changed: ${child}`);
  }
}

// One world per fault, run side by side: a row's failure cannot leak into the next, and the rows
// that wait for timeouts overlap.
describe("fault matrix: every Headscale fault × every kind", { concurrency: true }, () => {
  for (const row of FAULTS) {
    it(`${row.fault}: the right reasons, 200 answers, no child dropped, no write; recovery to all Ready`, async (t) => {
      const w = await world(t, { cert, timeoutMs: TIMEOUT_MS });
      await toReady(w);
      assert.deepEqual(w.reasons(), READY);
      const children = w.children();
      const writes = w.fake.writes().length;
      const calls = w.mc.calls.length;

      await w.fake.fault(row.spec);
      await w.settle();
      assert.deepEqual(w.mc.errors, []);
      assert.ok(
        w.mc.calls.slice(calls).every((c) => c.code === 200),
        "every hook answered 200",
      );
      assert.deepEqual(w.reasons(), expected(row));
      const msg = (kind: string, name: string, type: string, ns?: string) => w.condition(kind, name, type, ns)?.message;
      assert.equal(
        msg("TailnetEgress", "db", "TagKnown", "shop"),
        `the live policy could not be read: Headscale GET /api/v1/policy: ${row.says}`,
      );
      assert.equal(
        msg("TailnetIngress", "grafana", "Registered", "monitoring"),
        `Headscale nodes could not be listed: Headscale GET /api/v1/node: ${row.says}`,
      );
      assert.equal(
        msg("TailnetSite", "lan", "Advertised", "net"),
        `routes not observed: Headscale GET /api/v1/node: ${row.says}`,
      );
      assert.equal(
        msg("TailnetGateway", "gw", "RoutesInSync", "infra"),
        `cannot verify route approval: Headscale GET /api/v1/node: ${row.says}`,
      );
      assert.equal(msg("Tailnet", "home", "UsersUnique"), `cannot list users: Headscale GET /api/v1/user: ${row.says}`);
      assertChildrenKept(w, children, row.fault);
      assert.equal(w.fake.writes().length, writes, "nothing written to Headscale");

      await w.fake.clearFaults();
      await w.settle();
      assert.deepEqual(w.reasons(), READY, "recovered");
      assert.deepEqual(w.mc.errors, []);
      assertChildrenKept(w, children, `${row.fault} recovered`);
      assert.equal(w.fake.writes().length, writes, "recovery writes nothing (nothing changed)");
      assert.equal(w.policyPuts(), 1, "the only PUT is the first one");
    });
  }
});

interface GuardRow {
  guard: string;
  opts: WorldOptions;
  /** Changes to a fresh world before the first sync. */
  setup?: (w: World) => void;
  want: Record<string, string>;
  /** Also forbidden besides PUT /api/v1/policy. */
  noApprovals?: boolean;
  /** Messages that must read exactly so. */
  messages?: { kind: string; name: string; ns: string; type: string; message: string }[];
}

const GUARDS: GuardRow[] = [
  {
    guard: "empty render (no acls, no grants)",
    opts: {
      basePolicy: '{ "groups": { "group:eng": ["alice@"] } }',
      specs: { tailnet: { allowedEgressTargets: [] }, ingress: { allowFrom: [] }, site: { allowFrom: [] } },
    },
    want: { PolicyRendered: "PolicyEmpty", PolicyApplied: "PolicyRejected" },
  },
  {
    guard: "duplicate users",
    opts: {},
    setup: (w) => {
      w.fake.addUser({ name: "alice" });
      w.fake.addUser({ name: "alice", provider: "oidc" });
    },
    want: { UsersUnique: "Duplicate", PolicyApplied: "PolicyRejected" },
  },
  { guard: "DryRun", opts: { mode: "DryRun" }, want: { PolicyApplied: "DryRun" }, noApprovals: true },
  {
    guard: "file mode",
    opts: { policyMode: "file" },
    want: { PolicyMode: "File", HeadscaleCompatible: "Incompatible", PolicyApplied: "PolicyModeFile" },
    // An incompatible server is never driven: neither the site nor the gateway approves routes on it.
    noApprovals: true,
    messages: [
      {
        kind: "TailnetGateway",
        name: "gw",
        ns: "infra",
        type: "RoutesInSync",
        message:
          'Tailnet home reports HeadscaleCompatible=False: the operator does not write to this server; not approved on node 5 "cluster-gw": 10.96.0.0/12',
      },
      {
        kind: "TailnetSite",
        name: "lan",
        ns: "net",
        type: "Approved",
        message:
          "advertised but not approved: 192.168.10.0/24 on router-1; Tailnet home reports HeadscaleCompatible=False: the operator does not write to this server",
      },
    ],
  },
];

describe("write guards on a healthy server", () => {
  for (const row of GUARDS) {
    it(`${row.guard}: no PUT${row.noApprovals ? ", no approve_routes" : ""}`, async (t) => {
      const w = await world(t, { cert, ...row.opts });
      row.setup?.(w);
      await w.settle();
      // The nodes register with whatever keys were minted, so route approvals would be due now.
      for (const ns of ["shop", "monitoring", "infra"]) assert.ok(w.keySecret(ns), `a key Secret in ${ns}`);
      w.register();
      await w.settle();
      assert.deepEqual(w.mc.errors, []);
      const tailnet = w.reasons().Tailnet;
      assert.deepEqual(Object.fromEntries(Object.keys(row.want).map((k) => [k, tailnet[k]])), row.want, row.guard);
      assert.equal(w.policyPuts(), 0, `${row.guard}: no PUT /api/v1/policy`);
      for (const m of row.messages ?? []) assert.equal(w.condition(m.kind, m.name, m.type, m.ns)?.message, m.message);
      if (row.noApprovals) {
        assert.equal(w.fake.count("POST", /\/approve_routes$/), 0, `${row.guard}: no approve_routes`);
        assert.deepEqual(w.router.approvedRoutes, []);
        assert.equal(w.reasons().TailnetSite.Approved, "NotApproved");
        assert.equal(w.reasons().TailnetGateway.RoutesInSync, "NotApproved");
      }
    });
  }

  it("unchanged policy: an equivalent live text and a Tailnet without memory never PUT", async (t) => {
    const w = await world(t, { cert });
    await toReady(w);
    assert.equal(w.policyPuts(), 1);
    // Same policy, edited by hand: a comment, other key order, other indentation → same hash.
    const live = w.livePolicy();
    const reordered = Object.fromEntries(Object.entries(live).reverse());
    w.fake.setPolicy(`// formatted by hand\n${JSON.stringify(reordered, null, 4)}\n`);
    await w.settle();
    assert.equal(w.reasons().Tailnet.PolicyApplied, "InSync");
    // An operator that lost its status (a restored backup): the live policy is the render → no write.
    w.parent("Tailnet", "home").status = undefined;
    await w.settle();
    assert.deepEqual(w.reasons(), READY);
    assert.equal(w.policyPuts(), 1, "no PUT for an unchanged policy");
    assert.equal(w.events.events.filter((e) => e.reason === "PolicyDriftOverwritten").length, 0);
    assert.deepEqual(w.mc.errors, []);
  });
});
