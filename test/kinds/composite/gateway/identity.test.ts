/**
 * The gateway's renames, pure (src/kinds/composite/gateway/identity.ts, plan.ts renameWork): written only for a verified gateway, each
 * outcome reported, and status.nodes[] carrying the name a successful rename gave.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { renameReport, withRenames } from "../../../../src/kinds/composite/gateway/identity.js";
import { type FreshVerdict, renameWork } from "../../../../src/kinds/composite/gateway/plan.js";
import type { ReplicaNodesPlan } from "../../../../src/kinds/shared/replica-nodes.js";
import { hsNode, recordOf } from "./fixtures.js";

const node = hsNode({ id: "12", givenName: "cluster-gw-1" });
const plan = (over: Partial<ReplicaNodesPlan> = {}) =>
  ({
    bindings: [],
    removed: [],
    deletes: [],
    unboundOnline: [],
    renames: [{ node, name: "cluster-gw" }],
    renameBlocked: [],
    ...over,
  }) as ReplicaNodesPlan;
const verdict = (verified: boolean, p = plan()) =>
  ({
    facts: { plan: p },
    problems: [],
    definite: false,
    unobserved: false,
    freshOk: verified,
    verified,
  }) as never as FreshVerdict;

describe("gateway renames", () => {
  it("a verified gateway writes the shared plan's renames; an unverified one none", () => {
    assert.deepEqual(renameWork(verdict(true)), [{ id: "12", from: "cluster-gw-1", name: "cluster-gw" }]);
    assert.deepEqual(renameWork(verdict(false)), []);
    assert.deepEqual(renameWork({ ...verdict(true), facts: undefined }), []);
  });

  it("reports each rename, a failure (retrying) and a name held by another node, in order", () => {
    const blocked = "replica 1: cluster-gw-r1 is held by node 40, which this object did not register";
    const v = verdict(true, plan({ renameBlocked: [blocked] }));
    assert.equal(
      renameReport(v, [
        { id: "12", from: "cluster-gw-1", name: "cluster-gw" },
        { id: "13", from: "cluster-gw-r2-1", name: "cluster-gw-r2", error: "Headscale: 500 boom" },
      ]),
      `; renamed node 12 from cluster-gw-1 to cluster-gw; renaming node 13 from cluster-gw-r2-1 to cluster-gw-r2 failed: Headscale: 500 boom (retrying); ${blocked}`,
    );
    assert.equal(renameReport(verdict(true), undefined), "");
  });

  it("status.nodes[] takes the new name only of a rename that succeeded", () => {
    const items = [recordOf(0, node), recordOf(1, hsNode({ id: "13", givenName: "cluster-gw-r1-1" }))];
    const out = withRenames(items, [
      { id: "12", from: "cluster-gw-1", name: "cluster-gw" },
      { id: "13", from: "cluster-gw-r1-1", name: "cluster-gw-r1", error: "refused" },
    ]);
    assert.deepEqual(
      out.map((n) => [n.id, n.name]),
      [
        ["12", "cluster-gw"],
        ["13", items[1].name],
      ],
    );
    assert.deepEqual(withRenames(items, undefined), items);
  });
});
