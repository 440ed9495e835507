/**
 * A replicated TailnetGateway (spec.replicas > 1) decided: every replica's bound node gets its routes approved (one
 * approve_routes each), Registered/Ready say "N of M replicas bound", status.nodes lists each replica's node, a
 * PodDisruptionBudget (maxUnavailable 1) over N StatefulSets of one pod; the key is reusable; stale cleanup deletes
 * only offline nodes of ours no replica holds; a scale-down deletes the removed replicas' nodes, then their children.
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
      scenario("replicas 3: 2 of 3 replicas bound, replica 1's route approved in this sync"),
    );
    assert.deepEqual(decision.actions.approve, { nodeId: "13", node: 'node 13 "cluster-gw-r1"', add: [ROUTE] });
    assert.equal(decision.actions.moreApprovals, undefined);
    assert.equal(
      by.RoutesInSync.message,
      `2 of 2 nodes have ${ROUTE} approved: node 12 "cluster-gw" approved; approved ${ROUTE} on node 13 "cluster-gw-r1"`,
    );
    assert.equal(
      by.Ready.message,
      `2 of 3 replicas bound to their nodes (2 online: node 12 "cluster-gw", node 13 "cluster-gw-r1"), registered with bootstrap key ${KEY_ID} as ${TAG}; bootstrap key, node identity and pod templates verified`,
    );
    assert.equal(by.NodeIdentity.message, "2 of 3 replicas bound to a node");
  });

  it("one approve_routes per node: the first is `approve`, the others `moreApprovals`", () => {
    const input = haHealthy(3, [haNode(0, { approvedRoutes: [] }), haNode(1, { approvedRoutes: [] }), haNode(2)]);
    const { decision, by } = run(input);
    assert.deepEqual(decision.actions.approve, { nodeId: "12", node: 'node 12 "cluster-gw"', add: [ROUTE] });
    assert.deepEqual(decision.actions.moreApprovals, [{ nodeId: "13", node: 'node 13 "cluster-gw-r1"', add: [ROUTE] }]);
    assert.equal(by.RoutesInSync.status, "True");
    // a failed approval is named per node
    const failed = run(input, { deleted: [], approve: { ok: false, error: 'node 13 "cluster-gw-r1": 500 boom' } }).by;
    assert.deepEqual(
      [failed.RoutesInSync.status, failed.RoutesInSync.reason, failed.RoutesInSync.message],
      ["False", "NotApproved", 'approving routes failed on node 13 "cluster-gw-r1": 500 boom'],
    );
  });

  it("DryRun: nothing approved, the message names every node", () => {
    const { decision, by } = run(scenario("replicas 2 in DryRun: no node has its route approved"));
    assert.equal(decision.actions.approve, undefined);
    assert.equal(
      by.RoutesInSync.message,
      `0 of 2 nodes have ${ROUTE} approved: not approving ${ROUTE} on node 12 "cluster-gw": Tailnet home is in DryRun; not approving ${ROUTE} on node 13 "cluster-gw-r1": Tailnet home is in DryRun`,
    );
  });

  it("a node that does not advertise the route yet does not count; one that does keeps Ready", () => {
    const { by } = run(haHealthy(2, [haNode(0), haNode(1, { availableRoutes: [], approvedRoutes: [] })]));
    assert.equal(by.RoutesInSync.status, "True");
    assert.match(
      by.RoutesInSync.message,
      /^1 of 2 nodes have .*node 13 "cluster-gw-r1" \(does not advertise 10\.96\.0\.0\/12 yet\)$/,
    );
    assert.equal(by.Ready.status, "True");
  });

  it("status.nodes lists each replica's node (replica, id, name, key, online); status.node is replica 0's", () => {
    const { decision } = run(haHealthy(2, [haNode(0), haNode(1, { online: false })]));
    assert.deepEqual(
      decision.fields.nodes?.map((n) => [n.replica, n.id, n.name, n.preAuthKeyId, n.online]),
      [
        [0, "12", "cluster-gw", KEY_ID, true],
        [1, "13", "cluster-gw-r1", KEY_ID, false],
      ],
    );
    assert.equal(decision.fields.node?.id, "12");
  });

  it("an offline node of ours that no replica holds is stale; an online one blocks (someone holds the key)", () => {
    const gone = run(scenario("replicas 2: an offline node of ours bound to no replica is stale and deleted"));
    assert.deepEqual(gone.decision.actions.deleteNodes, [{ id: "14", node: 'node 14 "cluster-gw-r2"' }]);
    const online = run(haHealthy(2, [haNode(0), haNode(1), haNode(2)]));
    assert.deepEqual(online.decision.actions.deleteNodes, []);
    assert.equal(online.by.Registered.reason, "FreshBlocked");
  });

  it("scale-down 2 → 1: replica 1's StatefulSet goes at once; its node, once offline, is deleted; then its children", () => {
    const two = haHealthy(2, [haNode(0), haNode(1)]);
    const one = haHealthy(1, [haNode(0), haNode(1)], {
      observed: two.observed,
      stateFacts: two.stateFacts,
      record: two.record,
    });
    const first = run(one);
    const kinds = (d: typeof first.decision) =>
      d.children.filter((c) => c.metadata.name.startsWith("gw-gateway-1")).map((c) => `${c.kind}/${c.metadata.name}`);
    assert.deepEqual(kinds(first.decision), [
      "ServiceAccount/gw-gateway-1",
      "Role/gw-gateway-1",
      "RoleBinding/gw-gateway-1",
      "Secret/gw-gateway-1-state",
    ]);
    assert.deepEqual(first.decision.actions.deleteNodes, [], "its pod still runs");
    const gone = {
      ...one,
      observed: { ...one.observed, statefulSets: one.observed.statefulSets.slice(0, 1) },
      related: { ...one.related, pods: one.related.pods.filter((p) => p.replica !== 1) },
      headscale: { ...one.headscale, nodes: { ok: true as const, value: [haNode(0), haNode(1, { online: false })] } },
    };
    gone.observed.children = gone.observed.children.filter(
      (c) => c.metadata.name !== "gw-gateway-1" || c.kind !== "StatefulSet",
    );
    const second = run(gone);
    assert.deepEqual(second.decision.actions.deleteNodes, [{ id: "13", node: 'node 13 "cluster-gw-r1"' }]);
    assert.equal(kinds(second.decision).length, 4, "kept until the delete succeeded");
    const done = run(gone, { deleted: [{ id: "13", node: 'node 13 "cluster-gw-r1"' }] });
    assert.deepEqual(kinds(done.decision), []);
  });

  it("children: N StatefulSets of one pod and a PodDisruptionBudget of maxUnavailable 1; none with one replica", () => {
    const { decision } = run(haHealthy(3, [haNode(0)]));
    const sets = decision.children.filter((c) => c.kind === "StatefulSet");
    assert.deepEqual(
      sets.map((c) => [c.metadata.name, isRecord(c.spec) ? c.spec.replicas : undefined]),
      [
        ["gw-gateway-0", 1],
        ["gw-gateway-1", 1],
        ["gw-gateway-2", 1],
      ],
    );
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

  it("the key is reusable and not ephemeral whatever the replica count; no early rotation on a scale-up", () => {
    const early = new Date("2026-11-29T09:40:00Z"); // before the key's half-life
    for (const replicas of [1, 2]) {
      const input = haHealthy(replicas, [haNode(0)], { now: early });
      const plan = planGateway({
        ...input,
        conn: { url: "https://hs.example.com", apiKey: "k" },
        secrets: [keySecret(input.parent)],
      });
      assert.deepEqual(
        [plan.key?.mint.reusable, plan.key?.mint.ephemeral, plan.key?.auth.action],
        [true, false, "reuse"],
      );
      assert.equal(plan.key?.mint.stable, "gw-gateway-authkey");
    }
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
