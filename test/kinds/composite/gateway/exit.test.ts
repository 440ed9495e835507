/**
 * TailnetGateway as an exit node (spec.exitNode): the ExitNode condition per node, the approval of the exit
 * pair (never in DryRun, never on an unverified node, never withdrawn), the pod's TS_ROUTES (the pair only
 * when the Tailnet's tenancy admits it), and a default route in spec.routes refused as InvalidSpec.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isRecord, type K8sObject, type ObjectMaps } from "../../../../src/k8s/objects.js";
import { advertisedRoutes, advertisesExit, exitNodeState } from "../../../../src/kinds/composite/gateway/exit.js";
import { gatewaySpecProblem, readGatewaySpec } from "../../../../src/kinds/composite/gateway/spec.js";
import { readTenancy } from "../../../../src/kinds/shared/tenancy.js";
import { exitHealthy, exitRows, PAIR } from "./exit-scenarios.js";
import { gateway, hsNode, liveStatefulSet, ROUTE, renderInput } from "./fixtures.js";
import { run } from "./scenarios.js";

/** TS_ROUTES of replica 0's rendered StatefulSet among the children. */
function tsRoutes(children: readonly K8sObject[]): string | undefined {
  const d = children.find((c) => c.kind === "StatefulSet");
  const template = isRecord(d?.spec) ? d.spec.template : undefined;
  const pod = isRecord(template) && isRecord(template.spec) ? template.spec : {};
  const ts = (Array.isArray(pod.containers) ? pod.containers : []).find((c) => isRecord(c) && c.name === "tailscale");
  const env = isRecord(ts) && Array.isArray(ts.env) ? ts.env : [];
  const e = env.find((x) => isRecord(x) && x.name === "TS_ROUTES");
  return isRecord(e) && typeof e.value === "string" ? e.value : undefined;
}

describe("decideGateway: exit node rows", () => {
  for (const row of exitRows) {
    it(row.name, () => {
      const { by } = run(row.input, row.outcome);
      const got = Object.fromEntries(Object.keys(row.expect).map((t) => [t, by[t]?.reason]));
      assert.deepEqual(got, row.expect);
    });
  }
});

describe("exit node: messages, writes and the pod", () => {
  const row = (name: string) => {
    const r = exitRows.find((x) => x.name.startsWith(name));
    if (!r) throw new Error(`no row ${name}`);
    return r;
  };

  it("served: the message names the node and who may use it; nothing to write", () => {
    const { by, decision } = run(exitHealthy());
    assert.equal(
      by.ExitNode.message,
      '1 of 1 node is an exit node: node 12 "cluster-gw" serves 0.0.0.0/0, ::/0; usable from group:eng (autogroup:internet)',
    );
    assert.equal(decision.actions.approveExit, undefined);
    assert.equal(tsRoutes(decision.children), `${ROUTE},0.0.0.0/0,::/0`);
  });

  it("advertised but unapproved: one approval of the pair on the verified node", () => {
    const { by, decision } = run(row("exit node: advertised, not approved").input);
    assert.deepEqual(decision.actions.approveExit, [{ nodeId: "12", node: 'node 12 "cluster-gw"', add: PAIR }]);
    assert.match(by.ExitNode.message, /approved 0\.0\.0\.0\/0, ::\/0 on node 12/);
    assert.equal(decision.actions.approve, undefined, "the subnet route is approved already");
  });

  it("DryRun and an unverified node: no approval, the message says why", () => {
    const dry = run(row("exit node in DryRun").input);
    assert.equal(dry.decision.actions.approveExit, undefined);
    assert.match(
      dry.by.ExitNode.message,
      /not approving 0\.0\.0\.0\/0, ::\/0 on node 12 "cluster-gw" \(Tailnet home is in DryRun\)/,
    );
    const rogue = hsNode({
      id: "13",
      name: "rogue",
      givenName: "rogue",
      keyId: "9",
      createdAt: "2026-11-29T09:40:00Z",
    });
    const blocked = exitHealthy({ approvedRoutes: [ROUTE] });
    const nodes = blocked.headscale.nodes.ok ? blocked.headscale.nodes.value : [];
    const input = {
      ...blocked,
      headscale: { ...blocked.headscale, nodes: { ok: true as const, value: [...nodes, rogue] } },
    };
    const { by, decision } = run(input);
    assert.equal(by.Registered.reason, "FreshBlocked");
    assert.equal(decision.actions.approveExit, undefined);
    assert.match(by.ExitNode.message, /while Registered is not FreshRuntimeReady/);
  });

  it("a key minted in this sync holds the approval for the next sync (in 5 s)", () => {
    const { by, decision } = run(row("exit node: advertised, not approved").input, { deleted: [], minted: "8" });
    assert.equal(by.ExitNode.reason, "NotApproved");
    assert.match(by.ExitNode.message, /waits for the next sync: bootstrap key 8 was minted in this one/);
    assert.equal(decision.resyncAfterSeconds, 5);
  });

  it("refused by the tenancy: the pod advertises no exit routes, nothing is approved, Ready names the refusal", () => {
    const { by, decision } = run(row("exit node refused").input);
    assert.equal(tsRoutes(decision.children), ROUTE);
    assert.equal(decision.actions.approveExit, undefined);
    assert.equal(by.Ready.status, "False");
    assert.match(by.Ready.message, /spec\.tenancy\.exitNodes/);
  });

  it("a failed observation never withdraws: Headscale unread or the namespace unseen keeps the pod's exit routes", () => {
    const unread = run(row("exit node: Headscale's nodes not read").input);
    assert.equal(tsRoutes(unread.decision.children), `${ROUTE},0.0.0.0/0,::/0`);
    assert.equal(unread.decision.actions.approveExit, undefined);
    const unseen = run(row("exit node: the namespace's labels not observed").input);
    assert.equal(tsRoutes(unseen.decision.children), `${ROUTE},0.0.0.0/0,::/0`);
    assert.equal(unseen.decision.actions.approveExit, undefined);
    assert.deepEqual(advertisedRoutes([ROUTE], { state: "unknown", message: "", keep: false }), [ROUTE]);
  });

  it("not requested: ExitNode=False/NotRequested never blocks Ready, and no exit route is advertised", () => {
    const { by, decision } = run(exitHealthy({}, {}, gateway()));
    assert.deepEqual(
      [by.ExitNode.status, by.ExitNode.reason, by.Ready.reason],
      ["False", "NotRequested", "FreshRuntimeReady"],
    );
    assert.equal(tsRoutes(decision.children), ROUTE);
    assert.equal(advertisesExit(decision.children.find((c) => c.kind === "StatefulSet")), false);
  });

  it("exitNodeState: the tenancy's verdict, and what a missing Namespace keeps", () => {
    const parent = gateway({ exitNode: { allowFrom: ["group:eng"] } });
    const spec = readGatewaySpec(parent);
    const selector = readTenancy({ tenancy: { exitNodes: { namespaceSelector: { matchLabels: { exit: "yes" } } } } });
    const ns = (labels: Record<string, string>): ObjectMaps => ({
      "Namespace.v1": { infra: { apiVersion: "v1", kind: "Namespace", metadata: { name: "infra", labels } } },
    });
    const live = liveStatefulSet(renderInput(parent));
    assert.deepEqual(exitNodeState(spec, parent, selector, ns({ exit: "yes" }), undefined), {
      state: "allowed",
      allowFrom: ["group:eng"],
    });
    assert.equal(exitNodeState(spec, parent, selector, ns({}), live).state, "refused");
    // unset spec.tenancy.exitNodes refuses whatever the labels: no need to see them
    assert.equal(exitNodeState(spec, parent, readTenancy({}), {}, live).state, "refused");
    assert.deepEqual(exitNodeState(spec, parent, selector, {}, live), {
      state: "unknown",
      message: "the labels of namespace infra are not observed (the Tailnet's spec.tenancy.exitNodes needs them)",
      keep: true,
    });
    const without = liveStatefulSet(renderInput(gateway()));
    assert.equal((exitNodeState(spec, parent, selector, {}, without) as { keep: boolean }).keep, false);
    assert.deepEqual(exitNodeState(readGatewaySpec(gateway()), gateway(), selector, {}, live), { state: "off" });
  });

  it("a default route in spec.routes is InvalidSpec, pointing at spec.exitNode", () => {
    for (const routes of [["0.0.0.0/0", "::/0"], [ROUTE, "::/0"], ["0.0.0.0/0"]]) {
      assert.match(gatewaySpecProblem(gateway({ routes })) ?? "", /is an exit route; set spec\.exitNode/);
    }
    assert.equal(gatewaySpecProblem(gateway({ routes: [ROUTE], exitNode: {} })), undefined);
  });
});
