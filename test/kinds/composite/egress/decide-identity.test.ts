// decideEgress with its replicas planned (issue 32): NodeIdentity, status.nodes[], the per-replica children, the
// upgrade's legacy children and the scale-down's release — all pure.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decideEgress } from "../../../../src/kinds/composite/egress/decide.js";
import type { ReplicaNodesOutcome } from "../../../../src/kinds/shared/agent-replicas.js";
import { ok } from "../../shared/fixtures.js";
import { agentNode, fact, identityInput, identityRows, record } from "./identity-rows.js";

const condition = (d: ReturnType<typeof decideEgress>, type: string) => d.conditions.find((c) => c.type === type);

describe("decideEgress: NodeIdentity", () => {
  for (const row of identityRows()) {
    it(`${row.reason}: reported, and Ready is not held back by it`, () => {
      const d = decideEgress(row.input);
      assert.equal(condition(d, "NodeIdentity")?.reason, row.reason);
      // an agent's identity verdict never gates Ready: the data plane works, the alert reports it
      assert.equal(condition(d, "Ready")?.reason, "Ready");
    });
  }

  it("status.nodes names each replica's node, sorted by replica", () => {
    const x = agentNode("9");
    const d = decideEgress(identityInput({ facts: [fact(0, "9")], agents: [x] }));
    assert.deepEqual(d.fields.nodes, [record(0, x)]);
    assert.deepEqual(condition(d, "NodeIdentity"), {
      type: "NodeIdentity",
      status: "True",
      reason: "Stable",
      message: "every replica keeps its node (0=9)",
    });
  });

  it("the node list could not be read: Unknown/NotObserved and the recorded nodes kept", () => {
    const x = agentNode("9");
    const inp = identityInput({ facts: [fact(0, "9")], agents: [x], record: [record(0, x)] });
    const failed = { ok: false as const, error: new Error("down") as never, at: new Date(0) };
    const tailnet = inp.tailnet.ok ? { ...inp.tailnet, nodes: failed } : inp.tailnet;
    const d = decideEgress({ ...inp, tailnet });
    assert.deepEqual(condition(d, "NodeIdentity"), {
      type: "NodeIdentity",
      status: "Unknown",
      reason: "NotObserved",
      message: "Headscale's node list could not be read",
    });
    assert.deepEqual(d.fields.nodes, [record(0, x)]);
  });
});

describe("decideEgress: replica children", () => {
  it("two replicas: per replica SA, Role, RoleBinding, state Secret then StatefulSet; no shared agent SA", () => {
    const d = decideEgress(identityInput({ facts: [], agents: [], replicas: 2 }));
    const names = d.children.map((c) => `${c.kind}/${c.metadata.name}`);
    for (const i of [0, 1]) {
      const r = `db-agent-${i}`;
      const at = names.indexOf(`ServiceAccount/${r}`);
      assert.deepEqual(names.slice(at, at + 5), [
        `ServiceAccount/${r}`,
        `Role/${r}`,
        `RoleBinding/${r}`,
        `Secret/${r}-state`,
        `StatefulSet/${r}`,
      ]);
    }
    assert.equal(names.includes("ServiceAccount/db-agent"), false);
    assert.equal(names.includes("Deployment/db-agent"), false);
    assert.ok(names.includes("Secret/db-authkey"));
  });

  it("upgrade: the legacy Deployment is kept until every replica is bound to an online node, then left out", () => {
    const migrating = identityInput({ facts: [fact(0)], agents: [], legacy: true });
    const kept = decideEgress(migrating).children.map((c) => `${c.kind}/${c.metadata.name}`);
    assert.ok(kept.includes("Deployment/db-agent"));
    const x = agentNode("9");
    const bound = identityInput({ facts: [fact(0, "9")], agents: [x], legacy: true });
    const dropped = decideEgress(bound).children.map((c) => `${c.kind}/${c.metadata.name}`);
    assert.equal(dropped.includes("Deployment/db-agent"), false);
  });

  it("scale 3→1: the removed replicas keep their identity children until act deleted their nodes", () => {
    const n = [agentNode("9"), agentNode("10", { online: false }), agentNode("11", { online: false })];
    const facts = [fact(0, "9"), fact(1, "10"), fact(2, "11")];
    const inp = identityInput({ facts, agents: n, replicas: 1 });
    const names = (released: Set<number>) => {
      const outcome: ReplicaNodesOutcome = {
        nodes: ok(n),
        deleted: new Set(),
        released,
        renamed: [],
        errors: [],
      };
      const tailnet = inp.tailnet.ok
        ? { ...inp.tailnet, replicas: { ...inp.tailnet.replicas, replicaNodes: outcome } }
        : inp.tailnet;
      return decideEgress({ ...inp, tailnet }).children.map((c) => `${c.kind}/${c.metadata.name}`);
    };
    const before = names(new Set());
    for (const i of [1, 2]) {
      assert.ok(before.includes(`Secret/db-agent-${i}-state`));
      assert.ok(before.includes(`Role/db-agent-${i}`));
      assert.equal(before.includes(`StatefulSet/db-agent-${i}`), false, "its StatefulSet goes first");
    }
    const after = names(new Set([1, 2]));
    for (const i of [1, 2]) {
      for (const k of ["ServiceAccount", "Role", "RoleBinding"])
        assert.equal(after.includes(`${k}/db-agent-${i}`), false);
      assert.equal(after.includes(`Secret/db-agent-${i}-state`), false);
    }
    assert.ok(after.includes("StatefulSet/db-agent-0"));
  });
});
