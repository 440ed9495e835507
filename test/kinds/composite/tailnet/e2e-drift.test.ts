/**
 * Issue 24, defect D: Metacontroller hands the sync a parent from its informer cache, which can lag
 * behind the status the previous answer wrote. status.policy.appliedHash is then older than what
 * the operator last wrote, and judging drift by it raised false PolicyDriftOverwritten Warnings
 * (10–16 of ~90 syncs on a real cluster). Drift is judged from Headscale's stored policy itself.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ingress } from "./fixtures.js";
import { API, harness, settleStable } from "./harness.js";

const drifts = (h: Awaited<ReturnType<typeof harness>>) =>
  h.events.events.filter((e) => e.reason === "PolicyDriftOverwritten").map((e) => e.message);

describe("policy drift under a lagging parent cache", () => {
  it("renders written in consecutive syncs raise no PolicyDriftOverwritten; an admin's edit still does", async (t) => {
    const h = await harness(t, { parentCacheLag: true });
    h.mc.apply(ingress("app-0", "apps"));
    await settleStable(h);
    // one new ingress per sync: each sync writes a new render while its parent shows the status
    // written one sync earlier
    for (let i = 1; i <= 6; i++) {
      h.mc.apply(ingress(`app-${i}`, "apps"));
      const live = h.mc.get(API, "Tailnet", "home");
      if (!live) throw new Error("no Tailnet");
      await h.mc.syncParent(h.mc.cachedParent(live));
    }
    await settleStable(h);
    assert.equal(h.fake.policyWrites, 7, "every render written once");
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.deepEqual(drifts(h), [], "no false drift Warning");

    // An admin replaces the policy (headscale policy set): that is drift, detected and reported.
    h.fake.setPolicy('{"acls": [{"action": "accept", "src": ["*"], "dst": ["*:22"]}]}');
    h.advance(60_000);
    await settleStable(h);
    assert.equal(drifts(h).length, 1);
    assert.match(drifts(h)[0], /was changed outside the operator/);

    // An admin edits our text but keeps its first line: still drift.
    const ours = h.fake.state.policies.at(-1)?.text ?? "";
    h.fake.setPolicy(ours.replace('"acls": [', '"acls": [\n    {"action": "accept", "src": ["*"], "dst": ["*:23"]},'));
    h.advance(60_000);
    await settleStable(h);
    assert.equal(drifts(h).length, 2);
  });
});
