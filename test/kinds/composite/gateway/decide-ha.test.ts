/**
 * A replicated TailnetGateway (spec.replicas > 1) decided: every current node gets its routes approved (one
 * approve_routes each), Registered/Ready say "N of M nodes", status.nodes lists the current nodes, a
 * PodDisruptionBudget (maxUnavailable 1) and N pods; the key is reusable; stale cleanup keeps the newest N.
 * The table rows are in scenarios.ts (decide.test.ts runs them and checks the reason table's coverage).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isRecord } from "../../../../src/k8s/objects.js";
import { planGatewayCleanup } from "../../../../src/kinds/composite/gateway/finalize.js";
import { planGateway } from "../../../../src/kinds/composite/gateway/plan.js";
import { gateway, haHealthy, haNode, hsKey, hsNode, KEY_ID, keySecret, ROUTE, TAG } from "./fixtures.js";
import { run, scenario } from "./scenarios.js";

describe("decideGateway with replicas > 1", () => {
  it("approves the route on every current node that lacks it, in sync while one node has it", () => {
    const { decision, by } = run(
      scenario("replicas 3: 2 of 3 nodes registered, the newer one's route approved in this sync"),
    );
    assert.deepEqual(decision.actions.approve, { nodeId: "13", node: 'node 13 "cluster-gw-1"', add: [ROUTE] });
    assert.equal(decision.actions.moreApprovals, undefined);
    assert.equal(
      by.RoutesInSync.message,
      `2 of 2 nodes have ${ROUTE} approved: node 12 "cluster-gw" approved; approved ${ROUTE} on node 13 "cluster-gw-1"`,
    );
    assert.equal(
      by.Ready.message,
      `2 of 3 nodes registered (2 online: node 12 "cluster-gw", node 13 "cluster-gw-1") with bootstrap key ${KEY_ID} as ${TAG}; bootstrap key and pod template verified`,
    );
  });

  it("one approve_routes per node: the first is `approve`, the others `moreApprovals`", () => {
    const input = haHealthy(3, [haNode(0, { approvedRoutes: [] }), haNode(1, { approvedRoutes: [] }), haNode(2)]);
    const { decision, by } = run(input);
    assert.deepEqual(decision.actions.approve, { nodeId: "12", node: 'node 12 "cluster-gw"', add: [ROUTE] });
    assert.deepEqual(decision.actions.moreApprovals, [{ nodeId: "13", node: 'node 13 "cluster-gw-1"', add: [ROUTE] }]);
    assert.equal(by.RoutesInSync.status, "True");
    // a failed approval is named per node
    const failed = run(input, { deleted: [], approve: { ok: false, error: 'node 13 "cluster-gw-1": 500 boom' } }).by;
    assert.deepEqual(
      [failed.RoutesInSync.status, failed.RoutesInSync.reason, failed.RoutesInSync.message],
      ["False", "NotApproved", 'approving routes failed on node 13 "cluster-gw-1": 500 boom'],
    );
  });

  it("DryRun: nothing approved, the message names every node", () => {
    const { decision, by } = run(scenario("replicas 2 in DryRun: no node has its route approved"));
    assert.equal(decision.actions.approve, undefined);
    assert.equal(
      by.RoutesInSync.message,
      `0 of 2 nodes have ${ROUTE} approved: not approving ${ROUTE} on node 12 "cluster-gw": Tailnet home is in DryRun; not approving ${ROUTE} on node 13 "cluster-gw-1": Tailnet home is in DryRun`,
    );
  });

  it("a node that does not advertise the route yet does not count; one that does keeps Ready", () => {
    const { by } = run(haHealthy(2, [haNode(0), haNode(1, { availableRoutes: [], approvedRoutes: [] })]));
    assert.equal(by.RoutesInSync.status, "True");
    assert.match(
      by.RoutesInSync.message,
      /^1 of 2 nodes have .*node 13 "cluster-gw-1" \(does not advertise 10\.96\.0\.0\/12 yet\)$/,
    );
    assert.equal(by.Ready.status, "True");
  });

  it("status.nodes lists the current nodes (id, name, key, online); status.node is the newest", () => {
    const { decision } = run(haHealthy(2, [haNode(0), haNode(1, { online: false })]));
    assert.deepEqual(
      decision.fields.nodes?.map((n) => [n.id, n.name, n.preAuthKeyId, n.online]),
      [
        ["12", "cluster-gw", KEY_ID, true],
        ["13", "cluster-gw-1", KEY_ID, false],
      ],
    );
    assert.equal(decision.fields.node?.id, "13");
  });

  it("keeps the newest N nodes; an older one is stale only once offline", () => {
    const gone = run(scenario("replicas 2: an offline node beyond the newest two is stale and deleted"));
    assert.deepEqual(gone.decision.actions.deleteNodes, [{ id: "12", node: 'node 12 "cluster-gw"' }]);
    const rolling = run(haHealthy(2, [haNode(0), haNode(1), haNode(2)]));
    assert.deepEqual(rolling.decision.actions.deleteNodes, []);
    assert.equal(
      rolling.by.StaleNodes.message,
      'only the current nodes: node 13 "cluster-gw-1", node 14 "cluster-gw-2"',
    );
  });

  it("children: N pods and a PodDisruptionBudget of maxUnavailable 1; none with one replica", () => {
    const { decision } = run(haHealthy(3, [haNode(0)]));
    const deployment = decision.children.find((c) => c.kind === "Deployment");
    const spec = deployment?.spec;
    assert.equal(isRecord(spec) ? spec.replicas : undefined, 3);
    const pdb = decision.children.find((c) => c.kind === "PodDisruptionBudget");
    assert.deepEqual(pdb?.spec, {
      maxUnavailable: 1,
      selector: {
        matchLabels: {
          "app.kubernetes.io/name": "tailnet-gateway",
          "tailnet.internal/owner-uid": gateway().metadata.uid,
        },
      },
    });
    assert.equal(pdb?.metadata.name, "gw-gateway");
    const single = run(
      haHealthy(1, [hsNode()], {
        headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey()] } },
      }),
    );
    assert.equal(single.decision.children.filter((c) => c.kind === "PodDisruptionBudget").length, 0);
  });

  it("a replicated gateway mints a reusable key, and replaces a single-use one at once (scale-up)", () => {
    const early = new Date("2026-11-29T09:40:00Z"); // before the key's half-life
    const input = haHealthy(2, [hsNode()], {
      now: early,
      headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [hsKey()] } },
    });
    const plan = planGateway({
      ...input,
      conn: { url: "https://hs.example.com", apiKey: "k" },
      secrets: [keySecret(input.parent)],
    });
    assert.equal(plan.key?.mint.reusable, true);
    assert.equal(plan.key?.early, "replicas");
    assert.equal(plan.key?.auth.action, "create");
    // the reusable key in use: no early rotation for a rollout (a new pod registers with the same key)
    const ha = haHealthy(2, [haNode(0), haNode(1)], { now: early });
    const steady = planGateway({
      ...ha,
      conn: { url: "https://hs.example.com", apiKey: "k" },
      secrets: [keySecret(ha.parent)],
    });
    assert.equal(steady.key?.auth.action, "reuse");
    assert.equal(steady.key?.early, undefined);
  });

  it("finalize deletes the nodes registered with a key recorded only in status.nodes", () => {
    const nodes = [haNode(0, { keyId: "5" }), haNode(1, { keyId: "5" }), haNode(2)];
    const observed = {
      reachable: true as const,
      conn: { url: "https://hs.example.com", apiKey: "k" },
      tag: TAG,
      nodes: { ok: true as const, value: nodes },
      keys: { ok: true as const, value: [hsKey({ reusable: true })] },
      secretKeyIds: [KEY_ID],
      now: new Date("2026-11-29T10:00:00Z"),
    };
    const ids = (p: ReturnType<typeof planGatewayCleanup>) =>
      "deleteNodes" in p ? p.deleteNodes.map((d) => d.id) : [];
    assert.deepEqual(ids(planGatewayCleanup(observed)), ["14"]);
    assert.deepEqual(ids(planGatewayCleanup({ ...observed, recordedKeyIds: ["5"] })), ["12", "13", "14"]);
  });
});
